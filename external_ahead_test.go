package manglecp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
)

// TestExternalPredicatesOfLargeRequests: a large request's external
// predicates are computed while the kernel loads its facts (a goroutine of
// their own), a small one's before; either way their answer reaches the
// rules and the macro_ids, a failure is evaluation_failed, a panic is
// internal_error (the server keeps serving) and one that never returns is
// stopped by max_compute_ms.
func TestExternalPredicatesOfLargeRequests(t *testing.T) {
	for _, n := range []int{0, 3000} { // extra facts: below and above externalAheadFacts
		request := func() map[string]any {
			req := diagnoseRequest()
			facts := diagnoseFacts()
			for i := range n {
				facts = append(facts, map[string]any{"pred": "console_event", "args": []any{"s1", "info", fmt.Sprint("m", i), 1771511300000 + i}})
			}
			req["facts"] = facts
			return req
		}
		for _, tc := range []struct {
			name    string
			compute func(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error)
			check   func(t *testing.T, h *harness, r *reply)
		}{
			{"answer", func(_ context.Context, in *manglecp.ExternalInput) ([][]any, error) {
				if len(in.Facts) < n {
					return nil, fmt.Errorf("saw %d facts", len(in.Facts))
				}
				return [][]any{{"r42"}}, nil
			}, func(t *testing.T, h *harness, r *reply) {
				m := tool(t, r.intentResponse(t), "write_diagnosis_report")
				if m.ContextInjection == nil || !strings.Contains(m.ContextInjection.Instructions, "already on the server") {
					t.Errorf("the rules did not see report_exists: %s", mustJSON(m))
				}
			}},
			{"error", func(context.Context, *manglecp.ExternalInput) ([][]any, error) {
				return nil, errors.New("disk on fire")
			}, func(t *testing.T, h *harness, r *reply) {
				if e := r.errorPayload(t); e.Code != protocol.CodeEvaluationFailed || strings.Contains(e.Message, "fire") {
					t.Errorf("error %s: %s", e.Code, e.Message)
				}
			}},
			{"panic", func(context.Context, *manglecp.ExternalInput) ([][]any, error) {
				panic("external predicate bug")
			}, func(t *testing.T, h *harness, r *reply) {
				if e := r.errorPayload(t); e.Code != protocol.CodeInternalError || strings.Contains(e.Message, "bug") {
					t.Errorf("error %s: %s", e.Code, e.Message)
				}
				if r := h.evaluate("after", map[string]any{"intent": map[string]any{"name": "observe"}, "facts": diagnoseFacts()}); r.status != http.StatusOK {
					t.Errorf("after the panic: %d %s", r.status, r.raw)
				}
			}},
			{"stuck", func(ctx context.Context, _ *manglecp.ExternalInput) ([][]any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}, func(t *testing.T, h *harness, r *reply) {
				if e := r.errorPayload(t); e.Code != protocol.CodeEvaluationTimeout {
					t.Errorf("error %s: %s", e.Code, e.Message)
				}
			}},
		} {
			t.Run(fmt.Sprintf("%s/extra=%d", tc.name, n), func(t *testing.T) {
				d := browser.Domain(browser.Config{ReportDir: t.TempDir()})
				ext := d.External["report_exists"]
				ext.Compute = tc.compute
				if tc.name == "panic" {
					calls := 0
					ext.Compute = func(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
						if calls++; calls == 1 {
							return tc.compute(ctx, in)
						}
						return nil, nil
					}
				}
				d.External["report_exists"] = ext
				h := newHarness(t, &d, nil)
				req := request()
				if tc.name == "stuck" {
					req["constraints"] = map[string]any{"max_compute_ms": 200}
				}
				tc.check(t, h, h.evaluate("x", req))
			})
		}
	}
}

// TestExternalAnswersChangeMacroIDs: for a large request too, the external
// predicates' answer is part of the composition: another answer, another
// macro_id.
func TestExternalAnswersChangeMacroIDs(t *testing.T) {
	answer := [][]any{}
	d := browser.Domain(browser.Config{ReportDir: t.TempDir()})
	ext := d.External["report_exists"]
	ext.Compute = func(context.Context, *manglecp.ExternalInput) ([][]any, error) { return answer, nil }
	d.External["report_exists"] = ext
	h := newHarness(t, &d, nil)
	req := diagnoseRequest()
	facts := diagnoseFacts()
	for i := range 3000 {
		facts = append(facts, map[string]any{"pred": "console_event", "args": []any{"s1", "info", fmt.Sprint("m", i), 1771511300000 + i}})
	}
	req["facts"] = facts
	before := tool(t, h.evaluate("a", req).intentResponse(t), "diagnose_causal_chain")
	answer = [][]any{{"r1"}}
	after := tool(t, h.evaluate("b", req).intentResponse(t), "diagnose_causal_chain")
	if before.MacroID == after.MacroID {
		t.Error("another external answer, the same macro_id")
	}
}

// TestLargeRequestsAnswerAlike: large requests, sent at once and one after
// another (their fact sets reuse each other's buffers), answer as the
// first did: equal requests get equal macro_ids, another one others.
func TestLargeRequestsAnswerAlike(t *testing.T) {
	h := newHarness(t, nil, nil)
	request := func(k int) map[string]any {
		req := diagnoseRequest()
		facts := diagnoseFacts()
		for i := range 2500 {
			facts = append(facts, map[string]any{"pred": "console_event", "args": []any{"s1", "info", fmt.Sprint("m", k, "-", i), 1771511300000 + i}})
		}
		req["facts"] = facts
		return req
	}
	want := [2]string{}
	for k := range want {
		want[k] = tool(t, h.evaluate(fmt.Sprint("first", k), request(k)).intentResponse(t), "diagnose_causal_chain").MacroID
	}
	if want[0] == want[1] {
		t.Fatal("different facts, equal macro_ids")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			r := h.evaluate(fmt.Sprint("again", i), request(i%2))
			if r.status != http.StatusOK {
				t.Errorf("status %d", r.status)
				return
			}
			if got := tool(t, r.intentResponse(t), "diagnose_causal_chain").MacroID; got != want[i%2] {
				t.Errorf("request %d: macro_id %s, want %s", i, got, want[i%2])
			}
		})
	}
	wg.Wait()
}
