package protocol

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"
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

// temporalValues are bounds of every kind a fact's "t" can hold: the
// common ones appendTemporal writes itself, and the rest it leaves to
// json.Marshal.
var temporalValues = []any{nil, "2026-02-19T14:30:05Z", "2026-02-19T14:30:05.123+01:00", "now", "_", "", "a<b", "a&b", "é", "\x01", `"`, `\`, "\u2028",
	json.Number("1771510200000"), json.Number("0"), json.Number("-5"), json.Number("01"), json.Number("1.5"), json.Number("1e3"), json.Number(""), json.Number("-"), json.Number("x"),
	int64(5), 1.5, true, time.Date(2026, 2, 19, 14, 30, 5, 0, time.UTC), map[string]any{"_type": "int64", "value": "1"}}

// TestAppendTemporalMatchesMarshal: fact keys (and so macro_ids) are the
// same with appendTemporal as with json.Marshal, for every combination of
// bounds.
func TestAppendTemporalMatchesMarshal(t *testing.T) {
	for _, at := range temporalValues {
		for _, start := range temporalValues[:8] {
			for _, end := range temporalValues {
				tt := &Temporal{At: at, Start: start, End: end}
				want, _ := json.Marshal(tt)
				if got := appendTemporal([]byte("x"), tt); string(got) != "x"+string(want) {
					t.Fatalf("appendTemporal(%#v) = %s, json.Marshal x%s", tt, got, want)
				}
			}
		}
	}
}

func FuzzAppendTemporal(f *testing.F) {
	f.Add("2026-02-19T14:30:05Z", "1771510200000", "now", uint8(0))
	f.Fuzz(func(t *testing.T, a, b, c string, kinds uint8) {
		// Each bound is absent, a string or a json.Number, by two bits of
		// kinds.
		bound := func(s string, k uint8) any {
			switch k & 3 {
			case 1:
				return s
			case 2:
				return json.Number(s)
			}
			return nil
		}
		tt := &Temporal{At: bound(a, kinds), Start: bound(b, kinds>>2), End: bound(c, kinds>>4)}
		want, _ := json.Marshal(tt)
		if got := appendTemporal([]byte("x"), tt); string(got) != "x"+string(want) {
			t.Fatalf("appendTemporal(%#v) = %s, json.Marshal x%s", tt, got, want)
		}
	})
}
