package lsp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Backoff bounds of a [Pool]: after the n-th failure in a row (a start
// that failed, or a server that died), a server is not started again for
// min(BackoffBase * 2^(n-1), BackoffMax).
const (
	BackoffBase = time.Second
	BackoffMax  = time.Minute
)

// BackoffError is returned while a server that failed waits for its next
// start.
type BackoffError struct {
	Name  string
	Until time.Time
	Cause string
}

func (e *BackoffError) Error() string {
	return fmt.Sprintf("lsp: %s failed (%s); it is started again after %s", e.Name, e.Cause, e.Until.UTC().Format(time.RFC3339))
}

// Pool starts language servers lazily, one per key (a root and a
// language), and restarts one that exited after a backoff. A start runs
// on its own, bounded by the spec's StartTimeout and the pool's Close,
// not by the request that caused it: a request that stops waiting (its
// deadline is near) leaves the server starting for the next one, so a
// server slower to start than any one request still comes up. Its
// methods are safe for concurrent use.
type Pool struct {
	// Now is the clock of the backoff (default time.Now).
	Now func() time.Time

	mu     sync.Mutex
	slots  map[string]*slot
	closed bool
	base   context.Context // the starts' context, ended by Close
	stop   context.CancelFunc
	starts sync.WaitGroup
}

type slot struct {
	srv      *Server
	starting *start // non-nil while a start runs
	failures int
	next     time.Time
	cause    string
	starts   int
	began    time.Time // of the start that runs, by the pool's clock
}

// start is one start of a server; done is closed when it ended, with err
// set when it failed.
type start struct {
	done chan struct{}
	err  error
}

func (p *Pool) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Get returns the running server for key, starting it (spec on root) when
// none runs, and waits for the start until ctx ends (the start goes on).
// A server that exited is started again, unless the previous failure's
// backoff has not passed ([BackoffError]).
func (p *Pool) Get(ctx context.Context, key string, spec Spec, root string) (*Server, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errors.New("lsp: pool closed")
		}
		if p.slots == nil {
			p.slots = map[string]*slot{}
			p.base, p.stop = context.WithCancel(context.Background())
		}
		sl := p.slots[key]
		if sl == nil {
			sl = &slot{}
			p.slots[key] = sl
		}
		if st := sl.starting; st != nil {
			p.mu.Unlock()
			select {
			case <-st.done:
				if st.err != nil {
					return nil, st.err
				}
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if sl.srv != nil {
			if gone, why := sl.srv.Exited(); !gone {
				srv := sl.srv
				p.mu.Unlock()
				return srv, nil
			} else {
				old := sl.srv
				sl.srv = nil
				sl.failures++
				sl.cause = why
				sl.next = p.now().Add(backoff(sl.failures))
				old.Close() // reaps what is left of it: quick for an exited server
			}
		}
		if sl.failures > 0 && p.now().Before(sl.next) {
			err := &BackoffError{Name: spec.Name, Until: sl.next, Cause: sl.cause}
			if err.Name == "" && len(spec.Command) > 0 {
				err.Name = spec.Command[0]
			}
			p.mu.Unlock()
			return nil, err
		}
		st := &start{done: make(chan struct{})}
		sl.starting = st
		sl.starts++
		sl.began = p.now()
		p.starts.Add(1)
		base := p.base
		p.mu.Unlock()
		go p.run(base, sl, st, spec, root)
	}
}

// run starts a server for sl and records the outcome.
func (p *Pool) run(ctx context.Context, sl *slot, st *start, spec Spec, root string) {
	defer p.starts.Done() // after the server of a closed pool is closed
	srv, err := Start(ctx, spec, root)
	p.mu.Lock()
	sl.starting = nil
	switch {
	case err != nil:
		st.err = err
		sl.failures++
		sl.cause = err.Error()
		sl.next = p.now().Add(backoff(sl.failures))
	case p.closed:
		st.err = errors.New("lsp: pool closed")
	default:
		sl.srv = srv
		srv = nil
	}
	close(st.done)
	p.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Starting reports whether a start of key's server runs, and since when
// (by the pool's clock).
func (p *Pool) Starting(key string) (bool, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sl := p.slots[key]; sl != nil && sl.starting != nil {
		return true, sl.began
	}
	return false, time.Time{}
}

// Healthy tells the pool that a server of key answered: its failure count
// starts again from zero.
func (p *Pool) Healthy(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sl := p.slots[key]; sl != nil {
		sl.failures = 0
	}
}

// State describes the server of key: "not started", "running", "failed"
// (waiting for its backoff) or "starting", and how many times it was
// started.
func (p *Pool) State(key string) (state string, starts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sl := p.slots[key]
	switch {
	case sl == nil:
		return "not started", 0
	case sl.starting != nil:
		return "starting", sl.starts
	case sl.srv != nil:
		if gone, _ := sl.srv.Exited(); !gone {
			return "running", sl.starts
		}
		return "failed", sl.starts
	case sl.failures > 0:
		return "failed", sl.starts
	}
	return "not started", sl.starts
}

// Running returns the running server of key, or nil.
func (p *Pool) Running(key string) *Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sl := p.slots[key]; sl != nil && sl.srv != nil {
		if gone, _ := sl.srv.Exited(); !gone {
			return sl.srv
		}
	}
	return nil
}

// Close stops every server, and every start that runs, and waits for
// them.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	if p.stop != nil {
		p.stop()
	}
	p.mu.Unlock()
	p.starts.Wait()
	p.mu.Lock()
	var servers []*Server
	for _, sl := range p.slots {
		if sl.srv != nil {
			servers = append(servers, sl.srv)
			sl.srv = nil
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Close()
		}()
	}
	wg.Wait()
	return nil
}

func backoff(failures int) time.Duration {
	d := BackoffBase
	for i := 1; i < failures && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}
