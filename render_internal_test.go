package manglecp

import (
	"strconv"
	"testing"
)

// TestAppendQuoteMatchesStrconv: fact keys (and so macro_ids) are the
// same with the ASCII shortcut as with strconv.AppendQuote.
func TestAppendQuoteMatchesStrconv(t *testing.T) {
	for _, s := range []string{"", "a", "net_request", "a b", `a"b`, `a\b`, "tab\t", "é", "\xff", "\u2028", "~", "\x7f", "https://api/x?a=1&b=<2>"} {
		if got, want := string(appendQuote(nil, s)), strconv.Quote(s); got != want {
			t.Errorf("appendQuote(%q) = %s, strconv %s", s, got, want)
		}
	}
}

func FuzzAppendQuote(f *testing.F) {
	f.Add("net_request")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendQuote([]byte("x"), s)), "x"+strconv.Quote(s); got != want {
			t.Errorf("appendQuote(%q) = %s, strconv %s", s, got, want)
		}
	})
}
