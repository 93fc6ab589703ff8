package manglecp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// fixedNow is the clock of every test server, so responses are stable.
var fixedNow = time.Date(2026, 2, 19, 14, 30, 10, 0, time.UTC)

// harness is a server behind a real HTTP listener.
type harness struct {
	t    *testing.T
	srv  *manglecp.Server
	http *httptest.Server
	logs *testenv.Buffer
}

// newHarness serves the browser domain (or d, when given) with opts
// adjusted by mut.
func newHarness(t *testing.T, d *manglecp.Domain, mut func(*manglecp.Options)) *harness {
	t.Helper()
	logs := &testenv.Buffer{}
	opts := &manglecp.Options{
		Logger:          slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:             func() time.Time { return fixedNow },
		ConfirmationKey: []byte("test confirmation key"),
	}
	if mut != nil {
		mut(opts)
	}
	if d == nil {
		// No browser: goldens must not depend on whether Chromium is installed.
		bd := browser.Domain(browser.Config{ReportDir: t.TempDir(), Config: chrome.Config{Path: "none"}})
		d = &bd
	}
	srv, err := manglecp.NewServer(*d, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	return &harness{t: t, srv: srv, http: hs, logs: logs}
}

// reply is one HTTP exchange.
type reply struct {
	status int
	header http.Header
	env    protocol.Envelope
	raw    []byte
}

// errorPayload decodes the reply as an error.
func (r *reply) errorPayload(t *testing.T) *protocol.Error {
	t.Helper()
	if r.env.Type != protocol.TypeError {
		t.Fatalf("got %s, want an error: %s", r.env.Type, r.raw)
	}
	var e protocol.Error
	if err := json.Unmarshal(r.env.Payload, &e); err != nil {
		t.Fatalf("error payload: %v: %s", err, r.raw)
	}
	return &e
}

// allReplies records every error body the suite received, for the leak scan.
var allReplies struct {
	mu     sync.Mutex
	bodies [][]byte
}

// post sends body to path.
func (h *harness) post(path string, body []byte, header map[string]string) *reply {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.http.URL+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return h.do(req)
}

func (h *harness) do(req *http.Request) *reply {
	h.t.Helper()
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	r := &reply{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.env); err != nil {
			h.t.Fatalf("response is not an envelope (%v): %s", err, raw)
		}
	}
	if r.env.Type == protocol.TypeError {
		allReplies.mu.Lock()
		allReplies.bodies = append(allReplies.bodies, raw)
		allReplies.mu.Unlock()
	}
	return r
}

// envelope builds a request envelope.
func envelope(t testing.TB, typ protocol.MessageType, id string, payload any) []byte {
	t.Helper()
	env, err := protocol.NewEnvelope(typ, id, payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// evaluate posts an intent request payload (a map or struct).
func (h *harness) evaluate(id string, payload any) *reply {
	h.t.Helper()
	return h.post("/manglecp/evaluate", envelope(h.t, protocol.TypeIntentRequest, id, payload), nil)
}

// invoke posts an invoke request payload.
func (h *harness) invoke(id string, payload any) *reply {
	h.t.Helper()
	return h.post("/manglecp/invoke", envelope(h.t, protocol.TypeInvokeRequest, id, payload), nil)
}

// intentResponse decodes a successful evaluation.
func (r *reply) intentResponse(t *testing.T) *protocol.IntentResponse {
	t.Helper()
	if r.status != http.StatusOK || r.env.Type != protocol.TypeIntentResponse {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	var p protocol.IntentResponse
	if err := json.Unmarshal(r.env.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// invokeResponse decodes a successful invocation.
func (r *reply) invokeResponse(t *testing.T) *protocol.InvokeResponse {
	t.Helper()
	if r.status != http.StatusOK || r.env.Type != protocol.TypeInvokeResponse {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	var p protocol.InvokeResponse
	dec := json.NewDecoder(bytes.NewReader(r.env.Payload))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// diagnoseFacts is the Spec 05 section 7 example adapted to the default
// domain: a failed request followed by a console error in the same session,
// with the spec's temporal annotations (RFC 3339 and epoch ms).
func diagnoseFacts() []map[string]any {
	return []map[string]any{
		{"pred": "current_url", "args": []any{"https://app.example.com/dashboard"}},
		{"pred": "console_event", "args": []any{"s1", "error", "TypeError: Cannot read properties of null", 1771511400000}, "t": map[string]any{"at": "2026-02-19T14:30:00Z"}},
		{"pred": "net_request", "args": []any{"s1", "r42", "GET", "https://api.example.com/users", 1771511399000}, "t": map[string]any{"start": "2026-02-19T14:29:59Z", "end": "2026-02-19T14:30:01Z"}},
		{"pred": "net_response", "args": []any{"s1", "r42", 404, 1771511399500}, "t": map[string]any{"at": 1771511399500}},
	}
}

func diagnoseRequest() map[string]any {
	return map[string]any{
		"intent":    map[string]any{"name": "diagnose_error", "params": map[string]any{"severity": "critical"}},
		"facts":     diagnoseFacts(),
		"eval_time": "2026-02-19T14:30:05Z",
		"options":   map[string]any{"disclosure_preference": "full"},
	}
}

// tool finds a macro-tool by name.
func tool(t *testing.T, resp *protocol.IntentResponse, name string) protocol.MacroTool {
	t.Helper()
	for _, m := range resp.MacroTools {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no macro-tool %s in %+v", name, resp.MacroTools)
	return protocol.MacroTool{}
}

// faultDomain serves testdata/faults with actions that fail on purpose.
func faultDomain(block chan struct{}) *manglecp.Domain {
	return &manglecp.Domain{
		ID: "faults", Description: "actions that fail on purpose", Rules: os.DirFS("testdata/faults"),
		Actions: map[string]manglecp.ActionSpec{
			"panic": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
				panic("boom at /secret/internal/path.go:42")
			}},
			"fail": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
				return nil, errors.New("open /etc/secret/config.yaml: permission denied")
			}},
			"nan": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
				return &manglecp.Outcome{Result: map[string]any{"value": math.NaN()}}, nil
			}},
			"block": {Run: func(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
				if block != nil {
					close(block)
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}},
		},
	}
}

// leakMarkers are strings no response may contain: stack traces, Go file
// paths, rule source, internal paths the faults put in their errors.
var leakMarkers = []string{"goroutine ", ".go:", "panic", ") :- ", "/secret/", "/etc/", "runtime/debug", "fact size limit", "analysis"}

func scanForLeaks(t *testing.T, bodies [][]byte) {
	t.Helper()
	for _, b := range bodies {
		s := string(b)
		for _, m := range leakMarkers {
			if strings.Contains(s, m) {
				t.Errorf("response leaks %q: %s", m, s)
			}
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return string(b)
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
