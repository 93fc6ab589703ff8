package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/manglecp/manglecp/protocol"
)

func checkUnsupportedVersion(r *runner) outcome {
	base, _ := r.baseReq()
	id := r.newID()
	const old = "2025-01-draft"
	msg := mustJSON(map[string]any{"type": protocol.TypeIntentRequest, "id": id, "manglecp": old, "payload": base.payload()})
	rep := r.sendRaw(r.w, protocol.TypeIntentRequest, msg, id, idEcho)
	e, problem := wantCode(rep, protocol.CodeUnsupportedVersion)
	if problem != "" {
		return fail("a request with manglecp %q: %s", old, problem)
	}
	var f failures
	if got, _ := asString(e.Details["requested_version"]); got != old {
		f.add("details.requested_version is %v, want %q", e.Details["requested_version"], old)
	}
	sv, ok := stringsOf(e.Details["supported_versions"])
	switch {
	case !ok || len(sv) == 0:
		f.add("details.supported_versions is %v, want the versions the server speaks", e.Details["supported_versions"])
	case !contains(sv, protocol.Version):
		f.add("details.supported_versions %v lacks %s", sv, protocol.Version)
	}
	return f.result("supported_versions %v", sv)
}

// checkNullID sends an unreadable or id-less message and expects
// malformed_message with id null.
func checkNullID(r *runner, what string, msg []byte) outcome {
	rep := r.sendRaw(r.w, protocol.TypeIntentRequest, msg, "", idNull)
	_, problem := wantCode(rep, protocol.CodeMalformedMessage)
	if problem != "" {
		return fail("%s: %s", what, problem)
	}
	if rep.Env.ID != nil {
		return fail("%s was answered with id %q; an error that cannot be correlated has id null", what, *rep.Env.ID)
	}
	return pass("malformed_message with id null")
}

func checkMalformedJSON(r *runner) outcome {
	return checkNullID(r, "invalid JSON", []byte(`{"type":"intent_request","id":"cf-bad","manglecp":"2026-02-draft","payload":{"intent":`))
}

func checkMissingID(r *runner) outcome {
	base, _ := r.baseReq()
	msg := mustJSON(map[string]any{"type": protocol.TypeIntentRequest, "manglecp": protocol.Version, "payload": base.payload()})
	return checkNullID(r, "an intent_request without id", msg)
}

func checkInvalidType(r *runner) outcome {
	id := r.newID()
	msg := mustJSON(map[string]any{"type": "conformance_unknown_type", "id": id, "manglecp": protocol.Version, "payload": map[string]any{}})
	rep := r.sendRaw(r.w, protocol.TypeIntentRequest, msg, id, idEcho)
	if _, problem := wantCode(rep, protocol.CodeInvalidType); problem != "" {
		return fail("type %q: %s", "conformance_unknown_type", problem)
	}
	return pass("invalid_type")
}

// violationCase is a request with one bad fact at a known index.
type violationCase struct {
	issue     protocol.Code
	pred      string // the predicate sent
	index     int    // the bad fact's index
	declared  string // the declared predicate it imitates (unknown_predicate)
	arity     int    // the declared arity (arity_mismatch)
	argIndex  int    // the mistyped argument (type_mismatch)
	argType   string // its declared type (type_mismatch)
	rep       *reply
	why       string // SKIP reason
	checkedBy string
}

// violation sends the bad request of issue once (the error checks and
// errors.violation_details share it).
func (r *runner) violation(issue protocol.Code) *violationCase {
	if c, ok := r.violations[issue]; ok {
		return c
	}
	c := &violationCase{issue: issue}
	if r.violations == nil {
		r.violations = map[protocol.Code]*violationCase{}
	}
	r.violations[issue] = c
	base, ok := r.baseReq()
	if !ok {
		c.why = "the manifest declares no intent to send facts with"
		return c
	}
	c.index = len(base.Facts)
	preds := r.inputPredicates()
	var bad json.RawMessage
	switch issue {
	case protocol.CodeUnknownPredicate:
		for _, p := range preds {
			miss := misspell(p.Predicate)
			if r.schemaOf(miss) == nil && len(p.Predicate) >= 4 {
				c.pred, c.declared = miss, p.Predicate
				args := make([]any, p.Arity)
				for k := range args {
					t := protocol.ArgAny
					if k < len(p.ArgTypes) {
						t = p.ArgTypes[k]
					}
					args[k] = sampleValue(t, k)
				}
				bad = fact(miss, args...)
				break
			}
		}
		if bad == nil {
			c.pred = "conformance_undeclared_predicate"
			bad = fact(c.pred, "x")
		}
	case protocol.CodeArityMismatch:
		if len(preds) == 0 {
			c.why = "facts_profile declares no predicate a client may send"
			return c
		}
		p := preds[0]
		c.pred, c.arity = p.Predicate, p.Arity
		var f map[string]any
		_ = json.Unmarshal(factWith(&p, -1, nil, 0), &f)
		f["args"] = append(f["args"].([]any), "one too many")
		bad = mustJSON(f)
	case protocol.CodeTypeMismatch:
		for i := range preds {
			for k, t := range preds[i].ArgTypes {
				if k >= preds[i].Arity || t == protocol.ArgAny {
					continue
				}
				var wrong any = "conformance-not-a-number"
				if t == protocol.ArgString {
					wrong = 42
				}
				c.pred, c.argIndex, c.argType = preds[i].Predicate, k, t
				bad = factWith(&preds[i], k, wrong, 0)
				break
			}
			if bad != nil {
				break
			}
		}
		if bad == nil {
			c.why = "facts_profile declares no input predicate with a typed argument"
			return c
		}
	case protocol.CodeReservedPredicate:
		c.pred = "_manglecp_conformance"
		bad = fact(c.pred, "spoofed")
	}
	c.rep = r.send(protocol.TypeIntentRequest, base.withFacts(bad).payload())
	return c
}

// judgeViolation checks the code of a fact validation error: the specific
// code, or invalid_facts with a violation of that issue.
func judgeViolation(c *violationCase) outcome {
	if c.why != "" {
		return skip("%s", c.why)
	}
	e, problem := errOf(c.rep)
	if problem != "" {
		return fail("fact %d (%s): want error %s, %s", c.index, c.pred, c.issue, problem)
	}
	if e.Code == string(c.issue) {
		return pass("%s for fact %d (%s)", c.issue, c.index, c.pred)
	}
	if e.Code == string(protocol.CodeInvalidFacts) {
		for _, v := range violationsOf(&e.Typed) {
			if v.Issue == c.issue {
				return pass("invalid_facts with a %s violation for fact %d (%s)", c.issue, c.index, c.pred)
			}
		}
	}
	return fail("fact %d (%s): want error %s (or invalid_facts with such a violation), got %s: %s", c.index, c.pred, c.issue, e.Code, clip([]byte(e.Message), 120))
}

// violationsOf returns the typed violations of an error, if any.
func violationsOf(e *protocol.Error) []protocol.Violation {
	if e.Details == nil {
		return nil
	}
	return e.Details.Violations
}

func checkUnknownPredicate(r *runner) outcome {
	return judgeViolation(r.violation(protocol.CodeUnknownPredicate))
}
func checkArityMismatch(r *runner) outcome {
	return judgeViolation(r.violation(protocol.CodeArityMismatch))
}
func checkTypeMismatch(r *runner) outcome {
	return judgeViolation(r.violation(protocol.CodeTypeMismatch))
}

func checkViolationDetails(r *runner) outcome {
	var f failures
	judged := 0
	for _, issue := range []protocol.Code{protocol.CodeUnknownPredicate, protocol.CodeArityMismatch, protocol.CodeTypeMismatch, protocol.CodeReservedPredicate} {
		c := r.violation(issue)
		if c.why != "" || judgeViolation(c).status != Pass {
			continue // the code check reports it
		}
		judged++
		e := c.rep.errorInfo()
		raw, ok := asArray(e.Details["violations"])
		if !ok || len(raw) == 0 {
			f.add("%s has no details.violations", issue)
			continue
		}
		var v map[string]any
		for _, x := range raw {
			vm, _ := asObject(x)
			if idx, ok := asInt(vm["fact_index"]); ok && int(idx) == c.index {
				v = vm
			}
		}
		if v == nil {
			f.add("%s: no violation has fact_index %d (the offending fact)", issue, c.index)
			continue
		}
		if p, _ := asString(v["predicate"]); p != c.pred {
			f.add("%s: violation.predicate is %v, want %q", issue, v["predicate"], c.pred)
		}
		if s, _ := asString(v["issue"]); s != string(issue) {
			f.add("%s: violation.issue is %v", issue, v["issue"])
		}
		if s, _ := asString(v["message"]); s == "" {
			f.add("%s: violation.message is missing", issue)
		}
		switch issue {
		case protocol.CodeUnknownPredicate:
			if c.declared != "" {
				if s, _ := asString(v["suggestion"]); !strings.Contains(s, c.declared) {
					f.add("unknown predicate %q: suggestion %v does not name %q", c.pred, v["suggestion"], c.declared)
				}
			}
		case protocol.CodeArityMismatch:
			if x, present := v["expected_arity"]; present {
				if n, _ := asInt(x); int(n) != c.arity {
					f.add("arity_mismatch: expected_arity %v, want %d", x, c.arity)
				}
			}
			if x, present := v["actual_arity"]; present {
				if n, _ := asInt(x); int(n) != c.arity+1 {
					f.add("arity_mismatch: actual_arity %v, want %d", x, c.arity+1)
				}
			}
		case protocol.CodeTypeMismatch:
			if x, present := v["argument_index"]; present {
				if n, _ := asInt(x); int(n) != c.argIndex {
					f.add("type_mismatch: argument_index %v, want %d", x, c.argIndex)
				}
			}
			if x, present := v["expected_type"]; present && x != c.argType {
				f.add("type_mismatch: expected_type %v, want %q", x, c.argType)
			}
		}
	}
	if judged == 0 {
		return skip("no fact validation error to judge (see the errors.* and security.reserved_predicate checks)")
	}
	return f.result("%d violations carry fact_index, predicate, issue, message and details", judged)
}

func checkTooManyFacts(r *runner) outcome {
	base, ok := r.baseReq()
	if !ok {
		return skip("the manifest declares no intent to send facts with")
	}
	limit := r.m.Limits.MaxFactsPerRequest
	if limit <= 0 {
		return skip("limits.max_facts_per_request is not declared")
	}
	if limit > 200000 {
		return skip("limits.max_facts_per_request is %d; sending that many facts is impractical", limit)
	}
	preds := r.inputPredicates()
	if len(preds) == 0 {
		return skip("facts_profile declares no predicate a client may send")
	}
	p := preds[0]
	q := base.clone()
	for i := int64(len(q.Facts)); i < limit+1; i++ {
		q.Facts = append(q.Facts, factWith(&p, -1, nil, int(i)))
	}
	body := encode(protocol.TypeIntentRequest, "size-estimate", q.payload())
	if mb := r.m.Limits.MaxMessageBytes; mb > 0 && int64(len(body)) > mb {
		return skip("%d facts need %d bytes, more than limits.max_message_bytes", limit+1, len(body))
	}
	rep := r.send(protocol.TypeIntentRequest, q.payload())
	e, problem := wantCode(rep, protocol.CodeTooManyFacts)
	if problem != "" {
		return fail("%d facts (limit %d): %s", limit+1, limit, problem)
	}
	if v, present := e.Details["limit"]; present {
		if n, _ := asInt(v); n != limit {
			f := fmt.Sprintf("details.limit is %v, the manifest says %d", v, limit)
			return fail("%s", f)
		}
	}
	return pass("%d facts of %s: too_many_facts", limit+1, p.Predicate)
}

// tooLargeCap bounds the message the size check sends.
const tooLargeCap = 64 << 20

func checkMessageTooLarge(r *runner) outcome {
	limit := r.m.Limits.MaxMessageBytes
	if limit <= 0 {
		return skip("limits.max_message_bytes is not declared")
	}
	if limit > tooLargeCap {
		return skip("limits.max_message_bytes is %d; the suite sends at most %d bytes", limit, tooLargeCap)
	}
	base, _ := r.baseReq()
	id := r.newID()
	head := encode(protocol.TypeIntentRequest, id, base.payload())
	if int64(len(head)) > limit {
		return skip("the base request alone exceeds the limit")
	}
	// Pad with white space inside the envelope: still valid JSON.
	msg := make([]byte, 0, limit+1)
	msg = append(msg, head[:len(head)-1]...)
	msg = append(msg, bytes.Repeat([]byte{' '}, int(limit+1)-len(head))...)
	msg = append(msg, '}')
	w := r.w
	if w.kind() != "http" {
		// A WebSocket server may end the session after refusing a frame:
		// use a session of its own.
		nw, err := r.dial(r.opts.Token)
		if err != nil {
			return fail("opening a session for the check: %v", err)
		}
		r.authenticateSession(nw)
		w = nw
	}
	rep := r.sendRaw(w, protocol.TypeIntentRequest, msg, id, idAny)
	if _, problem := wantCode(rep, protocol.CodeMessageTooLarge); problem != "" {
		return fail("a message of %d bytes (limit %d): %s", len(msg), limit, problem)
	}
	return pass("a message of %d bytes: message_too_large", len(msg))
}

// errorExchanges returns the exchanges answered with an error envelope.
func (r *runner) errorExchanges() []*exchange {
	var out []*exchange
	for _, x := range r.allExchanges() {
		if x.r.is(protocol.TypeError) {
			out = append(out, x)
		}
	}
	return out
}

// eachError runs check on each exchange answered with an error, and
// words the outcome with their number and what (none received is a
// skip).
func (r *runner) eachError(what string, check func(f *failures, x *exchange)) outcome {
	xs := r.errorExchanges()
	if len(xs) == 0 {
		return skip("no error was received")
	}
	var f failures
	for _, x := range xs {
		check(&f, x)
	}
	return f.result("%d "+what, len(xs))
}

func checkErrorEnvelopes(r *runner) outcome {
	return r.eachError("error envelopes", func(f *failures, x *exchange) {
		e := x.r.errorInfo()
		where := fmt.Sprintf("%s (%s)", x.check, orCode(e.Code))
		if x.r.Env.Version != protocol.Version {
			f.add("%s: manglecp %q", where, x.r.Env.Version)
		}
		if e.Fields == nil {
			f.add("%s: the payload is not an object", where)
			return
		}
		if e.Code == "" {
			f.add("%s: no code", where)
		}
		if strings.TrimSpace(e.Message) == "" {
			f.add("%s: no message", where)
		}
		if e.Recoverable == nil {
			f.add("%s: recoverable is missing or not a boolean", where)
		}
		if v, present := e.Fields["retry_after_ms"]; present && v != nil {
			if n, ok := asInt(v); !ok || n < 0 {
				f.add("%s: retry_after_ms %v is not a non-negative integer or null", where, v)
			}
		}
		if v, present := e.Fields["details"]; present && v != nil {
			if _, ok := asObject(v); !ok {
				f.add("%s: details is a JSON %s, want object", where, jsonType(v))
			}
		}
	})
}

func orCode(c string) string {
	if c == "" {
		return "no code"
	}
	return c
}

func checkErrorCodes(r *runner) outcome {
	xs := r.errorExchanges()
	if len(xs) == 0 {
		return skip("no error was received")
	}
	var f failures
	codes := map[string]bool{}
	for _, x := range xs {
		code := x.r.errorInfo().Code
		codes[code] = true
		if _, ok := protocol.Lookup(protocol.Code(code)); !ok && !strings.HasPrefix(code, "x-") {
			f.add("%s: code %q is neither in the registry nor x-", x.check, code)
		}
	}
	return f.result("%d errors, %d distinct codes", len(xs), len(codes))
}

func checkRecoverable(r *runner) outcome {
	return r.eachError("errors match the registry", func(f *failures, x *exchange) {
		e := x.r.errorInfo()
		info, ok := protocol.Lookup(protocol.Code(e.Code))
		if !ok || e.Recoverable == nil {
			return
		}
		if *e.Recoverable != info.Recoverable {
			f.add("%s: %s has recoverable %v, the registry says %v", x.check, e.Code, *e.Recoverable, info.Recoverable)
		}
	})
}

func checkHTTPStatus(r *runner) outcome {
	var f failures
	n := 0
	for _, x := range r.allExchanges() {
		if x.wire != "http" || x.r.Err != nil || x.r.Env == nil {
			continue
		}
		n++
		if x.r.Env.Type != string(protocol.TypeError) {
			if x.r.Status != 200 {
				f.add("%s: a %s came with HTTP %d, want 200", x.check, x.r.Env.Type, x.r.Status)
			}
			continue
		}
		code := x.r.errorInfo().Code
		info, ok := protocol.Lookup(protocol.Code(code))
		if !ok {
			continue
		}
		if x.r.Status != info.HTTPStatus {
			f.add("%s: %s came with HTTP %d, the registry says %d", x.check, code, x.r.Status, info.HTTPStatus)
		}
	}
	if n == 0 {
		return skip("no HTTP answer was received")
	}
	return f.result("%d HTTP answers", n)
}

func checkIDCorrelation(r *runner) outcome {
	var f failures
	n := 0
	for _, x := range r.allExchanges() {
		if x.r.Err != nil || x.r.Env == nil {
			continue
		}
		n++
		got := x.r.Env.ID
		switch x.mode {
		case idEcho:
			if got == nil || *got != x.id {
				f.add("%s: the answer to id %q has id %s", x.check, x.id, idText(got))
			}
		case idNull:
			if got != nil {
				f.add("%s: an answer to a message whose id could not be read has id %q, want null", x.check, *got)
			}
		case idAny:
			if got != nil && *got != x.id {
				f.add("%s: the answer to id %q has id %q", x.check, x.id, *got)
			}
		}
	}
	if sw, ok := r.w.(*sessionWire); ok {
		for _, id := range sw.strayIDs() {
			f.add("an answer with id %q answers no request of the session", id)
		}
	}
	if n == 0 {
		return skip("no answer was received")
	}
	return f.result("%d answers correlated", n)
}

func idText(id *string) string {
	if id == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *id)
}
