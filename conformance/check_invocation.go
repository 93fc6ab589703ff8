package conformance

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// invokeOutcome is the one valid invocation the invocation checks judge.
type invokeOutcome struct {
	tool        string
	rep         *reply
	payload     map[string]any
	synthesized bool   // args made from the input_schema, not a fixture
	why         string // why there is no invocation (SKIP)
	failure     string // why the invocation failed (FAIL)
}

// invokePayload builds an invoke_request payload.
func invokePayload(macroID string, args json.RawMessage, evalTime, token string) map[string]any {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	p := map[string]any{"macro_id": macroID, "args": args}
	if evalTime != "" {
		p["eval_time"] = evalTime
	}
	if token != "" {
		p["confirmation_token"] = token
	}
	return p
}

// invocation invokes one macro-tool of the main response once: the
// fixture's, or a tool without side effects with arguments made from its
// input_schema.
func (r *runner) invocation() *invokeOutcome {
	if r.invokeDone {
		return r.invokeOut
	}
	r.invokeDone = true
	out := &invokeOutcome{}
	r.invokeOut = out
	m := r.mainReq()
	if m == nil {
		out.why = "no main request: " + r.mainWhy
		return out
	}
	if r.fixture != nil && r.fixture.Invoke != nil {
		fi := r.fixture.Invoke
		t := findTool(m.tools(), fi.Tool)
		if t == nil {
			out.failure = fmt.Sprintf("the fixture invokes %s, but %s selects %s", fi.Tool, m.desc, toolNames(m.tools()))
			return out
		}
		out.tool = t.Name
		out.rep = r.send(protocol.TypeInvokeRequest, invokePayload(t.MacroID, fi.Args, fi.EvalTime, ""))
	} else {
		var pick *protocol.MacroTool
		for i, t := range m.tools() {
			if t.Safety == nil || t.Safety.RequiresUserConfirmation {
				continue
			}
			if len(t.Safety.SideEffects) == 1 && t.Safety.SideEffects[0] == "none" {
				pick = &m.tools()[i]
				break
			}
		}
		if pick == nil {
			out.why = fmt.Sprintf("no fixture invoke part, and no macro-tool of %s is free of side effects", m.desc)
			return out
		}
		args, ok := synthesizeArgs(pick.InputSchema)
		if !ok {
			out.why = fmt.Sprintf("no fixture invoke part, and no valid arguments could be made from the input_schema of %s", pick.Name)
			return out
		}
		out.tool, out.synthesized = pick.Name, true
		out.rep = r.send(protocol.TypeInvokeRequest, invokePayload(pick.MacroID, args, m.req.EvalTime, ""))
	}
	if !out.rep.is(protocol.TypeInvokeResponse) {
		if out.synthesized {
			out.why = fmt.Sprintf("invoking %s with arguments made from its input_schema: %s (give a fixture invoke part)", out.tool, out.rep.describe())
		} else {
			out.failure = fmt.Sprintf("invoking %s with the fixture's args: %s", out.tool, out.rep.describe())
		}
		return out
	}
	out.payload = payloadMap(out.rep)
	return out
}

// synthesizeArgs makes arguments for the required properties of a schema:
// a const, the first enum value, the default, or a value of the type.
func synthesizeArgs(schema map[string]any) (json.RawMessage, bool) {
	args := map[string]any{}
	props, _ := asObject(schema["properties"])
	req, _ := stringsOf(schema["required"])
	for _, k := range req {
		p, _ := asObject(props[k])
		if p == nil {
			return nil, false
		}
		if c, ok := p["const"]; ok {
			args[k] = c
			continue
		}
		if e, ok := asArray(p["enum"]); ok && len(e) > 0 {
			args[k] = e[0]
			continue
		}
		if d, ok := p["default"]; ok {
			args[k] = d
			continue
		}
		switch p["type"] {
		case "string":
			args[k] = "conformance"
		case "integer", "number":
			args[k] = 1
		case "boolean":
			args[k] = false
		case "array":
			args[k] = []any{}
		case "object":
			args[k] = map[string]any{}
		default:
			return nil, false
		}
	}
	return mustJSON(args), true
}

// invokeResult returns the invocation or an outcome for checks to return.
func (r *runner) invokeResult() (*invokeOutcome, *outcome) {
	inv := r.invocation()
	switch {
	case inv.failure != "":
		o := fail("%s", inv.failure)
		return nil, &o
	case inv.why != "":
		o := skip("%s", inv.why)
		return nil, &o
	}
	return inv, nil
}

func checkInvokeResponse(r *runner) outcome {
	inv, o := r.invokeResult()
	if o != nil {
		return *o
	}
	var f failures
	p := inv.payload
	if _, ok := asObject(p["result"]); !ok {
		f.add("result is a JSON %s, want object", jsonType(p["result"]))
	}
	if v, present := p["state_delta"]; present && v != nil {
		sd, ok := asObject(v)
		if !ok {
			f.add("state_delta is not an object")
		}
		for _, k := range []string{"assert", "retract"} {
			if x, present := sd[k]; present && x != nil {
				if _, ok := asArray(x); !ok {
					f.add("state_delta.%s is not an array", k)
				}
			}
		}
	}
	how := "the fixture's args"
	if inv.synthesized {
		how = "args made from its input_schema"
	}
	return f.result("%s invoked with %s", inv.tool, how)
}

var eventStatuses = map[string]bool{protocol.EventSuccess: true, protocol.EventFailure: true, protocol.EventSkipped: true}

func checkInvokeObservability(r *runner) outcome {
	inv, o := r.invokeResult()
	if o != nil {
		return *o
	}
	obs, ok := asObject(inv.payload["observability"])
	if !ok {
		return fail("the invoke_response of %s has no observability object", inv.tool)
	}
	var f failures
	if s, ok := asString(obs["summary"]); !ok || s == "" {
		f.add("observability.summary is missing")
	}
	events, ok := asArray(obs["events"])
	if !ok {
		f.add("observability.events is a JSON %s, want array", jsonType(obs["events"]))
	}
	for i, x := range events {
		e, _ := asObject(x)
		if a, _ := asString(e["action"]); a == "" {
			f.add("events[%d].action is missing", i)
		}
		if s, _ := asString(e["status"]); !eventStatuses[s] {
			f.add("events[%d].status %v is not success, failure or skipped", i, e["status"])
		}
		if v, present := e["duration_ms"]; present {
			if n, ok := asInt(v); !ok || n < 0 {
				f.add("events[%d].duration_ms %v is not a non-negative integer", i, v)
			}
		}
	}
	if v, present := obs["duration_ms"]; present {
		if n, ok := asInt(v); !ok || n < 0 {
			f.add("observability.duration_ms %v is not a non-negative integer", v)
		}
	}
	return f.result("%d events", len(events))
}

// checkFactShape judges a fact of a state delta or continuation.
func checkFactShape(f *failures, where string, x any, needCategory bool) {
	fm, ok := asObject(x)
	if !ok {
		f.add("%s is not an object", where)
		return
	}
	pred, _ := asString(fm["pred"])
	if !predicatePattern.MatchString(pred) {
		f.add("%s.pred %q is not a predicate name", where, pred)
	}
	_, hasArgs := asArray(fm["args"])
	_, hasNamed := asObject(fm["named_args"])
	if hasArgs == hasNamed {
		f.add("%s (%s) needs exactly one of args and named_args", where, pred)
	}
	if needCategory {
		switch fm["category"] {
		case protocol.CategoryServer, protocol.CategorySession, protocol.CategoryDerived:
		default:
			f.add("%s (%s): category %v is not server, session or derived", where, pred, fm["category"])
		}
	}
	if v, present := fm["source"]; present && v != nil {
		if st, _ := asString(path(v, "source_type")); st == "" {
			f.add("%s (%s): source has no source_type", where, pred)
		}
	}
}

func checkInvokeStateDelta(r *runner) outcome {
	inv, o := r.invokeResult()
	if o != nil {
		return *o
	}
	sd, _ := asObject(inv.payload["state_delta"])
	var f failures
	asserts, retracts := arrayOr(sd["assert"]), arrayOr(sd["retract"])
	for i, x := range asserts {
		checkFactShape(&f, fmt.Sprintf("state_delta.assert[%d]", i), x, true)
	}
	for i, x := range retracts {
		checkFactShape(&f, fmt.Sprintf("state_delta.retract[%d]", i), x, false)
	}
	return f.result("%d asserted, %d retract patterns", len(asserts), len(retracts))
}

func checkInvokeNext(r *runner) outcome {
	inv, o := r.invokeResult()
	if o != nil {
		return *o
	}
	expect := r.fixture != nil && r.fixture.Invoke != nil && r.fixture.Invoke.ExpectNext
	v, present := inv.payload["next"]
	if !present || v == nil {
		if expect {
			return fail("the fixture expects next.suggested_intents from %s; the response has no next", inv.tool)
		}
		return pass("no next (none suggested)")
	}
	next, ok := asObject(v)
	if !ok {
		return fail("next is a JSON %s, want object", jsonType(v))
	}
	var f failures
	suggested := arrayOr(next["suggested_intents"])
	if x, present := next["suggested_intents"]; present && x != nil {
		if _, ok := asArray(x); !ok {
			f.add("next.suggested_intents is not an array")
		}
	}
	for i, x := range suggested {
		s, _ := asObject(x)
		if n, _ := asString(s["name"]); n == "" {
			f.add("suggested_intents[%d] has no name", i)
		}
		if pv, present := s["params"]; present && pv != nil {
			if _, ok := asObject(pv); !ok {
				f.add("suggested_intents[%d].params is not an object", i)
			}
		}
	}
	if expect && len(suggested) == 0 {
		f.add("the fixture expects suggested intents from %s; there are none", inv.tool)
	}
	cont := arrayOr(next["continuation_facts"])
	for i, x := range cont {
		checkFactShape(&f, fmt.Sprintf("continuation_facts[%d]", i), x, false)
	}
	return f.result("%d suggested intents, %d continuation facts", len(suggested), len(cont))
}

func checkMacroNotFound(r *runner) outcome {
	id := "conformance-unknown-0000000000000000"
	rep := r.send(protocol.TypeInvokeRequest, invokePayload(id, nil, "", ""))
	if _, problem := wantCode(rep, protocol.CodeMacroNotFound); problem != "" {
		return fail("invoking %s: %s", id, problem)
	}
	return pass("macro_not_found")
}

// invalidArgs derives arguments a schema refuses, with what is wrong.
func invalidArgs(schema map[string]any) (json.RawMessage, string, bool) {
	if req, _ := stringsOf(schema["required"]); len(req) > 0 {
		return json.RawMessage(`{}`), "no arguments although " + req[0] + " is required", true
	}
	if schema["additionalProperties"] == false {
		return json.RawMessage(`{"x_conformance_unknown":1}`), "an undeclared property", true
	}
	props, _ := asObject(schema["properties"])
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch path(props[k], "type") {
		case "string", "boolean", "array", "object":
			return mustJSON(map[string]any{k: 12345}), k + " as a number", true
		case "integer", "number":
			return mustJSON(map[string]any{k: "conformance"}), k + " as a string", true
		}
	}
	return nil, "", false
}

func checkSchemaValidation(r *runner) outcome {
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	var t *protocol.MacroTool
	var args json.RawMessage
	what := ""
	evalTime := m.req.EvalTime
	if r.fixture != nil && r.fixture.Invoke != nil {
		t = findTool(m.tools(), r.fixture.Invoke.Tool)
		if t == nil {
			return fail("the fixture invokes %s, but %s selects %s", r.fixture.Invoke.Tool, m.desc, toolNames(m.tools()))
		}
		evalTime = r.fixture.Invoke.EvalTime
		if len(r.fixture.Invoke.InvalidArgs) > 0 {
			args, what = r.fixture.Invoke.InvalidArgs, "the fixture's invalid_args"
		}
	}
	if t == nil {
		for i, c := range m.tools() {
			if c.Safety != nil && !c.Safety.RequiresUserConfirmation && len(c.Safety.SideEffects) == 1 && c.Safety.SideEffects[0] == "none" {
				if _, _, ok := invalidArgs(c.InputSchema); ok {
					t = &m.tools()[i]
					break
				}
			}
		}
	}
	if t == nil {
		return skip("no macro-tool of %s free of side effects whose input_schema can be violated", m.desc)
	}
	if args == nil {
		var ok bool
		args, what, ok = invalidArgs(t.InputSchema)
		if !ok {
			return skip("the input_schema of %s accepts anything; give the fixture's invoke.invalid_args", t.Name)
		}
	}
	rep := r.send(protocol.TypeInvokeRequest, invokePayload(t.MacroID, args, evalTime, ""))
	e, problem := wantCode(rep, protocol.CodeSchemaValidationFailed)
	if problem != "" {
		return fail("invoking %s with %s: %s", t.Name, what, problem)
	}
	errs, ok := asArray(e.Details["schema_errors"])
	if !ok || len(errs) == 0 {
		return fail("schema_validation_failed without details.schema_errors")
	}
	var f failures
	for i, x := range errs {
		se, _ := asObject(x)
		for _, k := range []string{"path", "message", "keyword"} {
			if _, ok := asString(se[k]); !ok {
				f.add("schema_errors[%d].%s is not a string", i, k)
			}
		}
	}
	return f.result("%s with %s: %d schema_errors", t.Name, what, len(errs))
}

func checkMacroExpired(r *runner) outcome {
	ft := r.fixtureTemporal()
	if ft == nil {
		return skip("needs the fixture's temporal part (a tool, eval times inside and outside its window)")
	}
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	// Expiry is against the server's clock (Spec 07 section 2.3, Spec 08
	// section 5.3), so the suite moves the request back in time until its
	// outside eval_time is a minute ago, synthesizes the tool inside its
	// window there, and invokes it now, naming the inside eval_time: a
	// server that checked the request's eval_time would run it.
	outside, ok := parseTime(ft.Outside)
	if !ok {
		return fail("temporal.outside %q is not RFC 3339", ft.Outside)
	}
	d := time.Now().Add(-time.Minute).Sub(outside)
	q := m.req.clone()
	q.Facts = shiftFacts(q.Facts, d)
	q.EvalTime = shiftTime(ft.Inside, d)
	resp, _, _, problem := r.evaluate(q.withOption("disclosure_preference", protocol.DisclosureFull))
	if problem != "" {
		return fail("at eval_time %s: %s", q.EvalTime, problem)
	}
	t := findTool(resp.MacroTools, ft.Tool)
	if t == nil {
		return fail("at eval_time %s %s is not offered: %s", q.EvalTime, ft.Tool, toolNames(resp.MacroTools))
	}
	rep := r.send(protocol.TypeInvokeRequest, invokePayload(t.MacroID, r.fixture.temporalArgs(), q.EvalTime, ""))
	if _, problem := wantCode(rep, protocol.CodeMacroExpired); problem != "" {
		return fail("invoking %s, synthesized at %s, after its window by the clock (with that eval_time): %s", t.Name, q.EvalTime, problem)
	}
	return pass("%s synthesized at %s and invoked after its window (by the server's clock): macro_expired", t.Name, q.EvalTime)
}
