package mcpbridge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
)

// postMCP posts one JSON-RPC message to a streamable HTTP handler (in
// memory, so that it works in a synctest bubble) and returns the status
// and the session id the answer names.
func postMCP(t *testing.T, h http.Handler, session, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Mcp-Session-Id")
}

// openSessions initializes n MCP sessions the way an abandoning host
// does (initialize, initialized, then nothing) and returns their ids.
func openSessions(t *testing.T, url http.Handler, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		status, id := postMCP(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"gone","version":"1"}}}`)
		if status != http.StatusOK || id == "" {
			t.Fatalf("initialize: HTTP %d, session %q", status, id)
		}
		if status, _ := postMCP(t, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
			t.Fatalf("initialized: HTTP %d", status)
		}
		ids[i] = id
	}
	return ids
}

// liveSessions counts the sessions whose id the handler still knows, by
// a ping on each (which restarts an idle timer: call it only once, when
// the test is over).
func liveSessions(t *testing.T, url http.Handler, ids []string) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		switch status, _ := postMCP(t, url, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); status {
		case http.StatusOK:
			n++
		case http.StatusNotFound:
		default:
			t.Fatalf("ping: HTTP %d", status)
		}
	}
	return n
}

// TestHTTPIdleSessionsExpire: sessions a host opens and abandons are
// closed after the idle timeout, their goroutines gone and their ids
// unknown (404), while with no timeout they stay forever. Each runs in a
// synctest bubble: the idle timers run on its virtual clock, and
// synctest.Wait returns once every session's goroutines finished or
// wait.
func TestHTTPIdleSessionsExpire(t *testing.T) {
	const n = 40
	newBridge := func(t *testing.T) *mcpbridge.Bridge {
		fake := newFake()
		b, err := mcpbridge.New(t.Context(), func(ctx context.Context) (*client.Session, error) { return dialFake(ctx, t, fake) }, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}

	t.Run("expire", inBubble(func(t *testing.T) {
		h := newBridge(t).HTTPHandler(&mcp.StreamableHTTPOptions{SessionTimeout: 300 * time.Millisecond})
		synctest.Wait()
		base := runtime.NumGoroutine()
		ids := openSessions(t, h, n)
		// Without touching the sessions, let the bubble's clock pass
		// their idle timeout; their goroutines are then gone.
		time.Sleep(300*time.Millisecond + time.Nanosecond)
		synctest.Wait()
		if g := runtime.NumGoroutine(); g > base+5 {
			t.Fatalf("%d goroutines after the sessions' timeout, %d before them", g, base)
		}
		if live := liveSessions(t, h, ids); live != 0 {
			t.Fatalf("%d of %d abandoned sessions are still open after the idle timeout", live, n)
		}
	}))

	// The control: without a timeout (what HTTPHandler did before), the
	// same abandoned sessions are all still there.
	t.Run("never", inBubble(func(t *testing.T) {
		h := newBridge(t).HTTPHandler(&mcp.StreamableHTTPOptions{SessionTimeout: -1})
		ids := openSessions(t, h, 5)
		time.Sleep(time.Hour)
		synctest.Wait()
		if live := liveSessions(t, h, ids); live != 5 {
			t.Fatalf("%d of 5 sessions open without a timeout", live)
		}
		for _, id := range ids { // the host ends them, or they stay for good
			req := httptest.NewRequest(http.MethodDelete, "/", nil)
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}))
}
