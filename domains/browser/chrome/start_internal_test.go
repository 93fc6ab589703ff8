package chrome

import (
	"testing"
	"time"
)

// TestStartTimeoutFollowsLoadTime: a machine given a longer page load (a
// loaded CI machine's stretched budget) also gives Chromium longer to
// start, never less than 30 s.
func TestStartTimeoutFollowsLoadTime(t *testing.T) {
	tests := []struct {
		load, want time.Duration
	}{
		{0, 30 * time.Second}, // the default load time, 20 s
		{10 * time.Second, 30 * time.Second},
		{20 * time.Second, 30 * time.Second},
		{60 * time.Second, 90 * time.Second},
	}
	for _, tc := range tests {
		b := New(Config{Path: Disabled, MaxLoadTime: tc.load})
		if got := b.startTimeout(); got != tc.want {
			t.Errorf("MaxLoadTime %s: start timeout %s, want %s", tc.load, got, tc.want)
		}
		_ = b.Close()
	}
}
