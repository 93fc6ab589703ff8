package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// slowHandler answers "slow" ids only when released or cancelled, and
// everything else at once; it reports progress for invocations.
type slowHandler struct {
	transport.HandlerDefaults
	release chan struct{}
	mu      sync.Mutex
	seen    []string
}

func (h *slowHandler) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	env, perr := protocol.DecodeEnvelope(in.Data)
	if perr != nil {
		return protocol.ErrorEnvelope(env.IDString(), perr)
	}
	id := env.IDString()
	h.mu.Lock()
	h.seen = append(h.seen, id)
	h.mu.Unlock()
	if in.Progress != nil {
		in.Progress(protocol.Progress{Status: "running", Detail: "working"})
	}
	if strings.HasPrefix(id, "slow") {
		select {
		case <-h.release:
		case <-ctx.Done():
			return protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeCancelled, "cancelled"))
		}
	}
	out, _ := protocol.NewEnvelope(protocol.TypeIntentResponse, id, map[string]any{"ok": true})
	return out
}

func (h *slowHandler) ManifestJSON() ([]byte, string) { return []byte(`{"status":"ready"}`), `"1"` }
func (h *slowHandler) MaxMessageBytes() int64         { return 1 << 20 }

func send(t *testing.T, c transport.Conn, typ protocol.MessageType, id string, payload any) {
	t.Helper()
	env, _ := protocol.NewEnvelope(typ, id, payload)
	raw, _ := env.Encode()
	if err := c.WriteMessage(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
}

func recv(t *testing.T, c transport.Conn) protocol.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := c.ReadMessage(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var env protocol.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

func TestSession(t *testing.T) {
	h := &slowHandler{release: make(chan struct{})}
	client, server := transport.NewMemoryPair()
	done := make(chan error, 1)
	go func() { done <- transport.ServeSession(context.Background(), h, server, nil) }()

	if m := recv(t, client); m.Type != protocol.TypeManifest || m.ID != nil {
		t.Fatalf("first message %s, want the manifest with a null id", m.Type)
	}
	// Pipelining: the slow request does not hold up the fast one.
	send(t, client, protocol.TypeIntentRequest, "slow-1", map[string]any{})
	send(t, client, protocol.TypeIntentRequest, "fast-1", map[string]any{})
	if got := recv(t, client); got.IDString() != "fast-1" || got.Type != protocol.TypeIntentResponse {
		t.Fatalf("got %s %s, want fast-1 answered first", got.Type, got.IDString())
	}
	// A second request with an id in flight is refused.
	send(t, client, protocol.TypeIntentRequest, "slow-1", map[string]any{})
	if got := recv(t, client); got.IDString() != "slow-1" || got.Type != protocol.TypeError || !strings.Contains(string(got.Payload), "already in use") {
		t.Fatalf("duplicate id: %s %s", got.Type, got.Payload)
	}
	// cancel -> the cancelled request answers cancelled with its own id.
	send(t, client, protocol.TypeCancel, "", map[string]any{"request_id": "slow-1"})
	if got := recv(t, client); got.IDString() != "slow-1" || !strings.Contains(string(got.Payload), `"cancelled"`) {
		t.Fatalf("after cancel: %s %s", got.Type, got.Payload)
	}
	// Progress comes before the final response of an invocation.
	send(t, client, protocol.TypeInvokeRequest, "inv-1", map[string]any{})
	if got := recv(t, client); got.Type != protocol.TypeProgress || got.IDString() != "inv-1" {
		t.Fatalf("want progress for inv-1, got %s %s", got.Type, got.IDString())
	}
	if got := recv(t, client); got.Type != protocol.TypeIntentResponse || got.IDString() != "inv-1" {
		t.Fatalf("want the final answer of inv-1, got %s", got.Type)
	}
	// EOF: pending answers are still written, then the session ends.
	send(t, client, protocol.TypeIntentRequest, "slow-2", map[string]any{})
	_ = client.Close()
	time.AfterFunc(50*time.Millisecond, func() { close(h.release) })
	if got := recv(t, client); got.IDString() != "slow-2" {
		t.Fatalf("pending answer lost at EOF: %s", got.IDString())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("session did not end at EOF")
	}
}

func TestStdioConnLimits(t *testing.T) {
	in := strings.NewReader("{\"a\":1}\n\n" + strings.Repeat("x", 200) + "\n{\"b\":2}\r\n{\"c\":3}")
	c := transport.NewStdioConn(in, &strings.Builder{}, 100, nil)
	var got []string
	for {
		msg, err := c.ReadMessage(context.Background())
		if err != nil {
			if perr, ok := protocol.AsError(err); ok && perr.Code == protocol.CodeMessageTooLarge {
				got = append(got, "too large")
				continue
			}
			break
		}
		got = append(got, string(msg))
	}
	if strings.Join(got, "|") != `{"a":1}|too large|{"b":2}|{"c":3}` {
		t.Errorf("lines %q", got)
	}
}

// countingHandler records the most requests it ever handled at once.
type countingHandler struct {
	slowHandler
	now, peak atomic.Int32
}

func (h *countingHandler) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	n := h.now.Add(1)
	for {
		p := h.peak.Load()
		if n <= p || h.peak.CompareAndSwap(p, n) {
			break
		}
	}
	defer h.now.Add(-1)
	return h.slowHandler.Handle(ctx, in)
}

// TestSessionConcurrencyIsBounded: a peer pipelining far more requests
// than MaxConcurrent never gets more than that many running.
// The session runs in a synctest bubble: once every goroutine of it is
// blocked, every request that could start has started.
func TestSessionConcurrencyIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &countingHandler{slowHandler: slowHandler{release: make(chan struct{})}}
		client, server := transport.NewMemoryPair()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = transport.ServeSession(context.Background(), h, server, &transport.SessionOptions{MaxConcurrent: 2})
		}()
		recv(t, client) // manifest
		for i := range 20 {
			send(t, client, protocol.TypeIntentRequest, fmt.Sprintf("slow-%d", i), map[string]any{})
		}
		synctest.Wait()
		if p := h.peak.Load(); p != 2 {
			t.Errorf("peak concurrency %d, want 2", p)
		}
		close(h.release)
		for range 20 {
			recv(t, client)
		}
		_ = client.Close()
		<-done
	})
}
