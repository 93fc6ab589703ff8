package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// blocker is a handler whose requests block until their context ends; it
// reports each start and each cancellation.
type blocker struct {
	*fake
	started   chan string
	cancelled chan string
}

func newBlocker(t *testing.T) *blocker {
	b := &blocker{started: make(chan string, 16), cancelled: make(chan string, 16)}
	b.fake = newFake(t, func(ctx context.Context, _ int, env *protocol.Envelope, _ *protocol.Inbound) *protocol.Envelope {
		b.started <- env.IDString()
		<-ctx.Done()
		b.cancelled <- env.IDString()
		return protocol.ErrorEnvelope(env.IDString(), protocol.Errorf(protocol.CodeCancelled, "cancelled"))
	})
	return b
}

// TestCancel: when a call's context ends before the answer, the call
// returns the context's error at once and the request is cancelled on the
// server: by a cancel message on session transports, by closing the
// request over HTTP.
func TestCancel(t *testing.T) {
	tests := []struct {
		name string
		dial func(t *testing.T, h transport.Handler) *client.Session
	}{
		{"memory", func(t *testing.T, h transport.Handler) *client.Session { return memorySession(t, h, nil, nil) }},
		{"websocket", func(t *testing.T, h transport.Handler) *client.Session {
			s, err := client.Dial(ctxT(t), wsURL(serveHTTP(t, h)), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
		{"http", func(t *testing.T, h transport.Handler) *client.Session {
			s, err := client.Dial(ctxT(t), serveHTTP(t, h).URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBlocker(t)
			s := tc.dial(t, b)
			for i, call := range []func(ctx context.Context) error{
				func(ctx context.Context) error {
					_, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: "slow"})
					return err
				},
				func(ctx context.Context) error {
					_, err := s.Evaluate(ctx, diagnoseRequest())
					return err
				},
			} {
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() { errc <- call(ctx) }()
				var id string
				select {
				case id = <-b.started:
				case <-time.After(5 * time.Second):
					t.Fatal("the request never reached the server")
				}
				cancel()
				select {
				case err := <-errc:
					if !errors.Is(err, context.Canceled) || err != context.Canceled {
						t.Fatalf("call %d: got %v, want ctx's error", i, err)
					}
				case <-time.After(2 * time.Second):
					t.Fatalf("call %d did not return after its context ended", i)
				}
				select {
				case got := <-b.cancelled:
					if got != id {
						t.Errorf("cancelled %s, want %s", got, id)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("call %d: the server never saw the cancellation", i)
				}
			}
			// The session still works afterwards.
			b.answer = func(_ context.Context, _ int, env *protocol.Envelope, _ *protocol.Inbound) *protocol.Envelope {
				return okResponse(env)
			}
			if _, err := s.Evaluate(ctxT(t), diagnoseRequest()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPipelining: many concurrent calls share one session; each gets its
// own answer although the server answers in another order, and ids are
// unique.
func TestPipelining(t *testing.T) {
	const n = 24
	release := make(chan struct{})
	f := newFake(t, func(_ context.Context, _ int, env *protocol.Envelope, _ *protocol.Inbound) *protocol.Envelope {
		var req protocol.IntentRequest
		_ = json.Unmarshal(env.Payload, &req)
		<-release
		out, _ := protocol.NewEnvelope(protocol.TypeIntentResponse, env.IDString(), &protocol.IntentResponse{
			MacroTools: []protocol.MacroTool{{MacroID: req.Intent.Name, Name: req.Intent.Name}}})
		return out
	})
	s := memorySession(t, f, &transport.SessionOptions{MaxConcurrent: n}, &client.Options{SkipFactValidation: true})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("intent-%d", i)
			resp, err := s.Evaluate(ctxT(t), &protocol.IntentRequest{Intent: protocol.Intent{Name: name}, Facts: []protocol.Fact{}})
			if err != nil {
				errs <- err
				return
			}
			if len(resp.MacroTools) != 1 || resp.MacroTools[0].Name != name {
				errs <- fmt.Errorf("%s got the answer %+v", name, resp.MacroTools)
			}
		}()
	}
	// Every request is in flight at once before any is answered.
	testenv.Poll(5*time.Second, func() bool { return f.count.Load() >= n })
	if got := f.count.Load(); got != n {
		t.Fatalf("%d requests in flight, want %d pipelined", got, n)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	for _, id := range f.ids {
		if seen[id] {
			t.Errorf("id %s used twice", id)
		}
		seen[id] = true
	}
}

// TestProgress: progress messages reach the call's callback, or the
// session's, in order and before the call returns; progress for other ids
// is ignored.
func TestProgress(t *testing.T) {
	f := newFake(t, func(_ context.Context, _ int, env *protocol.Envelope, in *protocol.Inbound) *protocol.Envelope {
		for i, st := range []string{"started", "running", "finalizing"} {
			pct := float64(i * 40)
			in.Progress(protocol.Progress{Status: st, Percent: &pct})
		}
		return okResponse(env)
	})
	var mu sync.Mutex
	var session []string
	s := memorySession(t, f, nil, &client.Options{Progress: func(p protocol.Progress) {
		mu.Lock()
		defer mu.Unlock()
		session = append(session, p.Status)
	}})
	if _, err := s.Invoke(ctxT(t), &protocol.InvokeRequest{MacroID: "m"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if fmt.Sprint(session) != "[started running finalizing]" {
		t.Errorf("session progress %v", session)
	}
	session = nil
	mu.Unlock()
	var call []float64
	if _, err := s.Invoke(ctxT(t), &protocol.InvokeRequest{MacroID: "m"}, client.WithProgress(func(p protocol.Progress) { call = append(call, *p.Percent) })); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(call) != "[0 40 80]" {
		t.Errorf("call progress %v", call)
	}
	if len(session) != 0 {
		t.Errorf("the session callback got %v although the call had its own", session)
	}
}

// TestManifestPush: a manifest the server pushes replaces the current one.
func TestManifestPush(t *testing.T) {
	srv := newServer(t, nil)
	pushed := make(chan protocol.Status, 4)
	s := memorySession(t, srv, nil, &client.Options{OnManifest: func(m *protocol.Manifest) { pushed <- m.Status }})
	if st := s.Manifest().Status; st != protocol.StatusReady {
		t.Fatalf("status %s", st)
	}
	srv.SetDegraded("the report directory is full")
	select {
	case st := <-pushed:
		if st != protocol.StatusDegraded {
			t.Fatalf("pushed %s", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no manifest pushed")
	}
	m := s.Manifest()
	if m.Status != protocol.StatusDegraded || m.Extensions["x-degraded_reason"] != "the report directory is full" {
		t.Errorf("manifest %s %v", m.Status, m.Extensions)
	}
	if _, err := s.RefreshManifest(ctxT(t)); err != nil {
		t.Errorf("refresh on a session transport: %v", err)
	}
}

// TestSessionEnd: Close fails waiting calls with ErrClosed; a server that
// goes away fails them with a TransportError.
func TestSessionEnd(t *testing.T) {
	t.Run("close", func(t *testing.T) {
		b := newBlocker(t)
		s := memorySession(t, b, nil, nil)
		errc := make(chan error, 1)
		go func() {
			_, err := s.Invoke(ctxT(t), &protocol.InvokeRequest{MacroID: "slow"})
			errc <- err
		}()
		<-b.started
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, client.ErrClosed) {
			t.Errorf("waiting call: %v, want ErrClosed", err)
		}
		if _, err := s.Evaluate(ctxT(t), diagnoseRequest()); !errors.Is(err, client.ErrClosed) {
			t.Errorf("after Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
	t.Run("server gone", func(t *testing.T) {
		b := newBlocker(t)
		c, sc := transport.NewMemoryPair()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = transport.ServeSession(ctx, b, sc, nil) }()
		s, err := client.NewSession(ctxT(t), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		errc := make(chan error, 1)
		go func() {
			_, err := s.Invoke(ctxT(t), &protocol.InvokeRequest{MacroID: "slow"})
			errc <- err
		}()
		<-b.started
		_ = sc.Close() // the server's end goes away
		var te *client.TransportError
		if err := <-errc; !errors.As(err, &te) || te.Op != "receive" || !errors.Is(err, io.EOF) {
			t.Errorf("waiting call: %v, want a receive TransportError", err)
		}
		if _, err := s.Evaluate(ctxT(t), diagnoseRequest()); !errors.As(err, &te) {
			t.Errorf("later call: %v", err)
		}
	})
	t.Run("not a manifest first", func(t *testing.T) {
		c, sc := transport.NewMemoryPair()
		env, _ := protocol.NewEnvelope(protocol.TypeProgress, "x", protocol.Progress{Status: "running"})
		raw, _ := env.Encode()
		_ = sc.WriteMessage(context.Background(), raw)
		_, err := client.NewSession(ctxT(t), c, nil)
		var te *client.TransportError
		if !errors.As(err, &te) {
			t.Errorf("got %v, want a TransportError", err)
		}
	})
	t.Run("no manifest before the context ends", func(t *testing.T) {
		c, _ := transport.NewMemoryPair()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := client.NewSession(ctx, c, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v", err)
		}
	})
}

// TestMessageTooLarge: a request larger than the manifest's
// max_message_bytes is refused locally with message_too_large, the error
// the server would send, instead of breaking the session.
func TestMessageTooLarge(t *testing.T) {
	f := newFake(t, func(_ context.Context, _ int, env *protocol.Envelope, _ *protocol.Inbound) *protocol.Envelope {
		return okResponse(env)
	})
	var m protocol.Manifest
	_ = json.Unmarshal(f.manifest, &m)
	m.Limits.MaxMessageBytes = 1000
	f.manifest, _ = json.Marshal(m)
	s := memorySession(t, f, nil, nil)
	_, err := s.Invoke(ctxT(t), &protocol.InvokeRequest{MacroID: "m", Args: map[string]any{"blob": string(make([]byte, 2000))}})
	var ce *client.Error
	if !errors.As(err, &ce) || !ce.Local || ce.Code() != protocol.CodeMessageTooLarge || *ce.Details().Limit != 1000 || ce.Status != 413 {
		t.Fatalf("got %v", err)
	}
	if f.count.Load() != 0 {
		t.Error("the request was sent")
	}
}
