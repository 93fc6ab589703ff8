package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/conformance"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// helperArg makes the test binary a stdio server (see TestMain): the
// breakages of the stdio binding need a subprocess that misbehaves.
const helperArg = "conformance-stdio-helper"

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == helperArg {
		os.Exit(stdioHelper(os.Args[2]))
	}
	code := m.Run()
	builds.Close()
	os.Exit(code)
}

// stdioHelper serves the default domain over stdin and stdout, broken as
// mode says: "noise" writes a log line to stdout after the manifest,
// "late-manifest" writes an error before the manifest, "ok" nothing.
func stdioHelper(mode string) int {
	dir, err := os.MkdirTemp("", "conformance-helper")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: dir}), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var conn transport.Conn = transport.NewStdioConn(os.Stdin, os.Stdout, srv.MaxMessageBytes(), nil)
	switch mode {
	case "noise":
		conn = &noisyConn{Conn: conn}
	case "late-manifest":
		fmt.Fprintln(os.Stdout, `{"type":"error","id":null,"manglecp":"2026-02-draft","payload":{"code":"internal_error","message":"starting up","recoverable":false,"retry_after_ms":null}}`)
	}
	if err := transport.ServeSession(context.Background(), srv, conn, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// noisyConn writes a log line to stdout after the first message.
type noisyConn struct {
	transport.Conn
	once sync.Once
}

func (c *noisyConn) WriteMessage(ctx context.Context, msg []byte) error {
	if err := c.Conn.WriteMessage(ctx, msg); err != nil {
		return err
	}
	c.once.Do(func() {
		fmt.Fprintln(os.Stdout, "time=2026-02-19T14:30:00Z level=INFO msg=\"serving MangleCP over stdio\"")
	})
	return nil
}

// helperTarget is the stdio target of the test binary in helper mode.
func helperTarget(t *testing.T, mode string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(exe, " \t") {
		t.Skipf("the test binary's path %q has white space", exe)
	}
	return "stdio:" + exe + " " + helperArg + " " + mode
}

// newServer is the default domain's server with opts changed by mut.
func newServer(t testing.TB, mut func(*manglecp.Options)) *manglecp.Server {
	t.Helper()
	return domaintest.BrowserServer(t, testKey, mut)
}

// testKey is the conformance tests' confirmation key.
var testKey = []byte("conformance test key")

// workspaceServer is the workspace domain's server on the root dir.
func workspaceServer(t *testing.T, dir string) *manglecp.Server {
	t.Helper()
	ws, err := workspace.Open(workspace.Config{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	srv, err := manglecp.NewServer(ws.Domain(), &manglecp.Options{ConfirmationKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// serveHTTP serves h over HTTP (and WebSocket at /manglecp/ws) for the
// test's lifetime, behind mw when given, and returns the base URL.
func serveHTTP(t testing.TB, h transport.Handler, opts *transport.HTTPOptions, mw func(http.Handler) http.Handler) string {
	t.Helper()
	var handler http.Handler = transport.NewHTTPHandler(h, opts)
	if mw != nil {
		handler = mw(handler)
	}
	hs := httptest.NewServer(handler)
	t.Cleanup(hs.Close)
	return hs.URL
}

func wsURL(base string) string { return "ws" + strings.TrimPrefix(base, "http") + "/manglecp/ws" }

// builds holds the manglecp binary the process tests run.
var builds testenv.Builds

// manglecpBinary builds ./cmd/manglecp once per test process.
func manglecpBinary(t *testing.T) string {
	t.Helper()
	return builds.Manglecp(t)
}

// allBut lists every check of the catalogue except ids.
func allBut(ids ...string) []string {
	skip := map[string]bool{}
	for _, id := range ids {
		skip[id] = true
	}
	var out []string
	for _, c := range conformance.Catalogue() {
		if !skip[c.ID] {
			out = append(out, c.ID)
		}
	}
	return out
}

// run runs the suite and fails the test when Run itself fails.
func run(t *testing.T, target string, opts *conformance.Options) *conformance.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := conformance.Run(ctx, target, opts)
	if err != nil {
		t.Fatalf("Run(%s): %v", target, err)
	}
	return rep
}

func browserFixture(t testing.TB) *conformance.Fixture {
	t.Helper()
	f, err := conformance.BuiltinFixture("browser")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// ---- breakage wrappers ----

// broken wraps a real server and breaks it: in rewrites each inbound
// message, ctx its context, out each answer (with the decoded request),
// manifest the manifest payload.
type broken struct {
	transport.HandlerDefaults
	srv      *manglecp.Server
	inbound  func(in *protocol.Inbound)
	in       func(req map[string]any)
	ctx      func(context.Context) context.Context
	out      func(req map[string]any, ans map[string]any)
	manifest func(m map[string]any)
	// answer, when set and returning non-nil, answers instead of the
	// server.
	answer func(req map[string]any) map[string]any
}

var _ transport.Handler = (*broken)(nil)

func decodeMap(raw []byte) map[string]any {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

func (b *broken) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	if b.inbound != nil {
		cp := *in
		b.inbound(&cp)
		in = &cp
	}
	req := decodeMap(in.Data)
	if req != nil && b.in != nil {
		b.in(req)
		cp := *in
		cp.Data, _ = json.Marshal(req)
		in = &cp
	}
	if req != nil && b.answer != nil {
		if ans := b.answer(req); ans != nil {
			raw, _ := json.Marshal(ans)
			var env protocol.Envelope
			_ = json.Unmarshal(raw, &env)
			return &env
		}
	}
	if b.ctx != nil {
		ctx = b.ctx(ctx)
	}
	env := b.srv.Handle(ctx, in)
	if b.out == nil {
		return env
	}
	raw, _ := env.Encode()
	ans := decodeMap(raw)
	b.out(req, ans)
	raw, _ = json.Marshal(ans)
	var out protocol.Envelope
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	if _, present := ans["id"]; present && ans["id"] == nil {
		out.ID = nil
	}
	return &out
}

func (b *broken) ManifestJSON() ([]byte, string) {
	raw, etag := b.srv.ManifestJSON()
	if b.manifest == nil {
		return raw, etag
	}
	m := decodeMap(raw)
	b.manifest(m)
	out, _ := json.Marshal(m)
	return out, etag
}

func (b *broken) MaxMessageBytes() int64 { return b.srv.MaxMessageBytes() }
func (b *broken) AuthRequired() bool     { return b.srv.AuthRequired() }

// payloadOf returns an envelope map's payload.
func payloadOf(env map[string]any) map[string]any {
	p, _ := env["payload"].(map[string]any)
	return p
}

// tools returns the macro_tools of an answer.
func tools(ans map[string]any) []map[string]any {
	var out []map[string]any
	list, _ := payloadOf(ans)["macro_tools"].([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func isType(env map[string]any, t protocol.MessageType) bool {
	return env != nil && env["type"] == string(t)
}

func errorCode(env map[string]any) string {
	if !isType(env, protocol.TypeError) {
		return ""
	}
	c, _ := payloadOf(env)["code"].(string)
	return c
}

// requestOption returns options[k] of an intent request.
func requestOption(req map[string]any, k string) any {
	o, _ := payloadOf(req)["options"].(map[string]any)
	return o[k]
}

// requestFacts returns the facts of an intent request.
func requestFacts(req map[string]any) []any {
	f, _ := payloadOf(req)["facts"].([]any)
	return f
}

// withFacts replaces the facts of an intent request.
func setFacts(req map[string]any, facts []any) { payloadOf(req)["facts"] = facts }

// factPred returns the predicate of a fact.
func factPred(f any) string {
	m, _ := f.(map[string]any)
	s, _ := m["pred"].(string)
	return s
}

// errorEnvelope is an error answer for req.
func errorEnvelope(req map[string]any, code protocol.Code, msg string) map[string]any {
	env := protocol.ErrorEnvelope("", protocol.Errorf(code, "%s", msg))
	raw, _ := env.Encode()
	m := decodeMap(raw)
	m["id"] = req["id"]
	return m
}

// httpRewrite passes requests to next and lets edit change each non
// WebSocket exchange: the request before, the recorded answer after.
func httpRewrite(before func(r *http.Request), after func(r *http.Request, rec *httptest.ResponseRecorder)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if transport.IsWebSocketUpgrade(r) {
				next.ServeHTTP(w, r)
				return
			}
			if before != nil {
				before(r)
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			if after != nil {
				after(r, rec)
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Length", fmt.Sprint(rec.Body.Len()))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
	}
}

// binaryFrames serves a WebSocket proxy to upstream (a ws:// URL) that
// forwards the server's messages as binary frames.
func binaryFrames(t *testing.T, upstream string) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(64 << 20)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		up, _, err := websocket.Dial(ctx, upstream, nil)
		if err != nil {
			return
		}
		defer up.CloseNow()
		up.SetReadLimit(64 << 20)
		go func() {
			defer cancel()
			for {
				_, data, err := up.Read(ctx)
				if err != nil {
					return
				}
				if c.Write(ctx, websocket.MessageBinary, data) != nil {
					return
				}
			}
		}()
		for {
			typ, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			if up.Write(ctx, typ, data) != nil {
				return
			}
		}
	}))
	t.Cleanup(hs.Close)
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/manglecp/ws"
}
