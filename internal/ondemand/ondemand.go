// Package ondemand connects on demand: a [Conn] holds one connection (an
// MCP bridge's MangleCP session, an upstream's MCP session) and dials it
// when a caller needs it and there is none. One dial runs at a time,
// shared by every caller that needs the connection meanwhile; it runs on
// a context of its own, so a caller who gives up stops waiting without
// failing the others, and the dial is cancelled only when the last caller
// waiting for it has left. An optional [Backoff] spaces the dials after
// failures.
package ondemand

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrClosed is what callers get from a Conn that was closed, and from a
// dial that [Conn.Reset] or [Conn.Close] ended.
var ErrClosed = errors.New("ondemand: connection closed")

// RetryError is what callers get while the backoff after a failed dial
// runs: no dial is tried before After.
type RetryError struct {
	After time.Duration
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("ondemand: next attempt in %s", e.After.Round(time.Millisecond))
}

// Conn holds one connection of type T and dials it on demand. Set Dial
// (and the optional fields) before first use; its methods are safe for
// concurrent use.
type Conn[T comparable] struct {
	// Dial makes the connection. Its context keeps the values of the
	// context of the caller that started it, and is cancelled only when
	// every caller waiting for it left, or by Reset or Close; the context
	// of a dial that succeeded is never cancelled (a connection may be
	// tied to it).
	Dial func(ctx context.Context) (T, error)
	// Drop, when set, closes a connection Dial made that no one takes:
	// every caller left, or Reset or Close came, while it was dialled.
	Drop func(T)
	// OnDial, when set, is called once for every dial whose result is
	// kept (a new connection, or an error for its callers), after the
	// connection became the current one and before its callers return. It
	// is called without any lock of the Conn held.
	OnDial func(T, error)
	// Backoff, when set, counts each failed dial and refuses to dial
	// (with a *RetryError) while its wait runs. A successful dial does not
	// reset it: the owner calls Backoff.Reset once the connection proved
	// stable.
	Backoff *Backoff

	mu     sync.Mutex
	cur    T
	have   bool
	call   *call[T] // the dial in flight, if any
	closed bool
	dials  sync.WaitGroup // dial goroutines
}

// call is one dial in flight, shared by every caller that needs the
// connection meanwhile.
type call[T any] struct {
	done    chan struct{} // closed when v, err are set
	v       T
	err     error
	waiters int // callers waiting; under Conn.mu
	cancel  context.CancelFunc
}

// Get returns the current connection, dialing when there is none. A
// caller whose ctx ends returns ctx's error at once.
func (c *Conn[T]) Get(ctx context.Context) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return zero, ErrClosed
	case c.have:
		v := c.cur
		c.mu.Unlock()
		return v, nil
	}
	cl := c.call
	if cl == nil {
		if c.Backoff != nil {
			if wait := c.Backoff.Wait(); wait > 0 {
				c.mu.Unlock()
				return zero, &RetryError{After: wait}
			}
		}
		dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		cl = &call[T]{done: make(chan struct{}), cancel: cancel}
		c.call = cl
		c.dials.Add(1)
		go c.dial(dctx, cl)
	}
	cl.waiters++
	c.mu.Unlock()
	select {
	case <-cl.done:
		return cl.v, cl.err
	case <-ctx.Done():
		c.mu.Lock()
		if cl.waiters--; cl.waiters == 0 && c.call == cl {
			// No one waits: the dial is abandoned and the next caller
			// starts a new one.
			c.call = nil
			cl.cancel()
		}
		c.mu.Unlock()
		return zero, ctx.Err()
	}
}

// dial runs the dial cl and, unless it was abandoned meanwhile, keeps
// its connection.
func (c *Conn[T]) dial(ctx context.Context, cl *call[T]) {
	defer c.dials.Done()
	defer close(cl.done)
	v, err := c.Dial(ctx)
	c.mu.Lock()
	if c.call != cl {
		// Abandoned, reset or closed: its callers (if any) get ErrClosed.
		c.mu.Unlock()
		cl.cancel()
		if err == nil && c.Drop != nil {
			c.Drop(v)
		}
		var zero T
		cl.v, cl.err = zero, ErrClosed
		return
	}
	c.call = nil
	if err != nil {
		cl.cancel()
		if c.Backoff != nil {
			c.Backoff.Fail()
		}
	} else {
		c.cur, c.have = v, true
	}
	c.mu.Unlock()
	if c.OnDial != nil {
		c.OnDial(v, err)
	}
	cl.v, cl.err = v, err
}

// Current returns the connection, if there is one, without dialing.
func (c *Conn[T]) Current() (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur, c.have
}

// Forget drops v if it is the current connection (it broke, or its owner
// ended it) and reports whether it was; the next Get dials again. The
// caller closes v.
func (c *Conn[T]) Forget(v T) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.have || c.cur != v {
		return false
	}
	var zero T
	c.cur, c.have = zero, false
	return true
}

// Take removes the current connection and returns it, for a caller that
// keeps it for itself.
func (c *Conn[T]) Take() (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.cur, c.have
	var zero T
	c.cur, c.have = zero, false
	return v, ok
}

// Reset ends the dial in flight (its callers get ErrClosed, what it made
// is dropped) and waits for it, then forgets the current connection and
// returns it for the caller to close. The next Get dials again.
func (c *Conn[T]) Reset() (T, bool) {
	return c.end(false)
}

// Close is Reset, and every later Get fails with ErrClosed.
func (c *Conn[T]) Close() (T, bool) {
	return c.end(true)
}

func (c *Conn[T]) end(closed bool) (T, bool) {
	c.mu.Lock()
	if closed {
		c.closed = true
	}
	if cl := c.call; cl != nil {
		c.call = nil
		cl.cancel()
	}
	c.mu.Unlock()
	c.dials.Wait()
	return c.Take()
}

// Backoff spaces attempts after failures: after the n-th failure in a
// row the next attempt waits Min*2^(n-1), at most Max. Its methods are
// safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	// Now is the clock (time.Now if nil).
	Now func() time.Time

	mu       sync.Mutex
	failures int
	next     time.Time
}

func (b *Backoff) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Fail counts a failure and returns how long the next attempt waits.
func (b *Backoff) Fail() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	d := b.Min
	for i := 1; i < b.failures && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	b.next = b.now().Add(d)
	return d
}

// Reset forgets the failures (the next failure waits Min again); a wait
// already running goes on.
func (b *Backoff) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures = 0
}

// Wait is how long until the next attempt may start; 0 or less: now.
func (b *Backoff) Wait() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next.Sub(b.now())
}

// Failures is the number of failures in a row counted so far.
func (b *Backoff) Failures() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures
}
