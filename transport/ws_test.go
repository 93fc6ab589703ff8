package transport_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

func TestWebSocket(t *testing.T) {
	h := &slowHandler{release: make(chan struct{})}
	srv := httptest.NewServer(transport.NewHTTPHandler(h, &transport.HTTPOptions{WS: &transport.WSOptions{PingInterval: 20 * time.Millisecond}}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pings atomic.Int32
	c := dialWS(t, ctx, srv, &websocket.DialOptions{
		OnPingReceived: func(context.Context, []byte) bool { pings.Add(1); return true },
	})
	// One reader, so that pings are answered while the test waits.
	type frame struct {
		typ websocket.MessageType
		raw []byte
		err error
	}
	frames := make(chan frame, 8) // the reader never blocks on its last frames
	go func() {
		for {
			typ, raw, err := c.Read(ctx)
			frames <- frame{typ, raw, err}
			if err != nil {
				return
			}
		}
	}()
	read := func() protocol.Envelope {
		t.Helper()
		f := <-frames
		if f.err != nil {
			t.Fatalf("read: %v", f.err)
		}
		if f.typ != websocket.MessageText {
			t.Fatal("binary frame")
		}
		var env protocol.Envelope
		_ = json.Unmarshal(f.raw, &env)
		return env
	}
	if m := read(); m.Type != protocol.TypeManifest {
		t.Fatalf("first frame %s", m.Type)
	}
	// Idle: the server pings (the client answers pongs); the session stays up.
	testenv.Eventually(t, 5*time.Second, "three pings", func() bool { return pings.Load() >= 3 })
	env, _ := protocol.NewEnvelope(protocol.TypeIntentRequest, "fast-1", map[string]any{})
	raw, _ := env.Encode()
	if err := c.Write(ctx, websocket.MessageText, raw); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.IDString() != "fast-1" {
		t.Fatalf("answer %s", got.IDString())
	}
	// A frame over MaxMessageBytes: message_too_large, then close 1009.
	if err := c.Write(ctx, websocket.MessageText, []byte(strings.Repeat(" ", 2<<20))); err != nil {
		t.Fatal(err)
	}
	if got := read(); !strings.Contains(string(got.Payload), "message_too_large") {
		t.Fatalf("oversized frame: %s", got.Payload)
	}
	err := (<-frames).err
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("close status %v (%v), want 1009", websocket.CloseStatus(err), err)
	}
}

// TestWebSocketPingsWhenIdle: an idle session is pinged every
// PingInterval (the spec asks for at most 30 s; the test uses 20 ms).
func TestWebSocketPingsWhenIdle(t *testing.T) {
	h := &slowHandler{release: make(chan struct{})}
	srv := httptest.NewServer(transport.NewHTTPHandler(h, &transport.HTTPOptions{WS: &transport.WSOptions{PingInterval: 20 * time.Millisecond}}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var pings atomic.Int32
	c := dialWS(t, ctx, srv, &websocket.DialOptions{
		OnPingReceived: func(context.Context, []byte) bool { pings.Add(1); return true },
	})
	readCtx, stop := context.WithCancel(ctx)
	go func() { // keep reading so control frames are handled
		for {
			if _, _, err := c.Read(readCtx); err != nil {
				return
			}
		}
	}()
	// The interval is the server's clock, not checked here: pings keep
	// coming while the session is idle and the client answers them.
	if !testenv.Poll(5*time.Second, func() bool { return pings.Load() >= 3 }) {
		t.Errorf("%d pings while idle at a 20 ms interval", pings.Load())
	}
	stop()
}
