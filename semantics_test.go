package manglecp_test

// Regression tests of issue 9, "Hardening: semantics" in
// docs/RELIABILITY.md: each failed before its fix.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// TestMacroOwnerCannotBeReplaced (issue 9 item 2): the same request from a
// second identity gets its own macro_id, so it cannot take over the first
// identity's macro-tool: the owner keeps access, and neither the other's
// macro_id nor a confirmation token for it is of any use to the second.
func TestMacroOwnerCannotBeReplaced(t *testing.T) {
	h := newHarness(t, nil, func(o *manglecp.Options) {
		o.Identities = []manglecp.Identity{
			{Name: "alice", Token: "alice-token-0123456789abc", Permissions: []string{"*"}},
			{Name: "mallory", Token: "mallory-token-0123456789a", Permissions: []string{"*"}},
			{Name: "observer", Token: "observer-token-0123456789", Permissions: []string{"intent:observe"}},
		}
	})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	alice, mallory, observer := as("alice-token-0123456789abc"), as("mallory-token-0123456789a"), as("observer-token-0123456789")
	evaluate := func(hdr map[string]string, req map[string]any) *protocol.IntentResponse {
		t.Helper()
		return h.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "e", req), hdr).intentResponse(t)
	}
	invoke := func(hdr map[string]string, id, token string) *reply {
		t.Helper()
		p := map[string]any{"macro_id": id, "args": map[string]any{"request_id": "r42"}}
		if token != "" {
			p["confirmation_token"] = token
		}
		return h.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "i", p), hdr)
	}

	mine := tool(t, evaluate(alice, diagnoseRequest()), "write_diagnosis_report")
	again := tool(t, evaluate(alice, diagnoseRequest()), "write_diagnosis_report")
	if again.MacroID != mine.MacroID {
		t.Fatalf("macro_ids are not deterministic per identity: %s, %s", mine.MacroID, again.MacroID)
	}
	theirs := tool(t, evaluate(mallory, diagnoseRequest()), "write_diagnosis_report")
	if theirs.MacroID == mine.MacroID {
		t.Fatalf("two identities got the same macro_id %s for the same request", mine.MacroID)
	}
	token := h.srv.ConfirmationToken(mine.MacroID) // issued to alice's host
	if e := invoke(mallory, mine.MacroID, token).errorPayload(t); e.Code != protocol.CodeAuthInsufficient {
		t.Errorf("mallory invoking alice's macro-tool with alice's token: %s, want auth_insufficient", e.Code)
	}
	if e := invoke(mallory, theirs.MacroID, token).errorPayload(t); e.Code != protocol.CodeConfirmationInvalid {
		t.Errorf("mallory invoking her own macro-tool with alice's token: %s, want confirmation_invalid", e.Code)
	}
	if r := invoke(alice, mine.MacroID, token); r.status != http.StatusOK {
		t.Errorf("the owner lost access: %s", r.raw)
	}

	// An identity allowed only to observe cannot claim another's observe tool either.
	observe := diagnoseRequest()
	observe["intent"] = map[string]any{"name": "observe"}
	aliceObs := evaluate(alice, observe).MacroTools
	obsObs := evaluate(observer, observe).MacroTools
	if len(aliceObs) == 0 || len(obsObs) != len(aliceObs) {
		t.Fatalf("observe tools: %d for alice, %d for the observer", len(aliceObs), len(obsObs))
	}
	for i := range aliceObs {
		if aliceObs[i].MacroID == obsObs[i].MacroID {
			t.Errorf("observer and alice share macro_id %s", aliceObs[i].MacroID)
		}
	}
	p := map[string]any{"macro_id": aliceObs[0].MacroID, "args": map[string]any{}}
	if e := h.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "o", p), observer).errorPayload(t); e.Code != protocol.CodeAuthInsufficient {
		t.Errorf("observer invoking alice's observe tool: %s", e.Code)
	}
}

// TestIntegralFloatsAreIntegers (issue 9 item 6): 404.0 and 4e2 for a
// number argument are the integer 404/400: the rules compare them and
// select the diagnosis exactly as for 404; a non-integral float for a
// number argument is a type_mismatch naming the fact, never a 500.
func TestIntegralFloatsAreIntegers(t *testing.T) {
	h := newHarness(t, nil, nil)
	withStatus := func(status any) map[string]any {
		req := diagnoseRequest()
		facts := diagnoseFacts()
		facts[3]["args"] = []any{"s1", "r42", status, 1771511399500}
		req["facts"] = facts
		return req
	}
	want := tool(t, h.evaluate("int", withStatus(404)).intentResponse(t), "diagnose_causal_chain").MacroID
	for _, status := range []any{json.Number("404.0"), json.Number("4.04e2"), json.Number("404.000"), json.Number("40400e-2")} {
		got := tool(t, h.evaluate("f", withStatus(status)).intentResponse(t), "diagnose_causal_chain").MacroID
		if got != want {
			t.Errorf("status %s: macro_id %s, want the one of 404 (%s)", status, got, want)
		}
	}
	for _, status := range []any{json.Number("404.5"), json.Number("1e300")} {
		r := h.evaluate("x", withStatus(status))
		e := r.errorPayload(t)
		if r.status != http.StatusBadRequest || e.Code != protocol.CodeTypeMismatch || e.Details == nil || len(e.Details.Violations) != 1 {
			t.Fatalf("status %s: %d %s", status, r.status, r.raw)
		}
		v := e.Details.Violations[0]
		if v.FactIndex != 3 || v.Predicate != "net_response" || v.ArgumentIndex == nil || *v.ArgumentIndex != 2 {
			t.Errorf("status %s: violation %s", status, mustJSON(v))
		}
	}
}

// TestExpiryAgainstServerClock (issue 9 item 10): invoke checks the
// validity window against the server's clock, not the request's eval_time.
func TestExpiryAgainstServerClock(t *testing.T) {
	var mu sync.Mutex
	now := fixedNow
	h := newHarness(t, nil, func(o *manglecp.Options) {
		o.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	})
	setNow := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	m := tool(t, h.evaluate("e", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
	if m.Validity == nil || m.Validity.ExpiresAt == nil || !m.Validity.ExpiresAt.Equal(time.Date(2026, 2, 19, 14, 35, 0, 0, time.UTC)) {
		t.Fatalf("validity %s", mustJSON(m.Validity))
	}
	args := map[string]any{"request_id": "r42"}
	// An eval_time after the window does not expire it while the clock is inside.
	if r := h.invoke("in", map[string]any{"macro_id": m.MacroID, "args": args, "eval_time": "2026-02-19T14:50:00Z"}); r.status != http.StatusOK {
		t.Errorf("inside the window by the clock, eval_time after it: %s", r.raw)
	}
	setNow(time.Date(2026, 2, 19, 14, 35, 5, 0, time.UTC))
	r := h.invoke("old", map[string]any{"macro_id": m.MacroID, "args": args, "eval_time": "2026-02-19T14:30:06Z"})
	if e := r.errorPayload(t); e.Code != protocol.CodeMacroExpired || e.Details == nil || e.Details.ExpiredAt != "2026-02-19T14:35:00Z" {
		t.Errorf("after the window by the clock, with an old eval_time: %s", r.raw)
	}
	if e := h.invoke("none", map[string]any{"macro_id": m.MacroID, "args": args}).errorPayload(t); e.Code != protocol.CodeMacroExpired {
		t.Errorf("after the window without eval_time: %s", e.Code)
	}
}

// TestInt64WrapperGoesOut (issue 9 item 11): integers beyond 2^53 leave
// the server in the int64 wrapper, in proof hints' supporting_facts too.
func TestInt64WrapperGoesOut(t *testing.T) {
	h := newHarness(t, nil, nil)
	req := diagnoseRequest()
	facts := diagnoseFacts()
	facts[1]["args"] = []any{"s1", "error", "TypeError", json.Number("9007199254740993")}
	req["facts"] = facts
	req["options"] = map[string]any{"disclosure_preference": "full", "include_proof_hints": true}
	r := h.evaluate("big", req)
	r.intentResponse(t)
	raw := string(r.env.Payload)
	if !strings.Contains(raw, `"supporting_facts":[{"pred":"console_event","args":["s1","error","TypeError",{"_type":"int64","value":"9007199254740993"}]`) {
		t.Errorf("no supporting fact with the wrapped 2^53+1: %s", raw)
	}
	checkNoBareBigInts(t, r.env.Payload)
}

// checkNoBareBigInts fails when a JSON number beyond 2^53 - 1 appears
// anywhere in raw (strings, such as proof tree text, do not count).
func checkNoBareBigInts(t *testing.T, raw []byte) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case json.Number:
			if n, err := x.Int64(); err != nil || n > 1<<53-1 || n < -(1<<53-1) {
				if !strings.ContainsAny(string(x), ".eE") {
					t.Errorf("bare integer %s at %s", x, path)
				}
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case map[string]any:
			for k, e := range x {
				walk(path+"."+k, e)
			}
		}
	}
	walk("", v)
}

// TestZeroTokenBudget (issue 9 item 12): max_tokens_budget 0 is a budget
// of zero: every tool is demoted as far as it goes and the response warns
// that the budget could not be met.
func TestZeroTokenBudget(t *testing.T) {
	h := newHarness(t, nil, nil)
	req := diagnoseRequest()
	req["constraints"] = map[string]any{"max_tokens_budget": 0}
	resp := h.evaluate("zero", req).intentResponse(t)
	if len(resp.MacroTools) == 0 {
		t.Fatal("no macro-tools")
	}
	for _, m := range resp.MacroTools {
		if m.DisclosureLevel != protocol.DisclosureMinimal {
			t.Errorf("%s at %s with a zero budget", m.Name, m.DisclosureLevel)
		}
	}
	warned := false
	for _, w := range resp.Warnings {
		warned = warned || w.Code == protocol.WarnTokenBudgetExceeded
	}
	if !warned {
		t.Errorf("no token_budget_exceeded warning: %s", mustJSON(resp.Warnings))
	}
}

// TestMissingRequiredFactIsRequestLevel (issue 9 item 13): a missing
// required fact is a request-level detail, never a violation with a fake
// fact_index.
func TestMissingRequiredFactIsRequestLevel(t *testing.T) {
	h := newHarness(t, nil, nil)
	r := h.evaluate("m", map[string]any{"intent": map[string]any{"name": "diagnose_error"},
		"facts": []any{map[string]any{"pred": "console_event", "args": []any{"s1", "error", "x", 1}}}})
	e := r.errorPayload(t)
	if r.status != http.StatusBadRequest || e.Code != protocol.CodeInvalidFacts || e.Details == nil {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	if strings.Contains(string(r.raw), `"fact_index":-1`) {
		t.Errorf("fact_index -1 in %s", r.raw)
	}
	for _, v := range e.Details.Violations {
		if v.FactIndex < 0 {
			t.Errorf("violation %s", mustJSON(v))
		}
	}
	if len(e.Details.MissingFacts) != 1 || e.Details.MissingFacts[0].Predicate != "current_url" || e.Details.MissingFacts[0].Issue != protocol.IssueMissingRequiredFact || e.Details.MissingFacts[0].Message == "" {
		t.Errorf("missing_facts %s", mustJSON(e.Details))
	}
	// With a bad fact too, both are reported.
	r = h.evaluate("m2", map[string]any{"intent": map[string]any{"name": "diagnose_error"},
		"facts": []any{map[string]any{"pred": "console_event", "args": []any{"s1", "error", "x"}}}})
	e = r.errorPayload(t)
	if len(e.Details.Violations) != 1 || e.Details.Violations[0].FactIndex != 0 || len(e.Details.MissingFacts) != 1 {
		t.Errorf("bad fact and missing fact: %s", r.raw)
	}
}

// TestLenientRFC3339 (issue 9 item 14): lowercase t and z and a leap
// second are RFC 3339 (section 5.6) and accepted in eval_time and "t".
func TestLenientRFC3339(t *testing.T) {
	h := newHarness(t, nil, nil)
	for _, tc := range []struct{ evalTime, at, used string }{
		{"2026-02-19t14:30:05z", "2026-02-19t14:30:00z", "2026-02-19T14:30:05Z"},
		{"2026-02-19T14:30:05Z", "2026-02-19T14:29:60Z", "2026-02-19T14:30:05Z"},
		{"2016-12-31T23:59:60.5Z", "2016-12-31T23:59:60Z", "2017-01-01T00:00:00.5Z"},
	} {
		req := map[string]any{"intent": map[string]any{"name": "diagnose_error"},
			"facts": []any{
				map[string]any{"pred": "current_url", "args": []any{"https://x"}},
				map[string]any{"pred": "console_event", "args": []any{"s1", "error", "x", 1}, "t": map[string]any{"at": tc.at}},
			},
			"eval_time": tc.evalTime}
		resp := h.evaluate("t", req).intentResponse(t)
		if got := resp.EvalTimeUsed.Format(time.RFC3339Nano); got != tc.used {
			t.Errorf("eval_time %s: eval_time_used %s, want %s", tc.evalTime, got, tc.used)
		}
		if len(resp.MacroTools) == 0 {
			t.Errorf("eval_time %s, t.at %s: no tools", tc.evalTime, tc.at)
		}
	}
}

// TestStrictRFC3339: what Go's time.Parse takes beyond RFC 3339 (a
// one-digit hour, a comma before the fraction, an offset beyond 23:59) is
// malformed in eval_time and an invalid fact in "t".
func TestStrictRFC3339(t *testing.T) {
	h := newHarness(t, nil, nil)
	for _, bad := range []string{"2026-02-19T4:30:05Z", "2026-02-19T14:30:05,5Z", "2026-02-19T14:30:05+24:00"} {
		t.Run(bad, func(t *testing.T) {
			req := diagnoseRequest()
			req["eval_time"] = bad
			r := h.evaluate("e", req)
			if e := r.errorPayload(t); e.Code != protocol.CodeMalformedMessage {
				t.Errorf("eval_time %s: %s", bad, r.raw)
			}
			req = map[string]any{"intent": map[string]any{"name": "diagnose_error"},
				"facts": []any{
					map[string]any{"pred": "current_url", "args": []any{"https://x"}},
					map[string]any{"pred": "console_event", "args": []any{"s1", "error", "x", 1}, "t": map[string]any{"at": bad}},
				}}
			r = h.evaluate("t", req)
			e := r.errorPayload(t)
			if e.Code != protocol.CodeInvalidFacts || e.Details == nil || len(e.Details.Violations) != 1 || e.Details.Violations[0].FactIndex != 1 {
				t.Errorf("t.at %s: %s", bad, r.raw)
			}
		})
	}
}

// TestAmbiguousPoints (issue 9 item 15): the decisions documented in
// docs/design.md "Decisions on ambiguous points".
func TestAmbiguousPoints(t *testing.T) {
	h := newHarness(t, nil, nil)
	withConstraint := func(name string, v int) map[string]any {
		req := diagnoseRequest()
		req["constraints"] = map[string]any{name: v}
		return req
	}
	t.Run("max_facts_created 0 is a budget of zero", func(t *testing.T) {
		r := h.evaluate("c0", withConstraint("max_facts_created", 0))
		e := r.errorPayload(t)
		if e.Code != protocol.CodeDerivationLimitExceeded || e.Details == nil || e.Details.Budget == nil || e.Details.Budget.Limit != 0 {
			t.Errorf("%s", r.raw)
		}
	})
	for _, name := range []string{"max_compute_ms", "max_intervals_per_atom"} {
		t.Run(name+" 0 is refused, saying why", func(t *testing.T) {
			r := h.evaluate("c0", withConstraint(name, 0))
			e := r.errorPayload(t)
			if e.Code != protocol.CodeMalformedMessage || e.Details == nil || e.Details.Field != "constraints."+name || !strings.Contains(e.Message, "0") {
				t.Errorf("%s", r.raw)
			}
		})
	}
	t.Run("max_tools_returned 0 returns none", func(t *testing.T) {
		resp := h.evaluate("c0", withConstraint("max_tools_returned", 0)).intentResponse(t)
		if len(resp.MacroTools) != 0 {
			t.Errorf("%d tools", len(resp.MacroTools))
		}
	})
	t.Run("eval_time now is the server clock", func(t *testing.T) {
		req := diagnoseRequest()
		req["eval_time"] = "now"
		resp := h.evaluate("now", req).intentResponse(t)
		if !resp.EvalTimeUsed.Equal(fixedNow) {
			t.Errorf("eval_time_used %v, want the clock %v", resp.EvalTimeUsed, fixedNow)
		}
		for _, w := range resp.Warnings {
			if w.Code == protocol.WarnEvalTimeChosen {
				t.Errorf("eval_time now is the client's choice, not a chosen time: %s", mustJSON(w))
			}
		}
	})
	t.Run("duplicate facts change nothing", func(t *testing.T) {
		base := h.evaluate("d1", diagnoseRequest()).intentResponse(t)
		req := diagnoseRequest()
		facts := diagnoseFacts()
		dup := facts[1]
		withSource := map[string]any{"pred": dup["pred"], "args": dup["args"], "t": dup["t"], "source": map[string]any{"source_type": "client", "source_id": "again"}}
		req["facts"] = append(facts, dup, withSource, facts[0])
		req["options"] = map[string]any{"disclosure_preference": "full", "include_proof_hints": true}
		got := h.evaluate("d2", req).intentResponse(t)
		if len(got.MacroTools) != len(base.MacroTools) {
			t.Fatalf("%d tools, want %d", len(got.MacroTools), len(base.MacroTools))
		}
		for i := range base.MacroTools {
			if got.MacroTools[i].MacroID != base.MacroTools[i].MacroID {
				t.Errorf("duplicates changed macro_id of %s", base.MacroTools[i].Name)
			}
		}
		if got.Diagnostics.FactsEvaluated != base.Diagnostics.FactsEvaluated {
			t.Errorf("facts_evaluated %d, want %d", got.Diagnostics.FactsEvaluated, base.Diagnostics.FactsEvaluated)
		}
		for _, d := range got.ProofHints.Derivations {
			seen := map[string]bool{}
			for _, f := range d.SupportingFacts {
				k := mustJSON(f)
				if seen[k] {
					t.Errorf("supporting fact twice: %s", k)
				}
				seen[k] = true
			}
		}
	})
	t.Run("state-delta facts fed back are accepted", func(t *testing.T) {
		m := tool(t, h.evaluate("s", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
		out := h.invoke("s", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}}).invokeResponse(t)
		if len(out.StateDelta.Assert) == 0 {
			t.Fatal("no state delta")
		}
		req := diagnoseRequest()
		facts := []any{}
		for _, f := range diagnoseFacts() {
			facts = append(facts, f)
		}
		for _, f := range out.StateDelta.Assert {
			facts = append(facts, f) // category "server" and source, as the server sent it
		}
		req["facts"] = facts
		resp := h.evaluate("s2", req).intentResponse(t)
		if got := tool(t, resp, "diagnose_causal_chain"); got.MacroID != m.MacroID {
			t.Errorf("fed-back output facts changed the composition: %s vs %s", got.MacroID, m.MacroID)
		}
		found := false
		for _, w := range resp.Warnings {
			found = found || w.Code == protocol.WarnOutputFactsIgnored
		}
		if !found {
			t.Errorf("no output_facts_ignored warning: %s", mustJSON(resp.Warnings))
		}
	})
	t.Run("a large request sets fed-back facts aside in every part", func(t *testing.T) {
		// Enough facts to be checked and keyed in several parts on
		// several goroutines, with duplicates across parts.
		large := func(extra []any) map[string]any {
			facts := []any{}
			for _, f := range diagnoseFacts() {
				facts = append(facts, f)
			}
			for i := range 5000 {
				facts = append(facts, map[string]any{"pred": "console_event", "args": []any{"s1", "info", fmt.Sprintf("message %d", i%4000), 1771511000000 + i%4000}})
				if len(extra) > 0 && i%2000 == 0 {
					facts = append(facts, extra...)
				}
			}
			req := diagnoseRequest()
			req["facts"] = facts
			return req
		}
		base := h.evaluate("l1", large(nil)).intentResponse(t)
		m := tool(t, base, "diagnose_causal_chain")
		out := h.invoke("l1", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}}).invokeResponse(t)
		var fed []any
		for _, f := range out.StateDelta.Assert {
			fed = append(fed, f)
		}
		if len(fed) == 0 {
			t.Fatal("no state delta")
		}
		resp := h.evaluate("l2", large(fed)).intentResponse(t)
		if got := tool(t, resp, "diagnose_causal_chain"); got.MacroID != m.MacroID {
			t.Errorf("fed-back output facts changed the composition: %s vs %s", got.MacroID, m.MacroID)
		}
		count := ""
		for _, w := range resp.Warnings {
			if w.Code == protocol.WarnOutputFactsIgnored {
				count = fmt.Sprint(w.Details["count"])
			}
		}
		if want := fmt.Sprint(3 * len(fed)); count != want {
			t.Errorf("output_facts_ignored counted %q facts, want %s: %s", count, want, mustJSON(resp.Warnings))
		}
	})
	t.Run("retract patterns carry no category", func(t *testing.T) {
		m := tool(t, h.evaluate("r", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
		out := h.invoke("r", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}})
		var p struct {
			StateDelta struct {
				Retract []map[string]any `json:"retract"`
			} `json:"state_delta"`
		}
		if err := json.Unmarshal(out.env.Payload, &p); err != nil || len(p.StateDelta.Retract) == 0 {
			t.Fatalf("retract patterns: %v %s", err, out.raw)
		}
		for _, pat := range p.StateDelta.Retract {
			if _, ok := pat["category"]; ok {
				t.Errorf("retract pattern with a category: %v", pat)
			}
		}
	})
}

// TestStateDeltaOnTheWire (issue 9 items 11 and 15): what an action puts
// in its outcome goes out as the spec wants it: integers beyond 2^53
// wrapped in results, asserted, retracted and continuation facts; retract
// patterns without a category (they match every category).
func TestStateDeltaOnTheWire(t *testing.T) {
	const big = int64(1)<<60 + 1
	d := faultDomain(nil)
	d.Actions["fail"] = manglecp.ActionSpec{Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
		return &manglecp.Outcome{
			Result:            map[string]any{"big": big, "list": []any{int64(1), big}, "small": int64(7)},
			Assert:            []protocol.Fact{protocol.NewFact("counter", big)},
			Retract:           []protocol.Fact{{Pred: "counter", Args: []any{nil}, Category: protocol.CategoryServer}},
			ContinuationFacts: []protocol.Fact{protocol.NewFact("counter", json.Number("9007199254740993"))},
		}, nil
	}}
	h := newHarness(t, d, nil)
	resp := h.evaluate("e", map[string]any{"intent": map[string]any{"name": "fault"},
		"facts": []any{map[string]any{"pred": "fault", "args": []any{"failing"}}}}).intentResponse(t)
	r := h.invoke("i", map[string]any{"macro_id": tool(t, resp, "failing").MacroID, "args": map[string]any{}})
	out := r.invokeResponse(t)
	checkNoBareBigInts(t, r.env.Payload)
	for _, want := range []string{`"big":{"_type":"int64","value":"1152921504606846977"}`, `"small":7`,
		`"args":[{"_type":"int64","value":"9007199254740993"}]`} {
		if !strings.Contains(string(r.env.Payload), want) {
			t.Errorf("payload lacks %s: %s", want, r.env.Payload)
		}
	}
	if len(out.StateDelta.Retract) != 1 || out.StateDelta.Retract[0].Category != "" {
		t.Errorf("retract patterns %s, want one without category", mustJSON(out.StateDelta.Retract))
	}
}

// TestStateDeltaCutSays: a state delta over max_state_delta keeps the
// action's first facts, and an observability event says what it cut
// (nothing is lost silently).
func TestStateDeltaCutSays(t *testing.T) {
	d := faultDomain(nil)
	d.Actions["fail"] = manglecp.ActionSpec{Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
		out := &manglecp.Outcome{Retract: []protocol.Fact{protocol.NewFact("counter", nil)}}
		for i := range 12 {
			out.Assert = append(out.Assert, protocol.NewFact("counter", int64(i)))
		}
		return out, nil
	}}
	h := newHarness(t, d, func(o *manglecp.Options) { o.MaxStateDelta = 5 })
	resp := h.evaluate("e", map[string]any{"intent": map[string]any{"name": "fault"},
		"facts": []any{map[string]any{"pred": "fault", "args": []any{"failing"}}}}).intentResponse(t)
	out := h.invoke("i", map[string]any{"macro_id": tool(t, resp, "failing").MacroID, "args": map[string]any{}}).invokeResponse(t)
	if len(out.StateDelta.Assert) != 4 || fmt.Sprint(out.StateDelta.Assert[0].Args) != "[0]" || len(out.StateDelta.Retract) != 1 {
		t.Errorf("delta %s, want the first 4 facts and the retraction", mustJSON(out.StateDelta))
	}
	evs := out.Observability.Events
	if len(evs) == 0 || evs[len(evs)-1].Action != "state_delta" || !strings.Contains(evs[len(evs)-1].Detail, "kept 4 of 12 asserted facts and 1 of 1 retractions (max_state_delta 5)") {
		t.Errorf("events %s, want one that says what the delta kept", mustJSON(evs))
	}
}

// TestEvalTimeBeyondRFC3339Years: an eval_time whose offset carries it out
// of years 0000-9999 once in UTC is malformed_message naming the time, on
// an intent and on an invocation, and the server goes on answering.
func TestEvalTimeBeyondRFC3339Years(t *testing.T) {
	h := newHarness(t, nil, nil)
	for _, bad := range []string{"0000-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00"} {
		req := diagnoseRequest()
		req["eval_time"] = bad
		for name, r := range map[string]*reply{
			"intent": h.evaluate("bad", req),
			"invoke": h.invoke("bad", map[string]any{"macro_id": "m-0000", "args": map[string]any{}, "eval_time": bad}),
		} {
			e := r.errorPayload(t)
			if e.Code != protocol.CodeMalformedMessage || !strings.Contains(e.Message, bad) || !strings.Contains(e.Message, "0000-9999") {
				t.Errorf("%s with eval_time %s: %s %q", name, bad, e.Code, e.Message)
			}
		}
	}
	if r := h.evaluate("after", diagnoseRequest()); r.status != http.StatusOK {
		t.Errorf("after: %s", r.raw)
	}
}
