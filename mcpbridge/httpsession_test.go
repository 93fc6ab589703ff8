package mcpbridge_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
)

// postMCP posts one JSON-RPC message to a streamable HTTP endpoint and
// returns the status and the session id the answer names.
func postMCP(t *testing.T, url, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// openSessions initializes n MCP sessions the way an abandoning host
// does (initialize, initialized, then nothing) and returns their ids.
func openSessions(t *testing.T, url string, n int) []string {
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
func liveSessions(t *testing.T, url string, ids []string) int {
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
// unknown (404), while with no timeout they stay forever.
func TestHTTPIdleSessionsExpire(t *testing.T) {
	const n = 40
	fake := newFake()
	b, err := mcpbridge.New(context.Background(), func(ctx context.Context) (*client.Session, error) { return dialFake(ctx, t, fake) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })

	t.Run("expire", func(t *testing.T) {
		srv := httptest.NewServer(b.HTTPHandler(&mcp.StreamableHTTPOptions{SessionTimeout: 300 * time.Millisecond}))
		defer srv.Close()
		base := runtime.NumGoroutine()
		ids := openSessions(t, srv.URL, n)
		// Wait, without touching the sessions, until their goroutines
		// are gone.
		deadline := time.Now().Add(20 * time.Second)
		for runtime.NumGoroutine() > base+5 {
			if time.Now().After(deadline) {
				t.Fatalf("%d goroutines %s after the sessions' timeout, %d before them", runtime.NumGoroutine(), time.Since(deadline.Add(-20*time.Second)), base)
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(400 * time.Millisecond) // every session now idle past its timeout
		if live := liveSessions(t, srv.URL, ids); live != 0 {
			t.Fatalf("%d of %d abandoned sessions are still open after the idle timeout", live, n)
		}
	})

	// The control: without a timeout (what HTTPHandler did before), the
	// same abandoned sessions are all still there.
	t.Run("never", func(t *testing.T) {
		srv := httptest.NewServer(b.HTTPHandler(&mcp.StreamableHTTPOptions{SessionTimeout: -1}))
		defer srv.Close()
		ids := openSessions(t, srv.URL, 5)
		time.Sleep(400 * time.Millisecond)
		if live := liveSessions(t, srv.URL, ids); live != 5 {
			t.Fatalf("%d of 5 sessions open without a timeout", live)
		}
	})
}
