package gateway

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/internal/words"
)

// TestEditsFor: the edits of edit_file a replace becomes, replayed as the
// filesystem server applies them (each replaces the first occurrence of
// its old text), give exactly the previewed text, also where a changed
// line also occurs inside an earlier one, with "\r\n" line endings, and
// on random texts of few letters (many repeats).
func TestEditsFor(t *testing.T) {
	check := func(t *testing.T, before, old, repl string, word bool) []fileEdit {
		t.Helper()
		at := words.Find(before, old, word)
		spans := make([]span, len(at))
		for i, j := range at {
			spans[i] = span{j, j + len(old), repl}
		}
		want := applySpans(before, spans, 0, len(before))
		edits := editsFor(before, spans)
		if got := replayEdits(before, edits); got != want {
			t.Fatalf("replayed %q, want %q (edits %q)", got, want, edits)
		}
		for _, e := range edits {
			if strings.HasSuffix(e.old, "\r") || strings.HasPrefix(e.old, "\n") && strings.Contains(before, "\r\n") {
				t.Errorf("edit %q splits a \\r\\n", e.old)
			}
		}
		return edits
	}
	for _, tc := range []struct {
		name, before, old, new string
		edits                  int
	}{
		{"lines apart", "a x\nb\nc\nd x\n", "x", "y", 2},
		{"inside an earlier line", "zx = 1\nx\ny\nx\n", "x", "q", 2},
		{"crlf", "x = 1\r\nprint(x)\r\n\r\nx\r\n", "x", "y", 2},
		{"no newline at the end", "x", "x", "y", 1},
		{"every line", "x\nx\nx", "x", "y", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := check(t, tc.before, tc.old, tc.new, true); len(got) != tc.edits {
				t.Errorf("%d edits %q, want %d", len(got), got, tc.edits)
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := rng.IntN(40); n > 0; n-- {
			b.WriteByte("ab \n"[rng.IntN(4)])
		}
		check(t, b.String(), "ab"[:1+rng.IntN(2)], "b", rng.IntN(2) == 0)
	}
}
