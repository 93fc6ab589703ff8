package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// TestServeDrainAnswersEveryWebSocketRequest: a WebSocket client of the
// real server sends intent requests back to back while the server is told
// to stop (ctx ends, as on SIGTERM). Every request it sent before it read
// the draining manifest gets an answer (a response, or server_not_ready),
// then the session closes with 1001 (issue 26 item 22: 2-16 requests per
// run got no answer at all).
func TestServeDrainAnswersEveryWebSocketRequest(t *testing.T) {
	for run := range 3 {
		t.Run(fmt.Sprint("run ", run), func(t *testing.T) {
			addr, stop := start(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, "ws://"+addr+"/manglecp/ws", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			c.SetReadLimit(-1)
			if _, _, err := c.Read(ctx); err != nil {
				t.Fatal(err)
			}
			var (
				learned atomic.Bool
				sent    atomic.Int32
				mu      sync.Mutex
				pending = map[string]bool{}
				codes   = map[string]int{}
			)
			go func() {
				for i := 0; !learned.Load(); i++ {
					id := fmt.Sprint("r-", i)
					env, _ := protocol.NewEnvelope(protocol.TypeIntentRequest, id, map[string]any{
						"intent": map[string]any{"name": "observe"},
						"facts":  []any{map[string]any{"pred": "current_url", "args": []any{"https://app.example.com/"}}},
					})
					raw, _ := env.Encode()
					mu.Lock()
					pending[id] = true
					mu.Unlock()
					if c.Write(ctx, websocket.MessageText, raw) != nil {
						return
					}
					sent.Add(1)
				}
			}()
			closed := make(chan websocket.StatusCode, 1)
			go func() {
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
							Status string `json:"status"`
							Code   string `json:"code"`
						} `json:"payload"`
					}
					if json.Unmarshal(raw, &env) != nil {
						continue
					}
					if env.Type == protocol.TypeManifest && env.Payload.Status == string(protocol.StatusDraining) {
						learned.Store(true)
						continue
					}
					if env.ID != nil {
						code := env.Payload.Code
						if code == "" {
							code = "ok"
						}
						mu.Lock()
						delete(pending, *env.ID)
						codes[code]++
						mu.Unlock()
					}
				}
			}()
			testenv.Eventually(t, 10*time.Second, "20 requests sent", func() bool { return sent.Load() >= 20 })
			go stop()
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
			if len(pending) > 0 {
				t.Errorf("%d of %d requests sent before the client knew of the drain got no answer (answers: %v)", len(pending), sent.Load(), codes)
			}
			t.Logf("%d sent, answers %v", sent.Load(), codes)
		})
	}
}
