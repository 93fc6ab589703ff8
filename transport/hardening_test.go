package transport_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// guarded is a handler that requires the token "secret": it checks
// credentials before a message is read (Handler.Authenticate), answers
// authenticate messages, serves one skill, and answers requests with a
// reply of replySize bytes after waiting for release (when set). It counts
// the requests it saw and those whose context ended.
type guarded struct {
	transport.HandlerDefaults
	replySize int
	release   chan struct{}
	handled   atomic.Int32
	cancelled atomic.Int32
	running   atomic.Int32
}

func (g *guarded) ManifestJSON() ([]byte, string) { return []byte(`{"status":"ready"}`), `"1"` }
func (g *guarded) MaxMessageBytes() int64         { return 16 << 20 }
func (g *guarded) AuthRequired() bool             { return true }

func (g *guarded) Authenticate(_ context.Context, c *protocol.Credentials, _ string) (*protocol.Caller, *protocol.Error) {
	if c == nil || c.Token == "" {
		return nil, protocol.Errorf(protocol.CodeAuthRequired, "authentication required")
	}
	if c.Token != "secret" {
		return nil, protocol.Errorf(protocol.CodeAuthInvalid, "the credentials are invalid")
	}
	return &protocol.Caller{Identity: "holder"}, nil
}

func (g *guarded) SkillJSON(id string) ([]byte, bool) {
	if id == "known" {
		return []byte(`{"id":"known"}`), true
	}
	return nil, false
}

func (g *guarded) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	g.handled.Add(1)
	env, perr := protocol.DecodeEnvelope(in.Data)
	if perr != nil {
		return protocol.ErrorEnvelope(env.IDString(), perr)
	}
	id := env.IDString()
	if env.Type == protocol.TypeAuthenticate {
		var a protocol.Authenticate
		_ = protocol.DecodePayload(env.Payload, &a)
		if a.Token != "secret" {
			return protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeAuthInvalid, "no"))
		}
		out, _ := protocol.NewEnvelope(protocol.TypeAuthenticateResponse, id, map[string]any{"status": "authenticated"})
		return out
	}
	if in.Caller == nil { // a session's request: the transport left it to us
		if _, perr := g.Authenticate(ctx, in.Credentials, in.Peer); perr != nil {
			return protocol.ErrorEnvelope(id, perr)
		}
	}
	g.running.Add(1)
	defer g.running.Add(-1)
	if g.release != nil {
		select {
		case <-g.release:
		case <-ctx.Done():
			g.cancelled.Add(1)
			return protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeCancelled, "cancelled"))
		}
	}
	out, _ := protocol.NewEnvelope(protocol.TypeIntentResponse, id, map[string]any{"blob": strings.Repeat("b", g.replySize)})
	return out
}

func wsURL(srv *httptest.Server) string {
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/manglecp/ws"
}

// dialWS opens a WebSocket session to srv with opts, closed when t ends;
// a failed dial fails t.
func dialWS(t *testing.T, ctx context.Context, srv *httptest.Server, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, wsURL(srv), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func request(id string) []byte {
	env, _ := protocol.NewEnvelope(protocol.TypeIntentRequest, id, map[string]any{"intent": map[string]any{"name": "observe"}})
	raw, _ := env.Encode()
	return raw
}

// doStatus sends req with c and returns the response and its body, which
// it read and closed; an answer other than status fails t.
func doStatus(t *testing.T, c *http.Client, req *http.Request, status int) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, raw)
	}
	return resp, raw
}

func decodeError(t *testing.T, raw []byte) *protocol.Error {
	t.Helper()
	var env struct {
		Type    string         `json:"type"`
		Payload protocol.Error `json:"payload"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Type != "error" {
		t.Fatalf("not an error envelope (%v): %.300s", err, raw)
	}
	return &env.Payload
}

// TestHTTPAuthenticatesBeforeReadingTheBody: with auth on, a request
// without valid credentials is answered 401 from its headers alone; the
// 4 MB body it announces is never read (issue 9 item 1), and the 401
// carries WWW-Authenticate (item 4).
func TestHTTPAuthenticatesBeforeReadingTheBody(t *testing.T) {
	srv := httptest.NewServer(transport.NewHTTPHandler(&guarded{}, nil))
	defer srv.Close()
	for _, tc := range []struct {
		name, header, prefix, id string
		code                     protocol.Code
		challenge                string
	}{
		{"no credentials", "", "", "", protocol.CodeAuthRequired, `Bearer realm="manglecp"`},
		{"wrong token", "Authorization: Bearer wrong\r\n", "", "", protocol.CodeAuthInvalid, `Bearer realm="manglecp", error="invalid_token"`},
		{"the id of the first bytes is echoed", "", `{"type":"intent_request","id":"early","manglecp":"`, "early", protocol.CodeAuthRequired, `Bearer realm="manglecp"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "POST /manglecp/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s", tc.header, 4<<20, tc.prefix)
			// Only the headers were sent: an answer now proves the body was not awaited.
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer before the body was sent: %v", err)
			}
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 401 || decodeError(t, raw).Code != tc.code {
				t.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
			var env protocol.Envelope
			_ = json.Unmarshal(raw, &env)
			if env.IDString() != tc.id {
				t.Errorf("id %q, want %q", env.IDString(), tc.id)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
		})
	}
}

// TestHTTPEveryAnswerIsAnEnvelope: unknown paths, wrong methods,
// uncleaned paths (no redirect), the WebSocket endpoint without an
// upgrade, a POST without Content-Type application/json, a foreign Host
// and a refused CORS preflight are all answered with a registry envelope
// whose status is the registry's (issue 9 items 4 and 9).
func TestHTTPEveryAnswerIsAnEnvelope(t *testing.T) {
	h := &guarded{}
	srv := httptest.NewServer(transport.NewHTTPHandler(h, &transport.HTTPOptions{
		AllowedHosts:   []string{"127.0.0.1", "localhost"},
		AllowedOrigins: []string{"https://app.example"},
	}))
	defer srv.Close()
	auth := map[string]string{"Authorization": "Bearer secret"}
	for _, tc := range []struct {
		name, method, path, ctype string
		header                    map[string]string
		status                    int
		code                      protocol.Code
	}{
		{"unknown path", "GET", "/elsewhere", "", nil, 404, protocol.CodeNotFound},
		{"unknown path under the base", "POST", "/manglecp/nothing", "application/json", auth, 404, protocol.CodeNotFound},
		{"uncleaned path is not redirected", "POST", "/manglecp//evaluate", "application/json", auth, 404, protocol.CodeNotFound},
		{"trailing slash is not redirected", "GET", "/manglecp/skills/", "", auth, 404, protocol.CodeNotFound},
		{"evaluate by GET", "GET", "/manglecp/evaluate", "", auth, 405, protocol.CodeMethodNotAllowed},
		{"manifest by POST", "POST", transport.ManifestPath, "application/json", nil, 405, protocol.CodeMethodNotAllowed},
		{"skill by POST", "POST", "/manglecp/skills/known", "application/json", auth, 405, protocol.CodeMethodNotAllowed},
		{"websocket without upgrade", "GET", "/manglecp/ws", "", auth, 426, protocol.CodeUpgradeRequired},
		{"POST without Content-Type", "POST", "/manglecp/evaluate", "", auth, 415, protocol.CodeUnsupportedMediaType},
		{"POST as text/plain", "POST", "/manglecp/evaluate", "text/plain", auth, 415, protocol.CodeUnsupportedMediaType},
		{"POST as a form", "POST", "/manglecp/invoke", "application/x-www-form-urlencoded", auth, 415, protocol.CodeUnsupportedMediaType},
		{"foreign Host (DNS rebinding)", "GET", transport.ManifestPath, "", map[string]string{"Host": "evil.example"}, 421, protocol.CodeHostNotAllowed},
		{"foreign Host with a port", "POST", "/manglecp/evaluate", "application/json", map[string]string{"Host": "evil.example:8080", "Authorization": "Bearer secret"}, 421, protocol.CodeHostNotAllowed},
		{"refused CORS preflight", "OPTIONS", "/manglecp/evaluate", "", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, 403, protocol.CodeOriginNotAllowed},
		{"skill without credentials", "GET", "/manglecp/skills/known", "", nil, 401, protocol.CodeAuthRequired},
		{"unknown skill without credentials is no different", "GET", "/manglecp/skills/unknown", "", nil, 401, protocol.CodeAuthRequired},
		{"unknown skill with credentials", "GET", "/manglecp/skills/unknown", "", auth, 404, protocol.CodeSkillNotFound},
		{"skill with a wrong token", "GET", "/manglecp/skills/known", "", map[string]string{"X-MangleCP-API-Key": "nope"}, 401, protocol.CodeAuthInvalid},
		{"known skill with credentials", "GET", "/manglecp/skills/known", "", auth, 200, ""},
		{"manifest needs no credentials", "GET", transport.ManifestPath, "", map[string]string{"Host": "localhost:1234"}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader("{}"))
			req.URL.Path = tc.path // keep // and trailing slashes as sent
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			for k, v := range tc.header {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, raw := doStatus(t, client, req, tc.status)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.code == "" {
				return
			}
			e := decodeError(t, raw)
			if e.Code != tc.code || e.Code.HTTPStatus() != resp.StatusCode {
				t.Errorf("code %s (registry status %d), want %s: %s", e.Code, e.Code.HTTPStatus(), tc.code, raw)
			}
			if tc.status == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
}

// TestWebSocketLimitsMessagesBeforeAuthentication: before a session
// authenticated, a frame larger than the pre-auth limit is refused with
// auth_required and the session is closed with 1008 (policy violation),
// without handling it (issue 9 item 1).
func TestWebSocketLimitsMessagesBeforeAuthentication(t *testing.T) {
	h := &guarded{}
	srv := httptest.NewServer(transport.NewHTTPHandler(h, nil))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialWS(t, ctx, srv, nil)
	if _, _, err := c.Read(ctx); err != nil { // manifest
		t.Fatal(err)
	}
	big := strings.Replace(string(request("big")), `"observe"`, `"`+strings.Repeat("v", 1<<20)+`"`, 1)
	if err := c.Write(ctx, websocket.MessageText, []byte(big)); err != nil {
		t.Fatal(err)
	}
	_, raw, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if e := decodeError(t, raw); e.Code != protocol.CodeAuthRequired {
		t.Fatalf("got %s, want auth_required", e.Code)
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("close %v (%v), want 1008", websocket.CloseStatus(err), err)
	}
	if n := h.handled.Load(); n != 0 {
		t.Errorf("the handler saw %d messages", n)
	}

	// After authenticate, large messages are read again.
	c2 := dialWS(t, ctx, srv, nil)
	_, _, _ = c2.Read(ctx)
	authMsg, _ := protocol.NewEnvelope(protocol.TypeAuthenticate, "a", map[string]any{"scheme": "bearer", "token": "secret"})
	raw, _ = authMsg.Encode()
	_ = c2.Write(ctx, websocket.MessageText, raw)
	if _, raw, err = c2.Read(ctx); err != nil || !strings.Contains(string(raw), "authenticate_response") {
		t.Fatalf("authenticate: %v %s", err, raw)
	}
	_ = c2.Write(ctx, websocket.MessageText, []byte(big))
	if _, raw, err = c2.Read(ctx); err != nil || !strings.Contains(string(raw), `"intent_response"`) {
		t.Fatalf("large message after authentication: %v %.200s", err, raw)
	}
}

// TestWebSocketPeerThatNeverReadsIsDropped: a peer that sends requests but
// never reads is cut off after the write timeout; its running work is
// cancelled and the bytes it held are given back (issue 9 item 1).
func TestWebSocketPeerThatNeverReadsIsDropped(t *testing.T) {
	h := &guarded{replySize: 256 << 10}
	budget := transport.NewBudget(64 << 20)
	drain := transport.NewDrain()
	srv := httptest.NewServer(transport.NewHTTPHandler(h, &transport.HTTPOptions{
		Budget: budget,
		Drain:  drain,
		WS:     &transport.WSOptions{Session: transport.SessionOptions{WriteTimeout: 300 * time.Millisecond}},
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialWS(t, ctx, srv, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer secret"}}})
	if _, _, err := c.Read(ctx); err != nil { // the manifest; nothing more is read
		t.Fatal(err)
	}
	baseline := runtime.NumGoroutine() // the client's and the session's goroutines included
	// Write requests until the server stops taking them; never read.
	for i := 0; i < 400; i++ {
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		err := c.Write(wctx, websocket.MessageText, request(fmt.Sprintf("r%d", i)))
		wcancel()
		if err != nil {
			break
		}
	}
	wait := testenv.NewWait(10 * time.Second)
	for drain.Sessions() > 0 || budget.Used() != 0 || runtime.NumGoroutine() > baseline {
		if !wait.Next() {
			t.Fatalf("after 10 s the session is still open (%d sessions, %d goroutines, %d at the start) holding %d bytes",
				drain.Sessions(), runtime.NumGoroutine(), baseline, budget.Used())
		}
	}
}

// TestSessionDropsWorkWhenThePeerLeaves: when a WebSocket peer goes away,
// the requests it left running are cancelled at once, not finished for
// nobody (issue 9 item 1).
func TestSessionDropsWorkWhenThePeerLeaves(t *testing.T) {
	h := &guarded{release: make(chan struct{})}
	defer close(h.release)
	srv := httptest.NewServer(transport.NewHTTPHandler(h, nil))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialWS(t, ctx, srv, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer secret"}}})
	_, _, _ = c.Read(ctx)
	for i := 0; i < 5; i++ {
		_ = c.Write(ctx, websocket.MessageText, request(fmt.Sprintf("slow-%d", i)))
	}
	testenv.Eventually(t, 10*time.Second, "5 requests running", func() bool { return h.running.Load() >= 5 })
	_ = c.CloseNow() // gone without a word
	if !testenv.Poll(10*time.Second, func() bool { return h.cancelled.Load() >= 5 }) {
		t.Fatalf("%d of 5 running requests were cancelled after the peer left", h.cancelled.Load())
	}
}

// TestSessionPendingBytesAreBounded: beyond MaxPendingBytes of unanswered
// messages, a session refuses new ones with rate_limited.
func TestSessionPendingBytesAreBounded(t *testing.T) {
	h := &guarded{release: make(chan struct{})}
	client, server := transport.NewMemoryPair()
	done := make(chan error, 1)
	go func() {
		done <- transport.ServeSession(context.Background(), h, server, &transport.SessionOptions{
			Credentials: &protocol.Credentials{Scheme: "bearer", Token: "secret"}, MaxPendingBytes: 4096})
	}()
	recv(t, client) // manifest
	msg := request("slow-0")
	pad := strings.Replace(string(msg), `"observe"`, `"`+strings.Repeat("o", 1500)+`"`, 1)
	for i := 0; i < 4; i++ {
		if err := client.WriteMessage(context.Background(), []byte(strings.Replace(pad, "slow-0", fmt.Sprintf("slow-%d", i), 1))); err != nil {
			t.Fatal(err)
		}
	}
	var limited int
	for limited == 0 {
		env := recv(t, client)
		if env.Type == protocol.TypeError && strings.Contains(string(env.Payload), "rate_limited") {
			limited++
		}
	}
	close(h.release)
	_ = client.Close()
	for range 3 { // two answered, or one more refused
		recv(t, client)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestLimitListenerPerIP: a third connection from the same IP is closed at
// once while two are open; closing one frees a slot.
func TestLimitListenerPerIP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })}
	go func() { _ = srv.Serve(transport.LimitListener(ln, 2)) }()
	defer srv.Close()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	get := func(c net.Conn) error {
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	a, b := dial(), dial()
	defer a.Close()
	defer b.Close()
	if get(a) != nil || get(b) != nil {
		t.Fatal("the first two connections are not served")
	}
	c := dial()
	if err := get(c); err == nil {
		t.Fatal("a third connection from one IP was served")
	}
	c.Close()
	a.Close()
	// The server sees a's close when it next reads it: until then a new
	// connection may still be refused.
	if !testenv.Poll(10*time.Second, func() bool {
		d := dial()
		defer d.Close()
		err = get(d)
		return err == nil
	}) {
		t.Fatalf("after one closed, a new connection is refused: %v", err)
	}
}

// TestDrainEndsSessionsAfterTheirWork: when draining starts, a session
// answers the request it is running, then closes with 1001 (going away);
// HTTP answers carry Connection: close (issue 9 item 5).
func TestDrainEndsSessionsAfterTheirWork(t *testing.T) {
	h := &guarded{release: make(chan struct{})}
	drain := transport.NewDrain()
	srv := httptest.NewServer(transport.NewHTTPHandler(h, &transport.HTTPOptions{Drain: drain}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialWS(t, ctx, srv, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer secret"}}})
	_, _, _ = c.Read(ctx)
	_ = c.Write(ctx, websocket.MessageText, request("slow-1"))
	testenv.Eventually(t, 10*time.Second, "the request running", func() bool { return h.running.Load() >= 1 })
	drain.Start()
	// The session pushes the (handler's) manifest when it sees the drain;
	// only then does the running request end.
	_, raw, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(raw), `"type":"manifest"`) {
		t.Fatalf("no draining manifest: %v %s", err, raw)
	}
	close(h.release)
	_, raw, err = c.Read(ctx)
	if err != nil || !strings.Contains(string(raw), `"slow-1"`) {
		t.Fatalf("the running request was not answered: %v %s", err, raw)
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("close %v (%v), want 1001", websocket.CloseStatus(err), err)
	}
	if err := drain.Wait(ctx); err != nil {
		t.Errorf("drain.Wait: %v", err)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/manglecp/evaluate", strings.NewReader(string(request("x"))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !resp.Close {
		t.Error("an HTTP answer while draining does not close the connection")
	}
}
