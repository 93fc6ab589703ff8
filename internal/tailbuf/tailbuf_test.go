package tailbuf_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/internal/tailbuf"
)

func TestBufferKeepsTheTail(t *testing.T) {
	for _, tc := range []struct {
		writes []string
		want   string
	}{
		{nil, ""},
		{[]string{"abc"}, "abc"},
		{[]string{"abcdef"}, "cdef"},
		{[]string{"ab", "cd", "ef"}, "cdef"},
		{[]string{"abcdefgh", "x"}, "fghx"},
	} {
		b := tailbuf.New(4)
		for _, w := range tc.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if got := b.String(); got != tc.want {
			t.Errorf("after %q: %q, want %q", tc.writes, got, tc.want)
		}
	}
}

func ExampleBuffer() {
	b := tailbuf.New(10)
	fmt.Fprint(b, strings.Repeat("noise ", 10), "panic: x")
	fmt.Println(b.String())
	// Output: e panic: x
}
