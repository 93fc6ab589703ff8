package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// The credentials every test server shares with its clients.
var (
	testKey   = []byte("client test confirmation key")
	testToken = "client-test-token-0123456789"
)

// newServer serves the browser domain with the test confirmation key,
// options adjusted by mut.
func newServer(t *testing.T, mut func(*manglecp.Options)) *manglecp.Server {
	t.Helper()
	return domaintest.BrowserServer(t, testKey, mut)
}

// withAuth turns authentication on with testToken.
func withAuth(o *manglecp.Options) { o.AuthTokens = []string{testToken} }

// serveHTTP serves h over HTTP (and WebSocket at /manglecp/ws).
func serveHTTP(t *testing.T, h transport.Handler) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(transport.NewHTTPHandler(h, nil))
	t.Cleanup(hs.Close)
	return hs
}

// wsURL is the WebSocket endpoint of an HTTP test server.
func wsURL(hs *httptest.Server) string {
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/manglecp/ws"
}

// serveHTTPFunc serves fn over HTTP.
func serveHTTPFunc(t *testing.T, fn http.HandlerFunc) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(fn)
	t.Cleanup(hs.Close)
	return hs
}

// memoryConn serves h with transport.ServeSession over an in-memory pair
// and returns the client's end. The session is stopped when the test ends.
func memoryConn(t *testing.T, h transport.Handler, sopts *transport.SessionOptions) transport.Conn {
	t.Helper()
	c, srvConn := transport.NewMemoryPair()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = transport.ServeSession(ctx, h, srvConn, sopts)
	}()
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		<-served
	})
	return c
}

// memorySession opens a session to h over an in-memory pair.
func memorySession(t *testing.T, h transport.Handler, sopts *transport.SessionOptions, opts *client.Options) *client.Session {
	t.Helper()
	s, err := client.NewSession(ctxT(t), memoryConn(t, h, sopts), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// binary builds cmd/manglecp once per test run.
// builds holds the manglecp binary the stdio tests run.
var builds testenv.Builds

func buildBinary(t *testing.T) string {
	t.Helper()
	return builds.Manglecp(t)
}

func TestMain(m *testing.M) {
	code := m.Run()
	builds.Close()
	os.Exit(code)
}

// stdioConfig writes a serve --config file with the test confirmation key
// and a report directory.
func stdioConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	raw, _ := json.Marshal(map[string]any{"confirmation_key": string(testKey), "report_dir": filepath.Join(dir, "reports")})
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// diagnoseRequest is a failed request followed by a console error: the
// browser domain offers its three diagnose tools.
func diagnoseRequest() *protocol.IntentRequest {
	return &protocol.IntentRequest{
		Intent: protocol.Intent{Name: "diagnose_error"},
		Facts: []protocol.Fact{
			protocol.NewFact("current_url", "https://app.example.com/dashboard"),
			protocol.NewFact("console_event", "s1", "error", "TypeError: Cannot read properties of null", 1771510200000),
			protocol.NewFact("net_request", "s1", "r42", "GET", "https://api.example.com/users", 1771510199000),
			protocol.NewFact("net_response", "s1", "r42", 404, 1771510199500),
		},
		// A fixed eval_time: identical requests give identical macro_ids.
		EvalTime: protocol.NewTime(time.Date(2026, 2, 19, 14, 30, 5, 0, time.UTC)),
		Options:  &protocol.Options{DisclosurePreference: protocol.DisclosureFull},
	}
}

// macro returns the macro_id of the named tool.
func macro(t *testing.T, resp *protocol.IntentResponse, name string) string {
	t.Helper()
	for _, m := range resp.MacroTools {
		if m.Name == name {
			return m.MacroID
		}
	}
	t.Fatalf("no macro-tool %s in %+v", name, resp.MacroTools)
	return ""
}

// ctxT is a context that ends with the test, bounded to 60 seconds
// (stretched by the machine's measured slowness, testenv.Budget).
// The bound is generous: the machine running the tests may be busy (a slow
// run should still pass; a hang should not last forever).
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Budget(60*time.Second))
	t.Cleanup(cancel)
	return ctx
}

// fake is a transport.Handler for tests: answer decides each reply;
// requests are counted and their ids recorded.
type fake struct {
	transport.HandlerDefaults
	manifest []byte
	answer   func(ctx context.Context, n int, env *protocol.Envelope, in *protocol.Inbound) *protocol.Envelope

	count atomic.Int64
	mu    sync.Mutex
	ids   []string
}

// newFake answers with a copy of a real browser server's manifest.
func newFake(t *testing.T, answer func(ctx context.Context, n int, env *protocol.Envelope, in *protocol.Inbound) *protocol.Envelope) *fake {
	t.Helper()
	m, _ := newServer(t, nil).ManifestJSON()
	return &fake{manifest: m, answer: answer}
}

// Handle decodes the request and lets answer reply.
func (f *fake) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	env, perr := protocol.DecodeEnvelope(in.Data)
	if perr != nil {
		return protocol.ErrorEnvelope(env.IDString(), perr)
	}
	n := int(f.count.Add(1))
	f.mu.Lock()
	f.ids = append(f.ids, env.IDString())
	f.mu.Unlock()
	return f.answer(ctx, n, env, in)
}

// ManifestJSON returns the manifest.
func (f *fake) ManifestJSON() ([]byte, string) { return f.manifest, `"fake"` }

// MaxMessageBytes is 16 MiB.
func (f *fake) MaxMessageBytes() int64 { return 16 << 20 }

// okResponse answers an intent or invoke request with an empty success.
func okResponse(env *protocol.Envelope) *protocol.Envelope {
	var out *protocol.Envelope
	if env.Type == protocol.TypeInvokeRequest {
		out, _ = protocol.NewEnvelope(protocol.TypeInvokeResponse, env.IDString(), &protocol.InvokeResponse{
			Result: map[string]any{"ok": true}, StateDelta: protocol.StateDelta{Assert: []protocol.Fact{}, Retract: []protocol.Fact{}},
			Observability: protocol.Observability{Summary: "ok", Events: []protocol.Event{}}})
		return out
	}
	out, _ = protocol.NewEnvelope(protocol.TypeIntentResponse, env.IDString(), &protocol.IntentResponse{
		EvalTimeUsed: protocol.Time{Time: time.Unix(0, 0)}, MacroTools: []protocol.MacroTool{}})
	return out
}

// errorReply answers env with code, with retry_after_ms when ms >= 0.
func errorReply(env *protocol.Envelope, code protocol.Code, ms int64) *protocol.Envelope {
	e := protocol.Errorf(code, "test error %s", code)
	if ms >= 0 {
		e = e.WithRetryAfter(ms)
	}
	return protocol.ErrorEnvelope(env.IDString(), e)
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
