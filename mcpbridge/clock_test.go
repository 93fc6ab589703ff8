package mcpbridge_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// clock is a clock tests move by hand (mcpbridge.SetClock), so that a
// validity window or a confirmation ends without waiting for it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// inBubble runs a test in a synctest bubble, where time is virtual: it
// moves only when every goroutine of the bubble waits, so a test that
// waits past a timer (the SDK's batching, an idle timeout) takes no time.
func inBubble(f func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
}
