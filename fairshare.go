package manglecp

import (
	"context"
	"sync"
	"time"
)

// fairSlots bounds concurrent evaluations and shares them between callers,
// so that one caller's heavy requests cannot starve the others:
//
//   - a caller (an identity, or the peer address of an anonymous caller)
//     holds at most perKey slots at once;
//   - a freed slot goes to the waiting caller that holds the fewest slots,
//     first come first served among equals, so a caller with nothing
//     running is served before the next request of a caller that floods;
//   - a caller waits at most the queue timeout, and a caller that already
//     has maxWaiting requests waiting (16 per slot of the pool: far more
//     than a burst of light requests, e.g. from a proxy that many clients
//     share, needs) is refused at once.
//
// Its zero value is not usable; create it with newFairSlots.
type fairSlots struct {
	mu         sync.Mutex
	capacity   int
	perKey     int
	maxWaiting int
	total      int
	running    map[string]int
	waiting    []*slotWaiter // in arrival order
	queued     map[string]int
}

type slotWaiter struct {
	key     string
	ready   chan struct{} // closed when granted
	granted bool
}

func newFairSlots(capacity, perKey int) *fairSlots {
	capacity = max(1, capacity)
	perKey = min(max(1, perKey), capacity)
	return &fairSlots{capacity: capacity, perKey: perKey, maxWaiting: 16 * capacity,
		running: map[string]int{}, queued: map[string]int{}}
}

// errNoSlot says why acquire failed: the wait timed out or the caller has
// too many requests waiting already.
type errNoSlot struct{ queueFull bool }

func (e errNoSlot) Error() string {
	if e.queueFull {
		return "too many requests of this caller are waiting for an evaluation slot"
	}
	return "no evaluation slot became free in time"
}

// acquire takes a slot for key, waiting at most timeout. It returns
// errNoSlot, or ctx's error when ctx ends first. Every successful acquire
// must be paired with release(key).
func (f *fairSlots) acquire(ctx context.Context, key string, timeout time.Duration) error {
	f.mu.Lock()
	// Whenever a slot is free, no waiter is eligible for it (release hands
	// free slots out at once), so a new arrival may take it directly.
	if f.total < f.capacity && f.running[key] < f.perKey {
		f.grantLocked(key)
		f.mu.Unlock()
		return nil
	}
	if f.queued[key] >= f.maxWaiting {
		f.mu.Unlock()
		return errNoSlot{queueFull: true}
	}
	w := &slotWaiter{key: key, ready: make(chan struct{})}
	f.waiting = append(f.waiting, w)
	f.queued[key]++
	f.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-t.C:
		err = errNoSlot{}
	case <-ctx.Done():
		err = ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.granted { // granted just as we gave up: use it
		return nil
	}
	f.removeLocked(w)
	return err
}

// release returns a slot of key and hands free slots to waiters.
func (f *fairSlots) release(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releaseLocked(key)
}

func (f *fairSlots) grantLocked(key string) {
	f.running[key]++
	f.total++
}

func (f *fairSlots) releaseLocked(key string) {
	f.total--
	if f.running[key]--; f.running[key] <= 0 {
		delete(f.running, key)
	}
	for f.total < f.capacity {
		best := -1
		for i, w := range f.waiting {
			n := f.running[w.key]
			if n >= f.perKey {
				continue
			}
			if best < 0 || n < f.running[f.waiting[best].key] {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := f.waiting[best]
		f.removeLocked(w)
		f.grantLocked(w.key)
		w.granted = true
		close(w.ready)
	}
}

func (f *fairSlots) removeLocked(w *slotWaiter) {
	for i, x := range f.waiting {
		if x == w {
			f.waiting = append(f.waiting[:i], f.waiting[i+1:]...)
			break
		}
	}
	if f.queued[w.key]--; f.queued[w.key] <= 0 {
		delete(f.queued, w.key)
	}
}

// stats reports the slots in use and the requests waiting, for tests.
func (f *fairSlots) stats() (running, waiting int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total, len(f.waiting)
}
