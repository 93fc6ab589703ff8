package manglecp_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// slowFault evaluates the fault domain for its "slow" tool.
func slowFault(t *testing.T, h *harness) protocol.MacroTool {
	resp := h.evaluate("e", map[string]any{"intent": map[string]any{"name": "fault"},
		"facts": []any{map[string]any{"pred": "fault", "args": []any{"slow"}}}, "options": map[string]any{"disclosure_preference": "full"}}).intentResponse(t)
	return tool(t, resp, "slow")
}

// TestClientDisconnectStopsWork: an HTTP client that goes away during an
// invocation cancels it; the action sees its context end and returns.
func TestClientDisconnectStopsWork(t *testing.T) {
	started, stopped := make(chan struct{}), make(chan struct{})
	d := faultDomain(started)
	block := d.Actions["block"].Run
	d.Actions["block"] = manglecp.ActionSpec{Run: func(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
		defer close(stopped)
		return block(ctx, c)
	}}
	h := newHarness(t, d, nil)
	m := slowFault(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.http.URL+"/manglecp/invoke",
		bytesReader(envelope(t, protocol.TypeInvokeRequest, "gone", map[string]any{"macro_id": m.MacroID, "args": map[string]any{}})))
	req.Header.Set("Content-Type", "application/json")
	go func() {
		if resp, err := h.http.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel() // the client goes away
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the action kept running after the client disconnected")
	}
	if r := h.evaluate("after", diagnoseRequestFault()); r.status != http.StatusOK {
		t.Fatalf("after the disconnect: %s", r.raw)
	}
}

func diagnoseRequestFault() map[string]any {
	return map[string]any{"intent": map[string]any{"name": "fault"}, "facts": []any{map[string]any{"pred": "fault", "args": []any{"failing"}}}}
}

// TestHangingActionIsBounded: an action that never returns on its own is
// stopped by the invocation timeout (execution_failed), and the server
// keeps serving others meanwhile.
func TestHangingActionIsBounded(t *testing.T) {
	h := newHarness(t, faultDomain(nil), func(o *manglecp.Options) { o.InvokeTimeout = 100 * time.Millisecond })
	m := slowFault(t, h)
	done := make(chan *reply)
	start := time.Now()
	go func() { done <- h.invoke("hang", map[string]any{"macro_id": m.MacroID, "args": map[string]any{}}) }()
	if r := h.evaluate("other", diagnoseRequestFault()); r.status != http.StatusOK {
		t.Errorf("another request during the hang: %s", r.raw)
	}
	r := <-done
	if e := r.errorPayload(t); e.Code != protocol.CodeExecutionFailed {
		t.Errorf("hang: %s", e.Code)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the hang lasted %s", took)
	}
}

// TestMacroCacheStaysBounded fills the macro cache far past its bound: its
// size never exceeds the configured bytes.
func TestMacroCacheStaysBounded(t *testing.T) {
	const limit = 64 << 10
	h := newHarness(t, nil, func(o *manglecp.Options) { o.MacroCacheBytes = limit })
	for i := range 300 {
		req := diagnoseRequest()
		req["facts"] = append(diagnoseFacts(), map[string]any{"pred": "current_url", "args": []any{fmt.Sprintf("https://x/%d", i)}})
		h.evaluate("f", req).intentResponse(t)
		if _, bytes := h.srv.CacheStats(); bytes > limit {
			t.Fatalf("after %d evaluations the cache holds %d bytes > %d", i+1, bytes, limit)
		}
	}
	if entries, _ := h.srv.CacheStats(); entries == 0 || entries >= 900 {
		t.Errorf("entries %d: eviction did not happen", entries)
	}
}

// TestDrainUnderLoad: clients keep sending while the server starts
// draining; every request gets exactly one answer, either a normal one or
// server_not_ready, and Wait returns once the running ones are done.
func TestDrainUnderLoad(t *testing.T) {
	h := newHarness(t, nil, nil)
	var ok, refused, other atomic.Int64
	stop := testenv.Repeat(8, func(w, i int) {
		id := fmt.Sprintf("w%d-%d", w, i)
		r := h.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, id, diagnoseRequest()), nil)
		switch {
		case r.env.IDString() != id:
			other.Add(1)
		case r.status == http.StatusOK:
			ok.Add(1)
		case r.status == http.StatusServiceUnavailable:
			refused.Add(1)
		default:
			other.Add(1)
		}
	})
	testenv.Eventually(t, 10*time.Second, "requests answered before the drain", func() bool { return ok.Load() >= 8 })
	h.srv.Drain()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Wait(ctx); err != nil {
		t.Errorf("Wait: %v", err)
	}
	testenv.Eventually(t, 10*time.Second, "a request refused while draining", func() bool { return refused.Load() >= 1 })
	stop()
	if ok.Load() == 0 || refused.Load() == 0 || other.Load() != 0 {
		t.Errorf("ok %d, refused %d, other %d", ok.Load(), refused.Load(), other.Load())
	}
}
