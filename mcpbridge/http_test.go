package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// The streamable HTTP transport of the bridge (http.go): per-peer and
// total session bounds, idle sessions, and MCP 2026-07-28's stateless
// requests beside 2025-11-25's sessions.

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`

// testPeer is the peer address of the tests' requests that do not test
// per-peer bounds.
const testPeer = "192.0.2.1"

// postFrom posts one JSON-RPC message to a streamable HTTP handler (in
// memory, so that it works in a synctest bubble) as peer (its
// RemoteAddr), with the given headers, and returns the recorder.
func postFrom(h http.Handler, peer, session, body string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.RemoteAddr = peer + ":40000"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// registryError decodes the JSON-RPC error the bridge answers itself.
func registryError(t *testing.T, rec *httptest.ResponseRecorder) protocol.Error {
	t.Helper()
	var body struct {
		Error struct {
			Data protocol.Error `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("HTTP %d %q: %v", rec.Code, rec.Body.String(), err)
	}
	return body.Error.Data
}

// newTestBridge is a bridge to fake, closed when the test ends.
func newTestBridge(t *testing.T, fake *fakeServer, opts *mcpbridge.Options) *mcpbridge.Bridge {
	t.Helper()
	b, err := mcpbridge.New(t.Context(), func(ctx context.Context) (*client.Session, error) { return dialFake(ctx, t, fake) }, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// serveHTTP serves b over streamable HTTP on a local listener until the
// test ends and returns its URL.
func serveHTTP(t *testing.T, b *mcpbridge.Bridge) string {
	srv := httptest.NewServer(b.HTTPHandler(nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// connectHTTP connects a host speaking MCP version v to the bridge at
// url, which answers elicitation with elicit. The caller closes it.
func connectHTTP(ctx context.Context, t *testing.T, url, v string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

// TestHTTPSessionsBounded: `manglecp mcp --http` bounds its MCP sessions
// per peer address and in all, on the bridge's clock: a peer past its
// bound gets 429 rate_limited with Retry-After (when its oldest idle
// session times out) while another peer still opens sessions; past the
// idle timeout the idle sessions are closed (their ids answer 404) and
// room is made. Before, one local client opened 21,604 sessions in 60 s
// (32 -> 822 MB RSS), each kept 30 minutes.
func TestHTTPSessionsBounded(t *testing.T) {
	b := newTestBridge(t, newFake(), nil)
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	mcpbridge.SetClock(b, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := b.HTTP(mcpbridge.HTTPOptions{SessionTimeout: time.Minute, MaxSessions: 6, MaxSessionsPerPeer: 3})

	open := func(peer string) (*httptest.ResponseRecorder, string) {
		rec := postFrom(h, peer, "", initializeBody, nil)
		return rec, rec.Header().Get("Mcp-Session-Id")
	}
	var a []string
	for range 3 {
		rec, id := open("192.0.2.1")
		if rec.Code != http.StatusOK || id == "" {
			t.Fatalf("initialize: HTTP %d %s", rec.Code, rec.Body)
		}
		a = append(a, id)
		advance(10 * time.Second)
	}
	rec, _ := open("192.0.2.1")
	if e := registryError(t, rec); rec.Code != http.StatusTooManyRequests || e.Code != protocol.CodeRateLimited || rec.Header().Get("Retry-After") != "30" {
		t.Fatalf("a 4th session of one peer: HTTP %d %+v Retry-After %q; want 429 rate_limited, 30 s (its oldest idles out then)", rec.Code, e, rec.Header().Get("Retry-After"))
	}
	// Another peer is not affected; an IPv6 host counts by its /64.
	for _, peer := range []string{"[2001:db8::1]", "[2001:db8::2]", "[2001:db8::3]"} {
		if rec, _ := open(peer); rec.Code != http.StatusOK {
			t.Fatalf("another peer's session: HTTP %d", rec.Code)
		}
	}
	if rec, _ := open("[2001:db8::4]"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a 4th session of one /64: HTTP %d, want 429", rec.Code)
	}
	// The bridge's bound: 6 in all.
	if rec, _ := open("198.51.100.7"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("a 7th session: HTTP %d, want 429", rec.Code)
	}
	// A session in use stays; the idle ones are closed after the timeout.
	advance(50 * time.Second)
	if rec := postFrom(h, "192.0.2.1", a[2], `{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil); rec.Code != http.StatusOK {
		t.Fatalf("ping: HTTP %d", rec.Code)
	}
	advance(30 * time.Second)
	if rec, _ := open("198.51.100.7"); rec.Code != http.StatusOK {
		t.Fatalf("after the idle timeout: HTTP %d %s", rec.Code, rec.Body)
	}
	for i, id := range a {
		want := http.StatusNotFound
		if i == 2 {
			want = http.StatusOK
		}
		if rec := postFrom(h, "192.0.2.1", id, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, nil); rec.Code != want {
			t.Errorf("session %d after the timeout: HTTP %d, want %d", i, rec.Code, want)
		}
	}
}

// TestHTTPBearerToken: with a token, every request must carry it
// (constant-time compare) before any MCP processing: none is 401
// auth_required with WWW-Authenticate, another is 401 auth_invalid, and
// the right one gets MCP. Before, `manglecp mcp --http` had no
// authentication of its own: in front of a server that requires a token,
// any local or network host used the bridge's credential.
func TestHTTPBearerToken(t *testing.T) {
	b := newTestBridge(t, newFake(), nil)
	const token = "a-long-random-bridge-token-7f3c"
	h := b.HTTP(mcpbridge.HTTPOptions{Token: token})
	for _, tt := range []struct {
		name, header string
		code         protocol.Code
	}{
		{"none", "", protocol.CodeAuthRequired},
		{"basic", "Basic dXNlcjpwYXNz", protocol.CodeAuthRequired},
		{"wrong", "Bearer " + token + "x", protocol.CodeAuthInvalid},
		{"prefix", "Bearer " + token[:10], protocol.CodeAuthInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.header != "" {
				hdr["Authorization"] = tt.header
			}
			for _, version := range hostVersions {
				hdr["Mcp-Protocol-Version"] = version
				rec := postFrom(h, "127.0.0.1", "", initializeBody, hdr)
				if e := registryError(t, rec); rec.Code != http.StatusUnauthorized || e.Code != tt.code || rec.Header().Get("WWW-Authenticate") == "" {
					t.Fatalf("%s: HTTP %d %+v, want 401 %s", version, rec.Code, e, tt.code)
				}
				if rec.Header().Get("Mcp-Session-Id") != "" {
					t.Fatal("a session was opened")
				}
			}
		})
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, v := range hostVersions {
		cl := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
		hc := &http.Client{Transport: bearer{token}}
		cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: v})
		if err != nil {
			t.Fatalf("%s with the token: %v", v, err)
		}
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Errorf("%s tools/list: %v", v, err)
		}
		_ = cs.Close()
	}
}

// bearer adds a bearer token to each request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// asPeer makes the handler see requests from the address in X-Test-Peer.
func asPeer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.Header.Get("X-Test-Peer"); p != "" {
			r.RemoteAddr = p + ":40000"
		}
		h.ServeHTTP(w, r)
	})
}

type peerHeader struct{ peer string }

func (p peerHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Peer", p.peer)
	return http.DefaultTransport.RoundTrip(r)
}

// TestConsentBudgetPerHost: over stateless MCP (2026-07-28), one host
// or a crowd of them leaving over 1,024 confirmation questions
// unanswered, before and while another host's user decides, does not stop
// that host's confirmed call: each host's questions count against its own
// budget (its address), and a full ledger drops the largest holder's
// oldest question. Before, 1,024 unanswered questions filled the bridge-wide
// ledger and every other host got rate_limited for 10 minutes.
func TestConsentBudgetPerHost(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(selects(tool("write_report", true)))
	var mu sync.Mutex
	ran := 0
	fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		if _, err := protocol.VerifyConfirmationToken([]byte("0123456789abcdef"), req.ConfirmationToken, req.MacroID); err != nil {
			return nil, protocol.Errorf(protocol.CodeConfirmationRequired, "confirm")
		}
		mu.Lock()
		ran++
		mu.Unlock()
		return &protocol.InvokeResponse{Result: map[string]any{"ok": true}, Observability: protocol.Observability{Summary: "ran"}}, nil
	})
	b := newTestBridge(t, fake, &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")})
	srv := httptest.NewServer(asPeer(b.HTTPHandler(nil)))
	defer srv.Close()
	connect := func(peer string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
		cl := mcp.NewClient(&mcp.Implementation{Name: peer, Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
		cs, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: peerHeader{peer}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	args := &mcp.CallToolParams{Name: mcpbridge.MetaToolName, Arguments: map[string]any{"tool": "write_report", "arguments": map[string]any{"target": "r"}}}

	// The flood: 17 addresses each leave 61 questions unanswered (the
	// host's elicitation fails, so no answer comes back): over the 1,024
	// the bridge holds in all, before the other host asks and again while
	// its user is deciding.
	var floods []*mcp.ClientSession
	for i := range 17 {
		f := connect(fmt.Sprintf("203.0.113.%d", i+1), func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not answering")
		})
		if _, err := f.CallTool(t.Context(), &mcp.CallToolParams{Name: "diagnose", Arguments: diagnoseArgs}); err != nil {
			t.Fatal(err)
		}
		floods = append(floods, f)
	}
	flood := func() {
		for _, f := range floods {
			for range 61 {
				_, _ = f.CallTool(t.Context(), args)
			}
		}
	}
	flood()
	host := connect("192.0.2.10", func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		flood()
		return accept(ctx, r)
	})
	if _, err := host.CallTool(t.Context(), &mcp.CallToolParams{Name: "diagnose", Arguments: diagnoseArgs}); err != nil {
		t.Fatal(err)
	}
	res, err := host.CallTool(t.Context(), args)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.HasPrefix(text(res), "ran") {
		t.Fatalf("the other host's confirmed call: %s", text(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if ran != 1 {
		t.Errorf("ran %d times, want 1", ran)
	}
}

// openSessions initializes n MCP sessions the way an abandoning host
// does (initialize, initialized, then nothing) and returns their ids.
func openSessions(t *testing.T, h http.Handler, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		rec := postFrom(h, testPeer, "", initializeBody, nil)
		id := rec.Header().Get("Mcp-Session-Id")
		if rec.Code != http.StatusOK || id == "" {
			t.Fatalf("initialize: HTTP %d, session %q", rec.Code, id)
		}
		if rec := postFrom(h, testPeer, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); rec.Code != http.StatusAccepted {
			t.Fatalf("initialized: HTTP %d", rec.Code)
		}
		ids[i] = id
	}
	return ids
}

// liveSessions counts the sessions whose id the handler still knows, by
// a ping on each (which restarts an idle timer: call it only once, when
// the test is over).
func liveSessions(t *testing.T, h http.Handler, ids []string) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		switch status := postFrom(h, testPeer, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil).Code; status {
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

	t.Run("expire", inBubble(func(t *testing.T) {
		h := newTestBridge(t, newFake(), nil).HTTPHandler(&mcp.StreamableHTTPOptions{SessionTimeout: 300 * time.Millisecond})
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
		h := newTestBridge(t, newFake(), nil).HTTPHandler(&mcp.StreamableHTTPOptions{SessionTimeout: -1})
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

// TestModernMCPOverHTTP: one --http endpoint serves MCP 2026-07-28
// (server/discover, stateless requests, multi round-trip elicitation
// whose answer comes in a new request, cache hints) beside 2025-11-25
// (initialize, Mcp-Session-Id).
func TestModernMCPOverHTTP(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(selects(tool("trace_request", false), tool("write_report", true)))
	var mu sync.Mutex
	ran := 0
	fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		if req.MacroID == "write_report-0001" {
			if _, err := protocol.VerifyConfirmationToken([]byte("0123456789abcdef"), req.ConfirmationToken, req.MacroID); err != nil {
				return nil, protocol.Errorf(protocol.CodeConfirmationRequired, "write_report requires user confirmation")
			}
		}
		mu.Lock()
		ran++
		mu.Unlock()
		return &protocol.InvokeResponse{Result: map[string]any{"ok": true}, Observability: protocol.Observability{Summary: "ran " + req.MacroID}}, nil
	})
	url := serveHTTP(t, newTestBridge(t, fake, &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")}))
	for _, v := range hostVersions {
		t.Run(v, func(t *testing.T) {
			asked := 0
			cctx, ccancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer ccancel()
			cs := connectHTTP(cctx, t, url, v, func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				return accept(ctx, r)
			})
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			list, err := cs.ListTools(cctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v >= "2026-07-28" && (list.TTLMs != 300000 || list.CacheScope != "public") {
				t.Errorf("tools/list cache hints ttlMs %d cacheScope %q", list.TTLMs, list.CacheScope)
			}
			call := func(name string, args map[string]any) string {
				res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if res.IsError {
					t.Fatalf("%s: %s", name, text(res))
				}
				return text(res)
			}
			if got := call("diagnose", diagnoseArgs); !strings.Contains(got, "trace_request(target*: string)") {
				t.Errorf("diagnose: %s", got)
			}
			if got := call(mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": "r1"}}); !strings.HasPrefix(got, "ran trace_request-0001") {
				t.Errorf("trace_request: %s", got)
			}
			mu.Lock()
			before := ran
			mu.Unlock()
			if got := call(mcpbridge.MetaToolName, map[string]any{"tool": "write_report", "arguments": map[string]any{"target": "r1"}}); !strings.HasPrefix(got, "ran write_report-0001") {
				t.Errorf("write_report: %s", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if asked != 1 || ran != before+1 {
				t.Errorf("asked %d times, ran %d times; want 1 and 1", asked, ran-before)
			}
		})
	}
}
