package manglecp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestBooting: while rules load, the manifest says "booting" and requests
// get server_not_ready (503) with retry_after_ms.
func TestBooting(t *testing.T) {
	b := manglecp.New(browser.Domain(browser.Config{ReportDir: t.TempDir()}), nil)
	hs := httptest.NewServer(transport.NewHTTPHandler(b, nil))
	defer hs.Close()
	h := &harness{t: t, http: hs}
	req, _ := http.NewRequest(http.MethodGet, hs.URL+transport.ManifestPath, nil)
	var m protocol.Manifest
	_ = json.Unmarshal(h.do(req).env.Payload, &m)
	if m.Status != protocol.StatusBooting || m.ServerName == "" || m.Domain.ID != browser.ID || m.Limits.MaxMessageBytes == 0 {
		t.Fatalf("booting manifest %+v", m)
	}
	r := h.evaluate("b1", diagnoseRequest())
	e := r.errorPayload(t)
	if r.status != http.StatusServiceUnavailable || e.Code != protocol.CodeServerNotReady || e.RetryAfterMS == nil || r.env.IDString() != "b1" {
		t.Errorf("%d %+v", r.status, e)
	}
}

// TestManifestPushedOnDrain: session transports receive the updated
// manifest when the server starts draining.
func TestManifestPushedOnDrain(t *testing.T) {
	h := newHarness(t, nil, nil)
	w := memorySession(t, h)
	h.srv.Drain()
	got := w.next(t)
	var m protocol.Manifest
	_ = json.Unmarshal(got.Payload, &m)
	if got.Type != protocol.TypeManifest || m.Status != protocol.StatusDraining {
		t.Fatalf("pushed %s status %s", got.Type, m.Status)
	}
}

// TestEvaluationPool: with every evaluation slot busy, a request is
// refused with rate_limited after QueueTimeout instead of queueing.
func TestEvaluationPool(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	d := browser.Domain(browser.Config{ReportDir: t.TempDir()})
	ext := d.External["report_exists"]
	inner := ext.Compute
	ext.Compute = func(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
		if in.Intent == "observe" { // the blocked request
			once.Do(func() { close(entered) })
			<-release
		}
		return inner(ctx, in)
	}
	d.External["report_exists"] = ext
	h := newHarness(t, &d, func(o *manglecp.Options) { o.MaxConcurrentEvaluations = 1; o.QueueTimeout = 20 * time.Millisecond })
	observe := diagnoseRequest()
	observe["intent"] = map[string]any{"name": "observe"}
	first := make(chan *reply)
	go func() { first <- h.evaluate("slow", observe) }()
	<-entered
	r := h.evaluate("refused", diagnoseRequest())
	if e := r.errorPayload(t); e.Code != protocol.CodeRateLimited || e.RetryAfterMS == nil {
		t.Errorf("with the pool full: %+v", e)
	}
	close(release)
	if r := <-first; r.status != http.StatusOK {
		t.Errorf("the running evaluation: %s", r.raw)
	}
	if r := h.evaluate("after", diagnoseRequest()); r.status != http.StatusOK {
		t.Errorf("after the pool freed up: %s", r.raw)
	}
}

func TestDegradedAndAnonymousPermissions(t *testing.T) {
	h := newHarness(t, nil, func(o *manglecp.Options) { o.AnonymousPermissions = []string{"intent:observe"} })
	h.srv.SetDegraded("report directory is read-only")
	m := h.srv.Manifest()
	if m.Status != protocol.StatusDegraded || m.Extensions["x-degraded_reason"] != "report directory is read-only" {
		t.Fatalf("manifest %s %v", m.Status, m.Extensions)
	}
	// Degraded still serves; the anonymous caller may observe but not diagnose.
	observe := diagnoseRequest()
	observe["intent"] = map[string]any{"name": "observe"}
	if r := h.evaluate("o", observe); r.status != http.StatusOK {
		t.Errorf("observe while degraded: %s", r.raw)
	}
	if e := h.evaluate("d", diagnoseRequest()).errorPayload(t); e.Code != protocol.CodeAuthInsufficient {
		t.Errorf("anonymous diagnose: %s", e.Code)
	}
	h.srv.SetDegraded("")
	if h.srv.Status() != protocol.StatusReady {
		t.Error("not ready again")
	}
}

// TestDrainLosesNothing: a request running when draining starts finishes
// normally, a new one gets server_not_ready, and Wait returns once the
// running one is done.
func TestDrainLosesNothing(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	d := browser.Domain(browser.Config{ReportDir: t.TempDir()})
	inner := d.Actions["causal_chain"]
	d.Actions["causal_chain"] = manglecp.ActionSpec{Run: func(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
		close(started)
		<-release
		return inner.Run(ctx, c)
	}}
	h := newHarness(t, &d, nil)
	m := tool(t, h.evaluate("e", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
	done := make(chan *reply)
	go func() {
		done <- h.invoke("inflight", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}})
	}()
	<-started
	h.srv.Drain()
	if e := h.evaluate("late", diagnoseRequest()).errorPayload(t); e.Code != protocol.CodeServerNotReady {
		t.Errorf("new request while draining: %s", e.Code)
	}
	waited := make(chan error)
	go func() { waited <- h.srv.Wait(context.Background()) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while a request was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if r := <-done; r.status != http.StatusOK || r.env.IDString() != "inflight" {
		t.Errorf("the in-flight invocation: %d %s", r.status, r.raw)
	}
	if err := <-waited; err != nil {
		t.Error(err)
	}
}
