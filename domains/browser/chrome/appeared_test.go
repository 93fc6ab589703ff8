package chrome

import (
	"slices"
	"testing"
)

func TestAppeared(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after []string
		want          []string
	}{
		{"new status", []string{"Orders", "Not saved"}, []string{"Orders", "Saved order for 1"}, []string{"Saved order for 1"}},
		{"nothing new", []string{"a", "b"}, []string{"b", "a"}, nil},
		{"a repeat counts", []string{"Deleted"}, []string{"Deleted", "Deleted"}, []string{"Deleted"}},
		{"at most five", nil, []string{"1", "2", "3", "4", "5", "6"}, []string{"1", "2", "3", "4", "5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := appeared(tc.before, tc.after); !slices.Equal(got, tc.want) {
				t.Errorf("appeared = %q, want %q", got, tc.want)
			}
		})
	}
}
