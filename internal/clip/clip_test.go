package clip_test

import (
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/manglecp/manglecp/internal/clip"
)

func TestN(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"short kept", "abc", 3, "abc"},
		{"cut and marked", "abcdef", 3, "abc..."},
		{"two-byte rune not split", "aé", 2, "a..."},
		{"three-byte rune not split", "a€b", 3, "a..."},
		{"four-byte rune not split", "😀x", 3, "..."},
		{"zero", "abc", 0, "..."},
		{"negative", "abc", -4, "..."},
		{"empty", "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clip.N(tc.in, tc.n)
			if got != tc.want {
				t.Errorf("N(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("N cut a rune: %q", got)
			}
			if len(got) > max(tc.n, 0)+len(clip.Ellipsis) {
				t.Errorf("N(%q, %d) has %d bytes", tc.in, tc.n, len(got))
			}
		})
	}
}

func ExampleN() {
	fmt.Println(clip.N("naïve café au lait", 11))
	// Output: naïve caf...
}
