package admission

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/ratelimit"
)

// TestAuthFailures: a client's failures beyond its burst are refused
// until its budget refills, without touching another client's budget; an
// IPv6 /64 is one client; all clients together share the global budget.
func TestAuthFailures(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	a := NewAuthFailures()
	a.SetClock(func() time.Time { return now })
	a.SetGlobalLimit(ratelimit.Limit{}) // per client only
	steps := []struct {
		peer    string
		n       int  // failures
		refused bool // the last one
	}{
		{"192.0.2.1", authFailBurst, false},
		{"192.0.2.1", 1, true},
		{"192.0.2.2", authFailBurst, false},
		{"2001:db8:1:2::1", authFailBurst, false},
		{"2001:db8:1:2::ffff", 1, true}, // the same /64
		{"2001:db8:1:3::1", 1, false},
	}
	for i, st := range steps {
		var wait time.Duration
		for range st.n {
			wait = a.Failed(context.Background(), st.peer)
		}
		if (wait > 0) != st.refused {
			t.Errorf("step %d (%s): wait %v, want refused %v", i, st.peer, wait, st.refused)
		}
	}
	now = t0.Add(time.Second) // one failure's worth refilled
	if wait := a.Failed(context.Background(), "192.0.2.1"); wait != 0 {
		t.Errorf("after a refill: wait %v", wait)
	}

	g := NewAuthFailures()
	g.SetClock(func() time.Time { return t0 })
	refused := 0
	for i := range 1000 { // 100 clients, 10 each: within each one's budget
		if g.Failed(context.Background(), fmt.Sprintf("198.51.100.%d", i%100)) > 0 {
			refused++
		}
	}
	if want := 1000 - authFailGlobalBurst; refused != want {
		t.Errorf("global budget: %d of 1000 refused, want %d", refused, want)
	}
}
