package admission

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/testenv"
)

// TestFairSlotsOrder: a freed slot goes to the waiting caller that runs
// the fewest evaluations, not to the caller that queued first, and no
// caller holds more than its share.
func TestFairSlotsOrder(t *testing.T) {
	f := NewSlots(2, 1)
	f.maxWaiting = 10
	ctx := context.Background()
	if err := f.Acquire(ctx, "heavy", time.Second); err != nil {
		t.Fatal(err)
	}
	// heavy is at its share: its next request waits although a slot is free.
	heavyWaits := make(chan error, 3)
	for range 3 {
		go func() { heavyWaits <- f.Acquire(ctx, "heavy", 10*time.Second) }()
	}
	waitFor(t, f, 1, 3)
	if err := f.Acquire(ctx, "other", time.Second); err != nil {
		t.Fatalf("a second caller with a slot free: %v", err)
	}
	// Both slots busy; light arrives after three heavy requests queued.
	lightDone := make(chan error, 1)
	go func() { lightDone <- f.Acquire(ctx, "light", 10*time.Second) }()
	waitFor(t, f, 2, 4)
	f.Release("other")
	select {
	case err := <-lightDone:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-heavyWaits:
		t.Fatalf("a heavy request (%v) was served before the light one", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the light request was not served")
	}
	// heavy still holds its one slot; releasing light hands nothing to heavy.
	f.Release("light")
	if running, waiting := f.Stats(); running != 1 || waiting != 3 {
		t.Fatalf("running %d, waiting %d; want heavy at its share of 1 with 3 waiting", running, waiting)
	}
	f.Release("heavy")
	if err := <-heavyWaits; err != nil {
		t.Fatal(err)
	}
}

// TestFairSlotsLimits: a caller with too many requests waiting is refused
// at once; a wait ends at the timeout or with the context, leaving nothing
// behind.
func TestFairSlotsLimits(t *testing.T) {
	f := NewSlots(1, 1)
	f.maxWaiting = 1
	ctx := context.Background()
	if err := f.Acquire(ctx, "a", time.Second); err != nil {
		t.Fatal(err)
	}
	var e ErrNoSlot
	if err := f.Acquire(ctx, "a", 20*time.Millisecond); !errors.As(err, &e) || e.QueueFull {
		t.Errorf("timeout: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := f.Acquire(cctx, "b", 10*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	go func() { _ = f.Acquire(ctx, "a", 10*time.Second) }()
	waitFor(t, f, 1, 1)
	if err := f.Acquire(ctx, "a", 10*time.Second); !errors.As(err, &e) || !e.QueueFull {
		t.Errorf("second waiter of a: %v, want queue full", err)
	}
	f.Release("a") // the waiting request of a takes it
	waitFor(t, f, 1, 0)
	f.Release("a")
	if running, waiting := f.Stats(); running != 0 || waiting != 0 {
		t.Errorf("running %d, waiting %d after everything ended", running, waiting)
	}
}

// waitFor waits until f has running slots in use and waiting requests.
func waitFor(t *testing.T, f *Slots, running, waiting int) {
	t.Helper()
	wait := testenv.NewWait(5 * time.Second)
	for {
		r, w := f.Stats()
		if r == running && w == waiting {
			return
		}
		if !wait.Next() {
			t.Fatalf("running %d, waiting %d; want %d and %d", r, w, running, waiting)
		}
	}
}
