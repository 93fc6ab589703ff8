package chrome

import (
	"context"
	"sync"
	"time"
)

// identityKey is the context key of the identity a browser call is made
// for (WithIdentity).
type identityKey struct{}

// WithIdentity returns ctx carrying the identity a call is made for: the
// page slots are shared fairly between identities (see fairSlots). Calls
// on a live session are made for its owner whatever ctx says.
func WithIdentity(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// identityOf is the identity of WithIdentity, "" when none.
func identityOf(ctx context.Context) string {
	id, _ := ctx.Value(identityKey{}).(string)
	return id
}

// fairSlots are the MaxPages page slots and the MaxQueued places to wait
// for one, shared fairly between identities: a freed slot goes to the
// waiting identity with the fewest pages running (the earliest waiter
// among equals), not to whoever queued first, and a full queue makes
// room for an identity with fewer waiters by refusing the newest waiter
// of the identity with the most. One identity's slow pages thus delay
// another's by at most the time until one of its pages ends (before: one
// identity's 8 slow screenshots pushed another's open_page from 0.8 s to
// 11 s, or to x-browser_busy every time). With one identity it is the
// plain first-come queue; it never leaves a slot idle while one waits.
type fairSlots struct {
	max, maxQueued int

	mu      sync.Mutex
	running int
	owners  map[string]int // pages running per identity
	queue   []*slotWaiter  // in arrival order
}

// slotWaiter is one call waiting for a slot. ready is closed when it is
// granted a slot or refused (refused set).
type slotWaiter struct {
	owner   string
	ready   chan struct{}
	granted bool
	refused bool
}

func newFairSlots(max, maxQueued int) *fairSlots {
	return &fairSlots{max: max, maxQueued: maxQueued, owners: map[string]int{}}
}

// errQueueFull and errQueueTimeout are take's refusals (the caller makes
// them Busy errors).
type slotRefusal int

const (
	queueFull slotRefusal = iota + 1
	queueTimeout
)

// take waits for a slot for owner: at once when one is free and nobody
// waits, else as a waiter for at most wait. It returns 0 with the slot
// taken, a refusal, or ctx's error.
func (f *fairSlots) take(ctx context.Context, owner string, wait time.Duration) (slotRefusal, error) {
	f.mu.Lock()
	if f.running < f.max && len(f.queue) == 0 {
		f.grantLocked(owner)
		f.mu.Unlock()
		return 0, nil
	}
	if len(f.queue) >= f.maxQueued && !f.makeRoomLocked(owner) {
		f.mu.Unlock()
		return queueFull, nil
	}
	w := &slotWaiter{owner: owner, ready: make(chan struct{})}
	f.queue = append(f.queue, w)
	f.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	var why slotRefusal
	select {
	case <-w.ready:
		if w.refused {
			return queueFull, nil
		}
		return 0, nil
	case <-t.C:
		why = queueTimeout
	case <-ctx.Done():
		err = ctx.Err()
	}
	f.mu.Lock()
	if w.granted { // granted meanwhile: give it back
		f.mu.Unlock()
		f.release(owner)
		return why, err
	}
	if !w.refused {
		f.removeLocked(w)
	}
	f.mu.Unlock()
	return why, err
}

// grantLocked gives owner a slot.
func (f *fairSlots) grantLocked(owner string) {
	f.running++
	f.owners[owner]++
}

// makeRoomLocked refuses the newest waiter of the identity with the most
// waiters when it has more than owner: true when a place was freed.
func (f *fairSlots) makeRoomLocked(owner string) bool {
	counts := map[string]int{}
	for _, w := range f.queue {
		counts[w.owner]++
	}
	most, n := "", 0
	for o, c := range counts {
		if c > n || (c == n && o < most) {
			most, n = o, c
		}
	}
	if n <= counts[owner]+1 {
		return false
	}
	for i := len(f.queue) - 1; i >= 0; i-- {
		if w := f.queue[i]; w.owner == most {
			f.queue = append(f.queue[:i], f.queue[i+1:]...)
			w.refused = true
			close(w.ready)
			return true
		}
	}
	return false
}

func (f *fairSlots) removeLocked(w *slotWaiter) {
	for i, q := range f.queue {
		if q == w {
			f.queue = append(f.queue[:i], f.queue[i+1:]...)
			return
		}
	}
}

// release gives owner's slot back and grants it to the waiting identity
// with the fewest pages running (the earliest waiter among equals).
func (f *fairSlots) release(owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running--
	if f.owners[owner]--; f.owners[owner] <= 0 {
		delete(f.owners, owner)
	}
	for f.running < f.max && len(f.queue) > 0 {
		best := 0
		for i, w := range f.queue {
			if f.owners[w.owner] < f.owners[f.queue[best].owner] {
				best = i
			}
		}
		w := f.queue[best]
		f.queue = append(f.queue[:best], f.queue[best+1:]...)
		f.grantLocked(w.owner)
		w.granted = true
		close(w.ready)
	}
}

// waiting is the number of calls waiting for a slot.
func (f *fairSlots) waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}
