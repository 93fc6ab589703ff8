package plural

import "testing"

func TestN(t *testing.T) {
	for _, tc := range []struct {
		n           int
		one, many   string
		want, want2 string
	}{
		{0, "error", "errors", "0 errors", "0 errors"},
		{1, "error", "errors", "1 error", "1 error"},
		{2, "console error", "console errors", "2 console errors", "2 console errors"},
		{1, "distinct message", "distinct messages", "1 distinct message", "1 distinct message"},
		{-1, "step", "steps", "-1 step", "-1 step"},
	} {
		if got := N(tc.n, tc.one, tc.many); got != tc.want {
			t.Errorf("N(%d, %q, %q) = %q, want %q", tc.n, tc.one, tc.many, got, tc.want)
		}
		if got := S(tc.n, tc.one); got != tc.want2 {
			t.Errorf("S(%d, %q) = %q, want %q", tc.n, tc.one, got, tc.want2)
		}
	}
}
