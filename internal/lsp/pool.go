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
// language), and restarts one that exited after a backoff. Its methods
// are safe for concurrent use.
type Pool struct {
	// Now is the clock of the backoff (default time.Now).
	Now func() time.Time

	mu     sync.Mutex
	slots  map[string]*slot
	closed bool
}

type slot struct {
	srv      *Server
	starting chan struct{} // non-nil while a start runs; closed when it ends
	startErr error
	failures int
	next     time.Time
	cause    string
	starts   int
}

func (p *Pool) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Get returns the running server for key, starting it (spec on root) when
// none runs. A server that exited is started again, unless the previous
// failure's backoff has not passed ([BackoffError]).
func (p *Pool) Get(ctx context.Context, key string, spec Spec, root string) (*Server, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, errors.New("lsp: pool closed")
		}
		if p.slots == nil {
			p.slots = map[string]*slot{}
		}
		sl := p.slots[key]
		if sl == nil {
			sl = &slot{}
			p.slots[key] = sl
		}
		if sl.starting != nil {
			ch := sl.starting
			p.mu.Unlock()
			select {
			case <-ch:
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
		ch := make(chan struct{})
		sl.starting = ch
		sl.starts++
		p.mu.Unlock()

		srv, err := Start(ctx, spec, root)

		p.mu.Lock()
		sl.starting = nil
		close(ch)
		if err != nil {
			sl.failures++
			sl.cause = err.Error()
			sl.next = p.now().Add(backoff(sl.failures))
			p.mu.Unlock()
			return nil, err
		}
		if p.closed {
			p.mu.Unlock()
			srv.Close()
			return nil, errors.New("lsp: pool closed")
		}
		sl.srv = srv
		p.mu.Unlock()
		return srv, nil
	}
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

// Close stops every server and waits for them.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
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
