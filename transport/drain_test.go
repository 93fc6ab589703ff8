package transport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// drainingHandler answers every request at once, with server_not_ready
// once draining is set; its manifest says so too.
type drainingHandler struct {
	transport.HandlerDefaults
	draining atomic.Bool
}

func (h *drainingHandler) ManifestJSON() ([]byte, string) {
	if h.draining.Load() {
		return []byte(`{"status":"draining"}`), `"2"`
	}
	return []byte(`{"status":"ready"}`), `"1"`
}

func (h *drainingHandler) MaxMessageBytes() int64 { return 1 << 20 }

func (h *drainingHandler) Handle(_ context.Context, in *protocol.Inbound) *protocol.Envelope {
	env, perr := protocol.DecodeEnvelope(in.Data)
	if perr != nil {
		return protocol.ErrorEnvelope(env.IDString(), perr)
	}
	if h.draining.Load() {
		return protocol.ErrorEnvelope(env.IDString(), protocol.Errorf(protocol.CodeServerNotReady, "the server is draining").WithRetryAfter(1000))
	}
	out, _ := protocol.NewEnvelope(protocol.TypeIntentResponse, env.IDString(), map[string]any{})
	return out
}

// TestDrainAnswersRequestsSentBeforeThePeerKnew: a WebSocket client that
// sends requests back to back while the server starts draining gets an
// answer (its result, or server_not_ready) to every request it sent before
// it read the draining manifest, then the close 1001 (issue 26 item 22:
// 2-16 requests per run got no answer at all).
func TestDrainAnswersRequestsSentBeforeThePeerKnew(t *testing.T) {
	for run := range 5 {
		t.Run(fmt.Sprint("run ", run), func(t *testing.T) {
			h := &drainingHandler{}
			drain := transport.NewDrain()
			srv := httptest.NewServer(transport.NewHTTPHandler(h, &transport.HTTPOptions{Drain: drain}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := dialWS(t, ctx, srv, nil)
			if _, _, err := c.Read(ctx); err != nil { // the first manifest
				t.Fatal(err)
			}
			var (
				learned  atomic.Bool
				mu       sync.Mutex
				unknown  = map[string]bool{} // sent before the client knew, not answered yet
				answered = map[string]protocol.Code{}
				sent     atomic.Int32
			)
			go func() { // the client's sender: back to back until it knows
				for i := 0; !learned.Load(); i++ {
					id := fmt.Sprint("r-", i)
					mu.Lock()
					unknown[id] = true
					mu.Unlock()
					if c.Write(ctx, websocket.MessageText, request(id)) != nil {
						return
					}
					sent.Add(1)
				}
			}()
			closed := make(chan websocket.StatusCode, 1)
			go func() { // the client's reader
				for {
					_, raw, err := c.Read(ctx)
					if err != nil {
						closed <- websocket.CloseStatus(err)
						return
					}
					var env struct {
						Type    protocol.MessageType `json:"type"`
						ID      *string              `json:"id"`
						Payload struct {
							Status string        `json:"status"`
							Code   protocol.Code `json:"code"`
						} `json:"payload"`
					}
					if json.Unmarshal(raw, &env) != nil {
						continue
					}
					if env.Type == protocol.TypeManifest && env.Payload.Status == "draining" {
						learned.Store(true)
						continue
					}
					if env.ID != nil {
						mu.Lock()
						delete(unknown, *env.ID)
						answered[*env.ID] = env.Payload.Code
						mu.Unlock()
					}
				}
			}()
			testenv.Eventually(t, 10*time.Second, "50 requests sent", func() bool { return sent.Load() >= 50 })
			h.draining.Store(true)
			drain.Start()
			select {
			case status := <-closed:
				if status != websocket.StatusGoingAway {
					t.Errorf("closed with %v, want 1001", status)
				}
			case <-ctx.Done():
				t.Fatal("the session did not close")
			}
			mu.Lock()
			defer mu.Unlock()
			refused := 0
			for _, code := range answered {
				if code == protocol.CodeServerNotReady {
					refused++
				}
			}
			if len(unknown) > 0 {
				t.Errorf("%d requests sent before the client knew of the drain got no answer (of %d sent, %d answered, %d server_not_ready)",
					len(unknown), sent.Load(), len(answered), refused)
			}
			t.Logf("%d sent, %d answered, %d of them server_not_ready", sent.Load(), len(answered), refused)
		})
	}
}
