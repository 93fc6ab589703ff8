package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// sleeper records the waits a session asks for and returns at once.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// TestRetries: retryable codes are retried after at least retry_after_ms,
// with growing backoff, at most 5 attempts in all; codes that need a
// changed request are never retried. Over HTTP and a session transport.
func TestRetries(t *testing.T) {
	const base = 100 * time.Millisecond
	tests := []struct {
		name        string
		code        protocol.Code
		retryAfter  int64 // ms, -1 for none
		failures    int   // how many requests fail before success
		maxAttempts int
		wantTries   int
		wantErr     bool
	}{
		{"rate limited then success", protocol.CodeRateLimited, 300, 2, 0, 3, false},
		{"not ready then success", protocol.CodeServerNotReady, 1000, 1, 0, 2, false},
		{"rate limited without retry_after", protocol.CodeRateLimited, -1, 4, 0, 5, false},
		{"never ready: 5 tries", protocol.CodeServerNotReady, 50, 100, 0, 5, true},
		{"MaxAttempts above 5 is capped", protocol.CodeRateLimited, 10, 100, 50, 5, true},
		{"MaxAttempts 1: no retry", protocol.CodeRateLimited, 10, 100, 1, 1, true},
		{"MaxAttempts 2", protocol.CodeRateLimited, 10, 100, 2, 2, true},
		{"invalid_facts is not retried", protocol.CodeInvalidFacts, -1, 100, 0, 1, true},
		{"schema_validation_failed is not retried", protocol.CodeSchemaValidationFailed, -1, 100, 0, 1, true},
		{"evaluation_timeout is not retried", protocol.CodeEvaluationTimeout, -1, 100, 0, 1, true},
		{"internal_error is not retried", protocol.CodeInternalError, -1, 100, 0, 1, true},
		{"custom code is not retried", "x-busy", 10, 100, 0, 1, true},
	}
	for _, binding := range []string{"http", "memory"} {
		for _, tc := range tests {
			t.Run(binding+"/"+tc.name, func(t *testing.T) {
				f := newFake(t, func(_ context.Context, n int, env *protocol.Envelope, _ *protocol.Inbound) *protocol.Envelope {
					if n <= tc.failures {
						return errorReply(env, tc.code, tc.retryAfter)
					}
					return okResponse(env)
				})
				sl := &sleeper{}
				opts := &client.Options{Sleep: sl.sleep, MaxAttempts: tc.maxAttempts, RetryBaseDelay: base, RetryMaxDelay: 10 * time.Second}
				var s *client.Session
				if binding == "http" {
					var err error
					if s, err = client.Dial(ctxT(t), serveHTTP(t, f).URL, opts); err != nil {
						t.Fatal(err)
					}
					defer s.Close()
				} else {
					s = memorySession(t, f, nil, opts)
				}
				_, err := s.Invoke(ctxT(t), &protocol.InvokeRequest{MacroID: "m"})
				if tries := int(f.count.Load()); tries != tc.wantTries {
					t.Errorf("%d tries, want %d", tries, tc.wantTries)
				}
				if tc.wantErr {
					var ce *client.Error
					if !errors.As(err, &ce) || ce.Code() != tc.code || ce.Attempts != tc.wantTries {
						t.Fatalf("got %v, want %s after %d attempts", err, tc.code, tc.wantTries)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				waits := sl.recorded()
				if len(waits) != tc.wantTries-1 {
					t.Fatalf("%d waits %v, want %d", len(waits), waits, tc.wantTries-1)
				}
				for i, w := range waits {
					floor := base << i // exponential backoff
					if ra := time.Duration(tc.retryAfter) * time.Millisecond; ra > floor {
						floor = ra // never less than retry_after_ms
					}
					if w < floor || w > floor+floor/4 {
						t.Errorf("wait %d is %v, want within [%v, %v]", i+1, w, floor, floor+floor/4)
					}
				}
				f.mu.Lock()
				seen := map[string]bool{}
				for _, id := range f.ids {
					if seen[id] {
						t.Errorf("request id %q sent twice", id)
					}
					seen[id] = true
				}
				f.mu.Unlock()
			})
		}
	}
}

// TestRetryRespectsContext: a call waiting to retry returns as soon as its
// context ends, and does not start a wait its deadline cannot cover.
func TestRetryRespectsContext(t *testing.T) {
	f := newFake(t, func(_ context.Context, _ int, env *protocol.Envelope, _ *protocol.Inbound) *protocol.Envelope {
		return errorReply(env, protocol.CodeRateLimited, 60_000)
	})
	s, err := client.Dial(ctxT(t), serveHTTP(t, f).URL, nil) // the real timer
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	t.Run("cancelled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, err := s.Evaluate(ctx, diagnoseRequest())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("returned after %v", d)
		}
	})
	t.Run("deadline before retry_after", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := s.Evaluate(ctx, diagnoseRequest())
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Code() != protocol.CodeRateLimited || ce.RetryAfter() != time.Minute {
			t.Fatalf("got %v, want the rate_limited answer", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("returned after %v", d)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		before := f.count.Load()
		if _, err := s.Evaluate(ctx, diagnoseRequest()); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
		if f.count.Load() != before {
			t.Error("a request was sent with a cancelled context")
		}
	})
}

// switchHandler serves one handler, then another: a server that boots.
type switchHandler struct {
	transport.HandlerDefaults
	mu sync.Mutex
	h  transport.Handler
}

func (s *switchHandler) get() transport.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h
}

func (s *switchHandler) set(h transport.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h = h
}

func (s *switchHandler) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	return s.get().Handle(ctx, in)
}
func (s *switchHandler) ManifestJSON() ([]byte, string) { return s.get().ManifestJSON() }
func (s *switchHandler) MaxMessageBytes() int64         { return s.get().MaxMessageBytes() }

// TestBootingServer: over HTTP a client that meets a booting server
// retries server_not_ready, skips fact validation while the profile is
// unknown, and refreshes the manifest once the server is ready.
func TestBootingServer(t *testing.T) {
	d := browser.Domain(browser.Config{ReportDir: t.TempDir()})
	sw := &switchHandler{h: manglecp.New(d, nil)}
	srv := newServer(t, nil)
	var changes []protocol.Status
	sl := &sleeper{}
	s, err := client.Dial(ctxT(t), serveHTTP(t, sw).URL, &client.Options{
		Sleep: func(ctx context.Context, dur time.Duration) error {
			sw.set(srv) // the server finished loading while we waited
			return sl.sleep(ctx, dur)
		},
		OnManifest: func(m *protocol.Manifest) { changes = append(changes, m.Status) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Manifest().Status; st != protocol.StatusBooting {
		t.Fatalf("status %s, want booting", st)
	}
	if _, err := s.Evaluate(ctxT(t), diagnoseRequest()); err != nil {
		t.Fatal(err)
	}
	if w := sl.recorded(); len(w) != 1 || w[0] < 500*time.Millisecond {
		t.Errorf("waits %v, want one of at least the booting server's 500 ms", w)
	}
	if st := s.Manifest().Status; st != protocol.StatusReady {
		t.Errorf("status after the retry %s, want ready", st)
	}
	m, err := s.RefreshManifest(ctxT(t))
	if err != nil || m.Status != protocol.StatusReady || len(m.FactsProfile.Predicates) == 0 {
		t.Errorf("refresh: %v %+v", err, m)
	}
	// Only real changes are reported (the second refresh got 304).
	if len(changes) != 1 || changes[0] != protocol.StatusReady {
		t.Errorf("OnManifest calls %v", changes)
	}
}
