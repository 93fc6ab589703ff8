package ondemand_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/manglecp/manglecp/internal/ondemand"
)

// conn is a connection of the tests.
type conn struct{ n int }

// dialer dials connections numbered from 1, each when release gets a
// value (or at once when release is nil), and records every dial's
// context.
type dialer struct {
	release chan error
	n       atomic.Int32
	mu      sync.Mutex
	ctxs    []context.Context
}

func (d *dialer) dial(ctx context.Context) (*conn, error) {
	n := int(d.n.Add(1))
	d.mu.Lock()
	d.ctxs = append(d.ctxs, ctx)
	d.mu.Unlock()
	if d.release == nil {
		return &conn{n}, nil
	}
	select {
	case err := <-d.release:
		if err != nil {
			return nil, err
		}
		return &conn{n}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *dialer) ctx(i int) context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ctxs[i]
}

type result struct {
	c   *conn
	err error
}

func get(ctx context.Context, c *ondemand.Conn[*conn]) chan result {
	ch := make(chan result, 1)
	go func() {
		v, err := c.Get(ctx)
		ch <- result{v, err}
	}()
	return ch
}

// TestOneDialForEveryCaller: callers that need the connection while it is
// dialled share one dial, and later callers get it without a dial.
func TestOneDialForEveryCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{release: make(chan error)}
		c := &ondemand.Conn[*conn]{Dial: d.dial}
		var chs []chan result
		for range 5 {
			chs = append(chs, get(t.Context(), c))
		}
		synctest.Wait()
		d.release <- nil
		for _, ch := range chs {
			if r := <-ch; r.err != nil || r.c.n != 1 {
				t.Fatalf("got %v %v", r.c, r.err)
			}
		}
		if v, err := c.Get(t.Context()); err != nil || v.n != 1 || d.n.Load() != 1 {
			t.Fatalf("got %v %v after %d dials", v, err, d.n.Load())
		}
	})
}

// TestLastCallerLeavingCancels: a caller who leaves does not end the dial
// the others wait for; the last one leaving cancels it, and the next
// caller dials again.
func TestLastCallerLeavingCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{release: make(chan error)}
		dropped := 0
		c := &ondemand.Conn[*conn]{Dial: d.dial, Drop: func(*conn) { dropped++ }}
		ctx1, leave1 := context.WithCancel(t.Context())
		ctx2, leave2 := context.WithCancel(t.Context())
		ch1, ch2 := get(ctx1, c), get(ctx2, c)
		synctest.Wait()
		leave1()
		if r := <-ch1; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("first caller: %v", r.err)
		}
		synctest.Wait()
		if d.ctx(0).Err() != nil {
			t.Fatal("the dial was cancelled while a caller still waits")
		}
		leave2()
		<-ch2
		synctest.Wait()
		if d.ctx(0).Err() == nil {
			t.Fatal("the dial goes on with no one waiting")
		}
		d.release = nil
		if v, err := c.Get(t.Context()); err != nil || v.n != 2 {
			t.Fatalf("next caller: %v %v", v, err)
		}
		if dropped != 0 {
			t.Errorf("dropped %d", dropped)
		}
	})
}

// TestAbandonedConnectionDropped: a dial that succeeds after every caller
// left gives its connection to Drop, not to the next caller.
func TestAbandonedConnectionDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var dropped []*conn
		n := 0
		c := &ondemand.Conn[*conn]{
			Dial: func(ctx context.Context) (*conn, error) {
				n++
				if n == 1 {
					<-release // ignores ctx
				}
				return &conn{n}, nil
			},
			Drop: func(v *conn) { dropped = append(dropped, v) },
		}
		ctx, leave := context.WithCancel(t.Context())
		ch := get(ctx, c)
		synctest.Wait()
		leave()
		<-ch
		close(release)
		synctest.Wait()
		if len(dropped) != 1 || dropped[0].n != 1 {
			t.Fatalf("dropped %v", dropped)
		}
		if _, ok := c.Current(); ok {
			t.Fatal("an abandoned connection was kept")
		}
	})
}

// TestFailureSharedAndBackoff: a failed dial's error goes to each of its
// callers; the backoff refuses to dial while it runs, doubles with each
// failure and lets a dial through once it has passed.
func TestFailureSharedAndBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{release: make(chan error)}
		b := &ondemand.Backoff{Min: time.Second, Max: 3 * time.Second}
		var seen []error
		c := &ondemand.Conn[*conn]{Dial: d.dial, Backoff: b, OnDial: func(_ *conn, err error) { seen = append(seen, err) }}
		boom := errors.New("boom")
		ch1, ch2 := get(t.Context(), c), get(t.Context(), c)
		synctest.Wait()
		d.release <- boom
		for _, ch := range []chan result{ch1, ch2} {
			if r := <-ch; !errors.Is(r.err, boom) {
				t.Fatalf("got %v", r.err)
			}
		}
		if len(seen) != 1 {
			t.Fatalf("OnDial called %d times", len(seen))
		}
		var retry *ondemand.RetryError
		if _, err := c.Get(t.Context()); !errors.As(err, &retry) || retry.After != time.Second {
			t.Fatalf("during the backoff: %v", err)
		}
		time.Sleep(time.Second)
		ch := get(t.Context(), c)
		synctest.Wait()
		d.release <- boom
		<-ch
		if w := b.Wait(); w != 2*time.Second {
			t.Errorf("second wait %v", w)
		}
		time.Sleep(2 * time.Second)
		ch = get(t.Context(), c)
		synctest.Wait()
		d.release <- nil
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
		if b.Failures() != 2 {
			t.Errorf("a success reset the failures: %d", b.Failures())
		}
	})
}

func TestBackoffDoublesUpToMax(t *testing.T) {
	now := time.Unix(0, 0)
	b := &ondemand.Backoff{Min: 100 * time.Millisecond, Max: time.Second, Now: func() time.Time { return now }}
	for i, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		if got := b.Fail(); got != want*time.Millisecond {
			t.Errorf("failure %d: wait %v", i+1, got)
		}
	}
	b.Reset()
	if got := b.Fail(); got != 100*time.Millisecond {
		t.Errorf("after Reset: %v", got)
	}
	if got := b.Wait(); got != 100*time.Millisecond {
		t.Errorf("Wait %v", got)
	}
}

// TestResetAndClose: Reset ends a dial in flight (its callers get
// ErrClosed, what it made is dropped) and returns the current connection;
// after Close every Get fails.
func TestResetAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &dialer{}
		c := &ondemand.Conn[*conn]{Dial: d.dial}
		v, err := c.Get(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := c.Reset(); !ok || got != v {
			t.Fatalf("Reset returned %v %v", got, ok)
		}
		d.release = make(chan error)
		ch := get(t.Context(), c)
		synctest.Wait()
		if _, ok := c.Reset(); ok {
			t.Fatal("Reset returned a connection during a dial")
		}
		if r := <-ch; !errors.Is(r.err, ondemand.ErrClosed) {
			t.Fatalf("caller of the ended dial: %v", r.err)
		}
		d.release = nil
		if v, err := c.Get(t.Context()); err != nil || v.n != 3 {
			t.Fatalf("after Reset: %v %v", v, err)
		}
		if _, ok := c.Close(); !ok {
			t.Fatal("Close returned no connection")
		}
		if _, err := c.Get(t.Context()); !errors.Is(err, ondemand.ErrClosed) {
			t.Fatalf("after Close: %v", err)
		}
	})
}

func TestForgetAndTake(t *testing.T) {
	d := &dialer{}
	c := &ondemand.Conn[*conn]{Dial: d.dial}
	v, _ := c.Get(context.Background())
	if c.Forget(&conn{1}) {
		t.Error("forgot another connection")
	}
	if !c.Forget(v) || c.Forget(v) {
		t.Error("Forget")
	}
	v, _ = c.Get(context.Background())
	if got, ok := c.Take(); !ok || got != v {
		t.Error("Take")
	}
	if _, ok := c.Current(); ok {
		t.Error("Take left it")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Get(ctx); !errors.Is(err, context.Canceled) || d.n.Load() != 2 {
		t.Errorf("a caller whose context ended dialled: %v", err)
	}
}
