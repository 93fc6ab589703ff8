package manglecp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// quadraticRequest is the CPU attack of issue 9 item 7: n failed responses
// in one session and n console errors in another. The browser rules look
// up, for each failed request, its response and the console errors of its
// session: about 2n² facts looked at, while almost nothing is derived, so
// max_facts_created never trips. At n = 4999 the message is 648 KB and
// took about 5.5 s of CPU without a work budget.
func quadraticRequest(n int) map[string]any {
	facts := []any{map[string]any{"pred": "current_url", "args": []any{"https://app.example.com/"}}}
	for i := range n {
		facts = append(facts,
			map[string]any{"pred": "net_response", "args": []any{"a", fmt.Sprint("r", i), 500, 1771510000000 + i}},
			map[string]any{"pred": "console_event", "args": []any{"b", "error", fmt.Sprint("m", i), 1771510000000 + i}})
	}
	return map[string]any{"intent": map[string]any{"name": "diagnose_error"}, "facts": facts, "eval_time": "2026-02-19T14:30:05Z"}
}

// TestWorkBudgetBoundsQuadraticJoin: the attack request is refused with
// derivation_limit_exceeded and a budget in work units once it has spent
// the server's work budget, instead of running for seconds; the budget is
// advertised, and a server with a larger budget evaluates the same request.
func TestWorkBudgetBoundsQuadraticJoin(t *testing.T) {
	req := quadraticRequest(700) // about 2 million work units
	h := newHarness(t, nil, func(o *manglecp.Options) { o.Limits.MaxEvaluationWork = 500_000 })
	if got := h.srv.Manifest().Extensions["x-max_evaluation_work"]; fmt.Sprint(got) != "500000" {
		t.Errorf("manifest x-max_evaluation_work = %v, want 500000", got)
	}
	r := h.evaluate("quadratic", req)
	e := r.errorPayload(t)
	if r.status != http.StatusRequestEntityTooLarge || e.Code != protocol.CodeDerivationLimitExceeded || !e.Recoverable {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	if b := e.Details.Budget; b == nil || b.Limit != 500_000 || b.Consumed <= b.Limit || b.Unit != "work_units" {
		t.Errorf("budget %+v", e.Details.Budget)
	}
	roomy := newHarness(t, nil, func(o *manglecp.Options) { o.Limits.MaxEvaluationWork = 100_000_000 })
	if r := roomy.evaluate("quadratic", req); r.status != http.StatusOK {
		t.Errorf("with a budget of 100 million: %s", r.raw)
	}
}

// TestFairShareUnderFlood: while one identity floods the server with
// requests that each hold an evaluation slot for a long time, another
// identity's requests are still served promptly: the flooding identity
// gets at most its share of the slots and a freed slot goes to the caller
// running the fewest evaluations. (With a first-come-first-served queue
// the light request waited behind the whole flood and was refused with
// rate_limited.)
func TestFairShareUnderFlood(t *testing.T) {
	const hold = 700 * time.Millisecond
	var heavyNow, heavyMax atomic.Int64
	d := browser.Domain(browser.Config{ReportDir: t.TempDir()})
	ext := d.External["report_exists"]
	inner := ext.Compute
	ext.Compute = func(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
		if in.Intent == "observe" { // the heavy requests: hold the slot
			n := heavyNow.Add(1)
			defer heavyNow.Add(-1)
			for m := heavyMax.Load(); n > m && !heavyMax.CompareAndSwap(m, n); m = heavyMax.Load() {
			}
			select {
			case <-time.After(hold):
			case <-ctx.Done():
			}
		}
		return inner(ctx, in)
	}
	d.External["report_exists"] = ext
	h := newHarness(t, &d, func(o *manglecp.Options) {
		o.MaxConcurrentEvaluations = 2 // MaxEvaluationsPerCaller defaults to 1
		o.QueueTimeout = 1500 * time.Millisecond
		o.Identities = []manglecp.Identity{
			{Name: "heavy", Token: "heavy-token-0123456789abcdef", Permissions: []string{"*"}},
			{Name: "light", Token: "light-token-0123456789abcdef", Permissions: []string{"*"}},
		}
	})
	send := func(token, id string, payload map[string]any) (*protocol.Envelope, time.Duration) {
		start := time.Now()
		out := h.srv.Handle(context.Background(), &protocol.Inbound{
			Data:        envelope(t, protocol.TypeIntentRequest, id, payload),
			Credentials: &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: token},
			Peer:        "192.0.2.1",
		})
		return out, time.Since(start)
	}
	observe := diagnoseRequest()
	observe["intent"] = map[string]any{"name": "observe"}

	stopFlood := testenv.Repeat(8, func(i, j int) {
		send("heavy-token-0123456789abcdef", fmt.Sprintf("heavy-%d-%d", i, j), observe)
	})
	// The flood holds its slot; the rest of it waits in the queue.
	testenv.Eventually(t, 10*time.Second, "the flood holding a slot", func() bool { return heavyNow.Load() >= 1 })
	var worst time.Duration
	for i := range 4 {
		out, took := send("light-token-0123456789abcdef", fmt.Sprint("light-", i), diagnoseRequest())
		if out.Type != protocol.TypeIntentResponse {
			var e protocol.Error
			_ = json.Unmarshal(out.Payload, &e)
			t.Errorf("light request %d during the flood: %s %s", i, e.Code, e.Message)
		}
		worst = max(worst, took)
	}
	stopFlood()
	// A light request needs a few milliseconds of CPU; under the flood it
	// may wait for nothing but that (a slot is always kept for others).
	// The bound is generous for a shared machine, and well below the time
	// the flood holds the slots.
	if worst > hold {
		t.Errorf("slowest light request took %v; the flood holds slots for %v each", worst, hold)
	}
	if m := heavyMax.Load(); m > 1 {
		t.Errorf("the flooding identity ran %d evaluations at once; its share is 1", m)
	}
	t.Logf("slowest light request %v; heavy identity at most %d at once", worst, heavyMax.Load())
}

// TestExternalsOncePerEvaluation: each external predicate is computed
// once per evaluation, whatever the request asks for (proof hints, rule
// coverage, many facts naming the same request), and its time counts
// against max_compute_ms: one that does not return is stopped with
// evaluation_timeout.
func TestExternalsOncePerEvaluation(t *testing.T) {
	var calls atomic.Int64
	d := browser.Domain(browser.Config{ReportDir: t.TempDir()})
	ext := d.External["report_exists"]
	inner := ext.Compute
	ext.Compute = func(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
		calls.Add(1)
		if in.Intent == "observe" { // never returns on its own
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return inner(ctx, in)
	}
	d.External["report_exists"] = ext
	h := newHarness(t, &d, func(o *manglecp.Options) { o.RuleCoverage = true })
	req := diagnoseRequest()
	facts := diagnoseFacts()
	for i := range 50 { // many failed requests: still one call
		facts = append(facts, map[string]any{"pred": "net_response", "args": []any{"s1", fmt.Sprint("x", i), 500, 1771511399600 + i}})
	}
	req["facts"] = facts
	req["options"] = map[string]any{"include_proof_hints": true, "disclosure_preference": "full"}
	for i := range 3 {
		if r := h.evaluate(fmt.Sprint("d", i), req); r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.raw)
		}
		if got := calls.Load(); got != int64(i+1) {
			t.Fatalf("after %d evaluations the external was computed %d times", i+1, got)
		}
	}
	observe := diagnoseRequest()
	observe["intent"] = map[string]any{"name": "observe"}
	observe["constraints"] = map[string]any{"max_compute_ms": 100}
	start := time.Now()
	r := h.evaluate("stuck", observe)
	if e := r.errorPayload(t); e.Code != protocol.CodeEvaluationTimeout {
		t.Errorf("stuck external: %s", e.Code)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stuck external answered after %v, max_compute_ms 100", took)
	}
}
