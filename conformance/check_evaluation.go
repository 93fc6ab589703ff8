package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/manglecp/manglecp/protocol"
)

// sendMany sends payload n times with fresh ids, at most workers at once
// (pipelined on session transports), and returns the answers in order.
func (r *runner) sendMany(typ protocol.MessageType, payload any, n, workers int) []*reply {
	body := mustJSON(payload)
	out := make([]*reply, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				id := r.newID()
				msg := encodeRaw(typ, id, body)
				ctx, cancel := r.requestCtx()
				rep := r.w.do(ctx, typ, msg, id, true)
				cancel()
				r.record(typ, id, idEcho, r.w, rep)
				out[i] = rep
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// encodeRaw builds an envelope around an encoded payload.
func encodeRaw(typ protocol.MessageType, id string, payload json.RawMessage) []byte {
	env := &protocol.Envelope{Type: typ, ID: &id, Version: protocol.Version, Payload: payload}
	raw, err := env.Encode()
	if err != nil {
		panic(err)
	}
	return raw
}

// payloadMap decodes a reply's payload.
func payloadMap(rep *reply) map[string]any {
	var m map[string]any
	if rep != nil && rep.Env != nil {
		_ = decodeNumbers(rep.Env.Payload, &m)
	}
	return m
}

func checkEvalResponse(r *runner) outcome {
	m := r.mainReq()
	if m == nil {
		return fail("%s", r.mainWhy)
	}
	var f failures
	p := m.fullMap
	if t, ok := parseTime(p["eval_time_used"]); !ok || t.IsZero() {
		f.add("eval_time_used is %v, want a Time", p["eval_time_used"])
	}
	if v, present := p["eval_duration_ms"]; present {
		if n, ok := asInt(v); !ok || n < 0 {
			f.add("eval_duration_ms is %v, want a non-negative integer", v)
		}
	}
	if _, ok := asArray(p["macro_tools"]); !ok {
		f.add("macro_tools is a JSON %s, want array", jsonType(p["macro_tools"]))
	}
	if v := p["proof_hints"]; v != nil {
		f.add("proof_hints are present although the request did not ask for them")
	}
	seen := map[string]bool{}
	for i, t := range toolMaps(p) {
		id, _ := asString(t["macro_id"])
		if id == "" {
			f.add("macro_tools[%d] has no macro_id", i)
		}
		f.once(seen, id, "macro_id %q appears twice")
		if n, _ := asString(t["name"]); n == "" {
			f.add("macro_tools[%d] has no name", i)
		}
		switch t["disclosure_level"] {
		case protocol.DisclosureFull, protocol.DisclosureCondensed, protocol.DisclosureMinimal:
		default:
			f.add("macro_tools[%d].disclosure_level is %v", i, t["disclosure_level"])
		}
	}
	if m.fixture && len(m.tools()) == 0 {
		f.add("%s selects no macro-tool", m.desc)
	}
	return f.result("%s: %d macro-tools %s", m.desc, len(m.tools()), toolNames(m.tools()))
}

func checkEvalTime(r *runner) outcome {
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	var f failures
	want := m.req.EvalTime
	if want == "" {
		want = "2026-02-19T14:30:05Z"
	}
	q := m.req.clone()
	q.EvalTime = want
	_, p, _, problem := r.evaluate(q)
	if problem != "" {
		f.add("with eval_time %s: %s", want, problem)
	} else {
		wt, _ := protocol.ParseRFC3339(want)
		got, ok := parseTime(p["eval_time_used"])
		if !ok || !got.Equal(wt) {
			f.add("eval_time %s was answered with eval_time_used %v", want, p["eval_time_used"])
		}
	}
	q.EvalTime = ""
	_, p, _, problem = r.evaluate(q)
	if problem != "" {
		f.add("without eval_time: %s", problem)
	} else if _, ok := parseTime(p["eval_time_used"]); !ok {
		f.add("without eval_time, eval_time_used is %v, want the server's time", p["eval_time_used"])
	}
	return f.result("eval_time %s echoed; without one the server reported its own", want)
}

// determinismRuns is the number of identical requests of Spec 10 6.2.
const determinismRuns = 100

func checkDeterminism(r *runner) outcome {
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	workers := 4
	if r.w.kind() != "http" {
		workers = 8
	}
	reps := r.sendMany(protocol.TypeIntentRequest, m.req.payload(), determinismRuns, workers)
	first, tools := "", 0
	variants := map[string]int{}
	var f failures
	for i, rep := range reps {
		if !rep.is(protocol.TypeIntentResponse) {
			f.add("request %d of %d: %s", i+1, determinismRuns, rep.describe())
			continue
		}
		p := payloadMap(rep)
		sel := selection(p)
		if first == "" {
			first, tools = sel, len(toolMaps(p))
		}
		variants[sel]++
	}
	if len(variants) > 1 {
		var parts []string
		for sel, n := range variants {
			parts = append(parts, fmt.Sprintf("%d× {%s}", n, clip([]byte(sel), 200)))
		}
		sortStrings(parts)
		f.add("%d different selections (macro_id/disclosure_level/score): %s", len(variants), strings.Join(parts, " | "))
	}
	return f.result("%d identical requests of %s: %d macro-tools, same macro_ids, levels and scores", determinismRuns, m.desc, tools)
}

func checkGas(r *runner) outcome {
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	if d := m.full.Diagnostics; d != nil && d.FactsDerived > 0 && d.FactsDerived <= 10 {
		return skip("%s derives only %d facts; the gas test needs more than 10", m.desc, d.FactsDerived)
	}
	rep := r.send(protocol.TypeIntentRequest, m.req.withConstraint("max_facts_created", 10).payload())
	e, problem := wantCode(rep, protocol.CodeDerivationLimitExceeded)
	if problem != "" {
		return fail("%s with max_facts_created 10: %s", m.desc, problem)
	}
	budget, ok := asObject(e.Details["budget"])
	if !ok {
		return fail("derivation_limit_exceeded has no details.budget (Spec 10 6.3: it MUST include the limit and consumed values)")
	}
	var f failures
	limit, lok := asInt(budget["limit"])
	consumed, cok := asInt(budget["consumed"])
	if !lok || limit != 10 {
		f.add("details.budget.limit is %v, want 10", budget["limit"])
	}
	if !cok || consumed < 10 {
		f.add("details.budget.consumed is %v, want an integer of at least 10", budget["consumed"])
	}
	if u, present := budget["unit"]; present {
		if _, ok := asString(u); !ok {
			f.add("details.budget.unit is not a string")
		}
	}
	return f.result("budget limit %d, consumed %d", limit, consumed)
}

func checkMaxTools(r *runner) outcome {
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	resp, _, _, problem := r.evaluate(m.req.withConstraint("max_tools_returned", 1))
	if problem != "" {
		return fail("%s with max_tools_returned 1: %s", m.desc, problem)
	}
	if n := len(resp.MacroTools); n > 1 {
		return fail("max_tools_returned 1 returned %d macro-tools %s", n, toolNames(resp.MacroTools))
	}
	return pass("1 of %d macro-tools returned", len(m.tools()))
}

// proofHints evaluates the main request with proof hints once.
func (r *runner) proofHints() (map[string]any, *mainRequest, string) {
	if r.proofDone {
		return r.proof, r.main, r.proofWhy
	}
	r.proofDone = true
	m := r.mainReq()
	if m == nil {
		r.proofWhy = "no main request: " + r.mainWhy
		return nil, nil, r.proofWhy
	}
	_, p, _, problem := r.evaluate(m.req.withOption("disclosure_preference", protocol.DisclosureFull).withOption("include_proof_hints", true))
	if problem != "" {
		r.proofWhy = fmt.Sprintf("%s with include_proof_hints: %s", m.desc, problem)
		return nil, m, r.proofWhy
	}
	r.proof = p
	return p, m, ""
}

func checkProofHints(r *runner) outcome {
	p, m, why := r.proofHints()
	if p == nil {
		if m == nil {
			return r.noMain()
		}
		return fail("%s", why)
	}
	ph, ok := asObject(p["proof_hints"])
	if !ok {
		return fail("include_proof_hints true, but proof_hints is %s", jsonType(p["proof_hints"]))
	}
	var f failures
	derivs, ok := asArray(ph["derivations"])
	if !ok {
		return fail("proof_hints.derivations is a JSON %s, want array", jsonType(ph["derivations"]))
	}
	ids := map[string]bool{}
	for _, t := range toolMaps(p) {
		id, _ := asString(t["macro_id"])
		ids[id] = true
	}
	explained := map[string]bool{}
	f.eachObject(derivs, "derivations", func(i int, d map[string]any) {
		id, _ := asString(d["macro_id"])
		if !ids[id] {
			f.add("derivations[%d].macro_id %q is not a macro_id of the response", i, id)
		}
		explained[id] = true
		if s, ok := asString(d["selected_by"]); !ok || s == "" {
			f.add("derivation of %s has no selected_by", id)
		}
		if _, ok := asNumber(d["score"]); !ok {
			f.add("derivation of %s has no numeric score", id)
		}
		if _, ok := asArray(d["supporting_facts"]); !ok {
			f.add("derivation of %s: supporting_facts is not an array", id)
		}
		if _, ok := stringsOf(d["rule_chain"]); !ok {
			f.add("derivation of %s: rule_chain is not an array of predicate names", id)
		}
		if tree, present := d["tree"]; present && tree != nil {
			checkProofNode(&f, id, tree, 0)
		}
	})
	for id := range ids {
		if !explained[id] {
			f.add("macro-tool %s has no derivation", id)
		}
	}
	for i, x := range arrayOr(ph["excluded"]) {
		e, _ := asObject(x)
		for _, k := range []string{"candidate", "excluded_by", "reason"} {
			if _, ok := asString(e[k]); !ok {
				f.add("excluded[%d].%s is not a string", i, k)
			}
		}
	}
	for i, x := range arrayOr(ph["unmatched_facts"]) {
		u, _ := asObject(x)
		for _, k := range []string{"pred", "reason"} {
			if _, ok := asString(u[k]); !ok {
				f.add("unmatched_facts[%d].%s is not a string", i, k)
			}
		}
	}
	return f.result("%d derivations for %d macro-tools", len(derivs), len(ids))
}

func arrayOr(v any) []any {
	a, _ := asArray(v)
	return a
}

func checkProofNode(f *failures, id string, v any, depth int) {
	if depth > 64 {
		return
	}
	n, ok := asObject(v)
	if !ok {
		f.add("derivation of %s: a tree node is not an object", id)
		return
	}
	if _, ok := asString(n["fact"]); !ok {
		f.add("derivation of %s: a tree node has no fact", id)
	}
	if _, ok := asString(n["type"]); !ok {
		f.add("derivation of %s: a tree node has no type", id)
	}
	for _, c := range arrayOr(n["children"]) {
		checkProofNode(f, id, c, depth+1)
	}
}

var ruleStatuses = map[string]bool{"fired": true, "partially_alive": true, "dead": true, "inapplicable": true}

func checkRuleCoverage(r *runner) outcome {
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	rep := r.send(protocol.TypeIntentRequest, m.req.withOption("x-include_rule_coverage", true).payload())
	if isMalformed(rep) {
		return pass("the server does not take the x-include_rule_coverage option (rule coverage is optional)")
	}
	if !rep.is(protocol.TypeIntentResponse) {
		return fail("%s with x-include_rule_coverage: %s", m.desc, rep.describe())
	}
	p := payloadMap(rep)
	cov := path(p, "diagnostics", "rule_coverage")
	if cov == nil {
		return pass("not offered (an optional extension)")
	}
	c, ok := asObject(cov)
	if !ok {
		return fail("diagnostics.rule_coverage is a JSON %s, want object", jsonType(cov))
	}
	var f failures
	for _, k := range []string{"total_rules", "rules_fired", "rules_dormant", "rules_inapplicable"} {
		if v, present := c[k]; present {
			if n, ok := asInt(v); !ok || n < 0 {
				f.add("rule_coverage.%s is %v, want a non-negative integer", k, v)
			}
		} else if k == "total_rules" || k == "rules_fired" {
			f.add("rule_coverage.%s is missing", k)
		}
	}
	for i, x := range arrayOr(c["dormant_details"]) {
		d, _ := asObject(x)
		if _, ok := asString(d["rule"]); !ok {
			f.add("dormant_details[%d].rule is not a string", i)
		}
		if s, _ := asString(d["status"]); !ruleStatuses[s] {
			f.add("dormant_details[%d].status %q is not fired, partially_alive, dead or inapplicable", i, s)
		}
		if mp, present := d["missing_predicates"]; present {
			if _, ok := stringsOf(mp); !ok {
				f.add("dormant_details[%d].missing_predicates is not an array of strings", i)
			}
		}
	}
	return f.result("%v rules, %v fired", c["total_rules"], c["rules_fired"])
}

func checkDisclosureUpgrade(r *runner) outcome {
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	tools := m.tools()
	if len(tools) == 0 {
		return skip("%s selects no macro-tool to upgrade", m.desc)
	}
	target := tools[0]
	q := m.req.withOption("disclosure_preference", protocol.DisclosureMinimal).withFacts(fact("disclosure_upgrade", target.MacroID))
	_, p, _, problem := r.evaluate(q)
	if problem != "" {
		return fail("minimal disclosure with disclosure_upgrade(%q): %s", target.MacroID, problem)
	}
	var f failures
	found := false
	for _, t := range toolMaps(p) {
		name, _ := asString(t["name"])
		level, _ := asString(t["disclosure_level"])
		if name == target.Name {
			found = true
			if level != protocol.DisclosureFull {
				f.add("the upgraded tool %s came back %s, want full", name, level)
			}
			if !has(t, "input_schema") || !has(t, "safety") {
				f.add("the upgraded tool %s lacks input_schema or safety", name)
			}
			continue
		}
		if level != protocol.DisclosureMinimal {
			f.add("tool %s came back %s; only the upgraded tool leaves minimal disclosure", name, level)
		}
	}
	if !found {
		f.add("the upgraded tool %s is missing from the response", target.Name)
	}
	return f.result("%s upgraded to full; %d others minimal", target.Name, len(toolMaps(p))-1)
}
