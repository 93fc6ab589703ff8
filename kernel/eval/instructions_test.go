package eval

import (
	"strings"
	"testing"
)

func TestJoinInstructions(t *testing.T) {
	long := strings.Repeat("x", maxInstructionBytes-10)
	for _, tc := range []struct {
		name string
		in   []string
		want string
	}{
		{"one", []string{"Use it."}, "Use it."},
		{"sorted and joined", []string{"Password is required.", "Email is invalid."}, "Email is invalid. Password is required."},
		{"duplicates once", []string{"Alert: x.", "Alert: x."}, "Alert: x."},
		{"bounded", []string{long, "y is next.", "z is last."}, long + " (2 more not shown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := joinInstructions(append([]string(nil), tc.in...)); got != tc.want {
				t.Errorf("joinInstructions(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
