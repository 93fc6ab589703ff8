// Package admission decides whether a request may start work, before any
// work is done: the fair share of evaluation slots between callers
// (Slots) and the budgets of failed authentications per client and
// server-wide (AuthFailures). It knows neither the server nor a transport;
// the server maps its refusals to protocol errors.
package admission

import (
	"context"
	"sync"
	"time"
)

// Slots bounds concurrent evaluations and shares them between callers,
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
// It is safe for concurrent use. Its zero value is not usable; create it
// with NewSlots.
type Slots struct {
	mu         sync.Mutex
	capacity   int
	perKey     int
	maxWaiting int
	total      int
	running    map[string]int
	waiting    []*waiter // in arrival order
	queued     map[string]int
}

type waiter struct {
	key     string
	ready   chan struct{} // closed when granted
	granted bool
}

// NewSlots returns a pool of capacity slots (at least 1), perKey of them
// (at least 1, at most capacity) for any one caller.
func NewSlots(capacity, perKey int) *Slots {
	capacity = max(1, capacity)
	perKey = min(max(1, perKey), capacity)
	return &Slots{capacity: capacity, perKey: perKey, maxWaiting: 16 * capacity,
		running: map[string]int{}, queued: map[string]int{}}
}

// ErrNoSlot says why Acquire failed: the wait timed out or (QueueFull) the
// caller has too many requests waiting already.
type ErrNoSlot struct{ QueueFull bool }

// Error says which of the two it is.
func (e ErrNoSlot) Error() string {
	if e.QueueFull {
		return "too many requests of this caller are waiting for an evaluation slot"
	}
	return "no evaluation slot became free in time"
}

// Acquire takes a slot for key, waiting at most timeout. It returns
// ErrNoSlot, or ctx's error when ctx ends first. Every successful Acquire
// must be paired with Release(key).
func (f *Slots) Acquire(ctx context.Context, key string, timeout time.Duration) error {
	f.mu.Lock()
	// Whenever a slot is free, no waiter is eligible for it (Release hands
	// free slots out at once), so a new arrival may take it directly.
	if f.total < f.capacity && f.running[key] < f.perKey {
		f.grantLocked(key)
		f.mu.Unlock()
		return nil
	}
	if f.queued[key] >= f.maxWaiting {
		f.mu.Unlock()
		return ErrNoSlot{QueueFull: true}
	}
	w := &waiter{key: key, ready: make(chan struct{})}
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
		err = ErrNoSlot{}
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

// Release returns a slot of key and hands free slots to waiters.
func (f *Slots) Release(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releaseLocked(key)
}

func (f *Slots) grantLocked(key string) {
	f.running[key]++
	f.total++
}

func (f *Slots) releaseLocked(key string) {
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

func (f *Slots) removeLocked(w *waiter) {
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

// Capacity is the number of slots in the pool.
func (f *Slots) Capacity() int { return f.capacity }

// PerKey is the number of slots one caller may hold at once.
func (f *Slots) PerKey() int { return f.perKey }

// Stats reports the slots in use and the requests waiting.
func (f *Slots) Stats() (running, waiting int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total, len(f.waiting)
}
