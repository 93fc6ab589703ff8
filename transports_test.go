package manglecp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// wire sends one request and returns its final answer (progress skipped),
// and reports the manifest the transport delivered.
type wire interface {
	manifest(t *testing.T) protocol.Envelope
	roundTrip(t *testing.T, typ protocol.MessageType, msg []byte) protocol.Envelope
}

type httpWire struct{ h *harness }

func (w httpWire) manifest(t *testing.T) protocol.Envelope {
	req, _ := http.NewRequest(http.MethodGet, w.h.http.URL+transport.ManifestPath, nil)
	return w.h.do(req).env
}

func (w httpWire) roundTrip(t *testing.T, typ protocol.MessageType, msg []byte) protocol.Envelope {
	path := "/manglecp/evaluate"
	if typ == protocol.TypeInvokeRequest {
		path = "/manglecp/invoke"
	}
	return w.h.post(path, msg, nil).env
}

// sessionWire talks to a session transport through read and write funcs.
type sessionWire struct {
	first protocol.Envelope
	write func(msg []byte) error
	read  func() ([]byte, error)
}

func newSessionWire(t *testing.T, write func([]byte) error, read func() ([]byte, error)) *sessionWire {
	w := &sessionWire{write: write, read: read}
	w.first = w.next(t)
	return w
}

func (w *sessionWire) next(t *testing.T) protocol.Envelope {
	t.Helper()
	raw, err := w.read()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var env protocol.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("not an envelope: %s", raw)
	}
	return env
}

func (w *sessionWire) manifest(t *testing.T) protocol.Envelope { return w.first }

func (w *sessionWire) roundTrip(t *testing.T, _ protocol.MessageType, msg []byte) protocol.Envelope {
	t.Helper()
	if err := w.write(msg); err != nil {
		t.Fatal(err)
	}
	for {
		env := w.next(t)
		if env.Type != protocol.TypeProgress {
			return env
		}
	}
}

// memorySession serves h's server over an in-memory pair for the test's
// lifetime and returns the client side, past the manifest.
func memorySession(t *testing.T, h *harness) *sessionWire {
	t.Helper()
	client, server := transport.NewMemoryPair()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = transport.ServeSession(ctx, h.srv, server, nil) }()
	return newSessionWire(t, func(b []byte) error { return client.WriteMessage(ctx, b) }, func() ([]byte, error) {
		rctx, rc := context.WithTimeout(ctx, 10*time.Second)
		defer rc()
		return client.ReadMessage(rctx)
	})
}

// stdioSession serves h's server over stdio on pipes, in process, until
// ctx ends; it returns the function that writes a message as one line
// and the reader of the answer lines.
func stdioSession(t *testing.T, ctx context.Context, h *harness, opts *transport.SessionOptions) *sessionWire {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		_ = transport.ServeSession(ctx, h.srv, transport.NewStdioConn(inR, outW, h.srv.MaxMessageBytes(), nil), opts)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close() })
	lines := bufio.NewReader(outR)
	return newSessionWire(t,
		func(m []byte) error { _, err := inW.Write(append(append([]byte(nil), m...), '\n')); return err },
		func() ([]byte, error) {
			type res struct {
				b   []byte
				err error
			}
			ch := make(chan res, 1)
			go func() { b, err := lines.ReadBytes('\n'); ch <- res{bytes.TrimSuffix(b, []byte("\n")), err} }()
			select {
			case r := <-ch:
				return r.b, r.err
			case <-time.After(10 * time.Second):
				return nil, fmt.Errorf("no stdio answer within 10s")
			}
		})
}

// wsSession is a WebSocket session to h's server with header, closed when
// t ends; a binary frame fails t.
func wsSession(t *testing.T, ctx context.Context, h *harness, header http.Header) *sessionWire {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.http.URL, "http")+"/manglecp/ws", &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	c.SetReadLimit(64 << 20)
	return newSessionWire(t,
		func(m []byte) error { return c.Write(ctx, websocket.MessageText, m) },
		func() ([]byte, error) {
			rctx, rc := context.WithTimeout(ctx, 10*time.Second)
			defer rc()
			typ, b, err := c.Read(rctx)
			if err == nil && typ != websocket.MessageText {
				t.Errorf("binary frame")
			}
			return b, err
		})
}

// wires starts the server behind every transport.
func wires(t *testing.T) map[string]wire {
	h := newHarness(t, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := map[string]wire{"http": httpWire{h}}

	// WebSocket on the same listener.
	out["websocket"] = wsSession(t, ctx, h, nil)
	// stdio: lines over pipes, served in process.
	out["stdio"] = stdioSession(t, ctx, h, nil)
	// The in-memory pair.
	out["memory"] = memorySession(t, h)
	return out
}

// TestTransportsBehaveAlike runs one suite over HTTP, WebSocket, stdio and
// the in-memory pair: the same manifest, the same macro-tools, the same
// invocation result and the same errors.
func TestTransportsBehaveAlike(t *testing.T) {
	ws := wires(t)
	type outcome struct{ manifest, eval, invoke, badVersion, badFacts string }
	results := map[string]outcome{}
	for name, w := range ws {
		t.Run(name, func(t *testing.T) {
			var o outcome
			m := w.manifest(t)
			if m.Type != protocol.TypeManifest || m.ID != nil {
				t.Fatalf("manifest %s", m.Type)
			}
			o.manifest = string(m.Payload)

			ev := w.roundTrip(t, protocol.TypeIntentRequest, envelope(t, protocol.TypeIntentRequest, "e-"+name, diagnoseRequest()))
			if ev.Type != protocol.TypeIntentResponse || ev.IDString() != "e-"+name {
				t.Fatalf("evaluate: %s %s", ev.Type, ev.Payload)
			}
			var ir protocol.IntentResponse
			_ = json.Unmarshal(ev.Payload, &ir)
			var id string
			for _, mt := range ir.MacroTools {
				o.eval += mt.MacroID + " "
				if mt.Name == "diagnose_causal_chain" {
					id = mt.MacroID
				}
			}
			inv := w.roundTrip(t, protocol.TypeInvokeRequest, envelope(t, protocol.TypeInvokeRequest, "i-"+name,
				map[string]any{"macro_id": id, "args": map[string]any{"request_id": "r42"}}))
			if inv.Type != protocol.TypeInvokeResponse {
				t.Fatalf("invoke: %s %s", inv.Type, inv.Payload)
			}
			var out protocol.InvokeResponse
			_ = json.Unmarshal(inv.Payload, &out)
			o.invoke = mustJSON(out.Result)

			bad := w.roundTrip(t, protocol.TypeIntentRequest, []byte(`{"type":"intent_request","id":"v-1","manglecp":"1999-01-draft","payload":{}}`))
			o.badVersion = bad.IDString() + string(bad.Payload)
			facts := w.roundTrip(t, protocol.TypeIntentRequest, envelope(t, protocol.TypeIntentRequest, "f-1",
				map[string]any{"intent": map[string]any{"name": "observe"}, "facts": []any{map[string]any{"pred": "current_url", "args": []any{1}}}}))
			o.badFacts = facts.IDString() + string(facts.Payload)
			results[name] = o
		})
	}
	want := results["http"]
	for name, got := range results {
		if got != want {
			t.Errorf("%s differs from http:\n%+v\nvs\n%+v", name, got, want)
		}
	}
}

// TestCancelOverSession cancels a running invocation of the real server
// over a session transport: the answer is the cancelled error with the
// request's id, and the action stopped.
func TestCancelOverSession(t *testing.T) {
	started := make(chan struct{})
	h := newHarness(t, faultDomain(started), nil)
	resp := h.evaluate("e", map[string]any{"intent": map[string]any{"name": "fault"},
		"facts": []any{map[string]any{"pred": "fault", "args": []any{"slow"}}}, "options": map[string]any{"disclosure_preference": "full"}}).intentResponse(t)
	m := tool(t, resp, "slow")
	w := memorySession(t, h)
	if err := w.write(envelope(t, protocol.TypeInvokeRequest, "slow-1", map[string]any{"macro_id": m.MacroID, "args": map[string]any{}})); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := w.write(envelope(t, protocol.TypeCancel, "", map[string]any{"request_id": "slow-1"})); err != nil {
		t.Fatal(err)
	}
	got := w.next(t)
	if got.Type != protocol.TypeError || got.IDString() != "slow-1" || !strings.Contains(string(got.Payload), `"cancelled"`) {
		t.Fatalf("after cancel: %s %s", got.Type, got.Payload)
	}
}
