package chrome

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestFairSlots: issue 35 item 13. The page slots had no per-identity
// share: one identity's 8 slow screenshots pushed another's open_page from
// 0.8 s to 11 s (behind all of them in the queue) or to x-browser_busy
// (the queue full of them). A freed slot now goes to the waiting identity
// with the fewest pages running, and a full queue makes room for an
// identity with fewer waiters; alone, an identity uses every slot in
// arrival order.
//
// It runs in a synctest bubble: synctest.Wait returns once the waiters
// started are queued (blocked on their slot), with no sleeps.
func TestFairSlots(t *testing.T) {
	synctest.Test(t, testFairSlots)
}

func testFairSlots(t *testing.T) {
	// The waiters left at the end leave with ctx.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const wait = time.Hour // never reached: every wait below ends by a release
	f := newFairSlots(2, 4)
	for range 2 {
		if why, err := f.take(ctx, "a", wait); why != 0 || err != nil {
			t.Fatalf("a's first pages: %v %v", why, err)
		}
	}
	// a queues 4 more (the queue is full), then b asks: room is made by
	// refusing a's newest waiter.
	got := make(chan string, 10)
	waitFor := func(owner string) {
		go func() {
			why, err := f.take(ctx, owner, wait)
			switch {
			case err != nil:
				got <- owner + " error"
			case why == queueFull:
				got <- owner + " refused"
			default:
				got <- owner
			}
		}()
	}
	for i := range 4 {
		waitFor("a")
		synctest.Wait() // the goroutine queues
		if n := f.waiting(); n != i+1 {
			t.Fatalf("%d waiting, want %d", n, i+1)
		}
	}
	waitFor("b")
	if r := <-got; r != "a refused" {
		t.Fatalf("with the queue full of a's pages, b's arrival: %q, want a's newest refused", r)
	}
	synctest.Wait()
	if n := f.waiting(); n != 4 {
		t.Fatalf("%d waiting after b queued, want 4", n)
	}
	// One of a's pages ends: the slot goes to b, who has none running,
	// though three of a's waited longer.
	f.release("a")
	if r := <-got; r != "b" {
		t.Fatalf("the freed slot went to %q, want b", r)
	}
	// Then a's waiters, in order, as slots free.
	f.release("a")
	if r := <-got; r != "a" {
		t.Fatalf("next: %q, want a", r)
	}
	// A full queue is not made room in for an identity with as many
	// waiters: c's one waiter against a's two.
	g := newFairSlots(1, 2)
	if why, _ := g.take(ctx, "a", wait); why != 0 {
		t.Fatal("a's page")
	}
	res := make(chan slotRefusal, 3)
	for range 2 {
		go func() { why, _ := g.take(ctx, "a", wait); res <- why }()
	}
	synctest.Wait()
	if n := g.waiting(); n != 2 {
		t.Fatalf("%d waiting, want 2", n)
	}
	// a has 2 waiters, c none: one of a's is refused for c.
	go func() { why, _ := g.take(ctx, "c", wait); res <- why }()
	if why := <-res; why != queueFull {
		t.Fatalf("a full queue: %v, want a refusal", why)
	}
	// A waiter whose wait ends leaves the queue; the slot count is right.
	h := newFairSlots(1, 1)
	if why, _ := h.take(ctx, "a", wait); why != 0 {
		t.Fatal("a's page")
	}
	if why, _ := h.take(ctx, "b", time.Millisecond); why != queueTimeout {
		t.Fatalf("b's wait: %v, want a timeout", why)
	}
	h.release("a")
	if why, _ := h.take(ctx, "b", wait); why != 0 || h.waiting() != 0 {
		t.Fatalf("after a's page: %v, %d waiting", why, h.waiting())
	}
}
