package memstore

import (
	"strconv"
	"testing"
	"time"
)

// TestNonceSet: a nonce is accepted once until it expires, then again;
// expired nonces leave the set as later ones are used, oldest first,
// without a sweep over all of them.
func TestNonceSet(t *testing.T) {
	var s nonceSet
	t0 := time.Unix(1000, 0)
	steps := []struct {
		nonce string
		at    time.Duration
		ttl   time.Duration
		fresh bool
		size  int // after the step
	}{
		{"a", 0, time.Minute, true, 1},
		{"a", 30 * time.Second, time.Minute, false, 1},
		{"b", 40 * time.Second, 10 * time.Second, true, 2},
		{"c", 55 * time.Second, time.Minute, true, 2}, // b expired at 50 s and left
		{"b", 56 * time.Second, time.Minute, true, 3},
		{"a", time.Minute, time.Minute, true, 3}, // a expired at 60 s: used again, with a new expiry
		{"d", 150 * time.Second, time.Second, true, 1},
		{"a", 150 * time.Second, time.Second, true, 2},
		{"a", 150 * time.Second, time.Second, false, 2},
	}
	for i, st := range steps {
		if got := s.use(st.nonce, t0.Add(st.at), st.ttl); got != st.fresh {
			t.Errorf("step %d (%s at %s): fresh %v, want %v", i, st.nonce, st.at, got, st.fresh)
		}
		if n := s.size(); n != st.size {
			t.Errorf("step %d: %d nonces held, want %d", i, n, st.size)
		}
		if len(s.queue) < len(s.expiry) {
			t.Fatalf("step %d: the queue lost nonces", i)
		}
	}
}

// BenchmarkUseNonce measures one use with 100,000 live nonces held (it
// was O(n): every use swept the whole set).
func BenchmarkUseNonce(b *testing.B) {
	var s nonceSet
	now := time.Unix(1000, 0)
	for i := range 100_000 {
		s.use("live-"+strconv.Itoa(i), now, time.Hour)
	}
	b.ResetTimer()
	for i := range b.N {
		s.use("n-"+strconv.Itoa(i), now, time.Minute)
	}
}
