package client

import (
	"testing"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// TestRetryDelay: backoff doubles per attempt up to the ceiling, never
// undercuts retry_after_ms, and jitter adds at most a quarter.
func TestRetryDelay(t *testing.T) {
	const ms = time.Millisecond
	none := func(time.Duration) time.Duration { return 0 }
	most := func(d time.Duration) time.Duration { return d / 4 }
	tests := []struct {
		name       string
		attempt    int
		retryAfter time.Duration
		jitter     func(time.Duration) time.Duration
		want       time.Duration
	}{
		{"first", 1, 0, none, 100 * ms},
		{"second doubles", 2, 0, none, 200 * ms},
		{"fourth", 4, 0, none, 800 * ms},
		{"capped", 9, 0, none, time.Second},
		{"retry_after above backoff", 1, 700 * ms, none, 700 * ms},
		{"retry_after above the ceiling", 3, 3 * time.Second, none, 3 * time.Second},
		{"backoff above retry_after", 4, 10 * ms, none, 800 * ms},
		{"jitter on top", 2, 0, most, 250 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryDelay(tc.attempt, tc.retryAfter, 100*ms, time.Second, tc.jitter); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	for range 1000 {
		if j := jitter(100 * ms); j < 0 || j > 25*ms {
			t.Fatalf("jitter %v outside [0, 25ms]", j)
		}
	}
}

// TestRetryable: exactly the codes Spec 09 section 7.1 says to retry as
// they are.
func TestRetryable(t *testing.T) {
	for _, info := range protocol.Codes() {
		want := info.Code == protocol.CodeServerNotReady || info.Code == protocol.CodeRateLimited
		if got := retryable(info.Code); got != want {
			t.Errorf("retryable(%s) = %v", info.Code, got)
		}
		if want && !info.Recoverable {
			t.Errorf("%s is retried but not recoverable", info.Code)
		}
	}
}
