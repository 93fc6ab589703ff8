package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// factValidationCodes are the codes a refused fact may carry.
var factValidationCodes = []protocol.Code{protocol.CodeInvalidFacts, protocol.CodeUnknownPredicate,
	protocol.CodeArityMismatch, protocol.CodeTypeMismatch, protocol.CodeReservedPredicate}

// numberPredicate finds an input predicate with a number (or any)
// argument and returns it with that argument's index.
func (r *runner) numberPredicate() (*protocol.PredicateSchema, int) {
	preds := r.inputPredicates()
	for _, want := range []string{protocol.ArgNumber, protocol.ArgAny} {
		for i := range preds {
			for k, t := range preds[i].ArgTypes {
				if t == want && k < preds[i].Arity {
					return &preds[i], k
				}
			}
		}
	}
	return nil, 0
}

// factWith is a sample fact of p with argument k replaced by v.
func factWith(p *protocol.PredicateSchema, k int, v any, i int) json.RawMessage {
	args := make([]any, p.Arity)
	for j := range args {
		t := protocol.ArgAny
		if j < len(p.ArgTypes) {
			t = p.ArgTypes[j]
		}
		args[j] = sampleValue(t, i+j)
	}
	if k >= 0 && k < len(args) {
		args[k] = v
	}
	return fact(p.Predicate, args...)
}

func checkFactsInt64(r *runner) outcome {
	base, ok := r.baseReq()
	if !ok {
		return skip("the manifest declares no intent to send facts with")
	}
	p, k := r.numberPredicate()
	if p == nil {
		return skip("facts_profile declares no input predicate with a number argument")
	}
	big := map[string]any{"_type": "int64", "value": "9007199254740993"}
	q := base.withFacts(factWith(p, k, big, 100), factWith(p, k, int64(1)<<53-1, 200))
	if _, _, _, problem := r.evaluate(q); problem != "" {
		return fail("%s with %s at argument %d and 2^53-1 as a number: %s", p.Predicate, `{"_type":"int64","value":"9007199254740993"}`, k, problem)
	}
	return pass("%s accepted 9007199254740993 (wrapped) and 9007199254740991 at argument %d", p.Predicate, k)
}

// namedForm turns a positional fact into named_args form when its
// predicate declares arg_names.
func (r *runner) namedForm(raw json.RawMessage) (json.RawMessage, bool) {
	var f map[string]any
	if decodeNumbers(raw, &f) != nil {
		return raw, false
	}
	pred, _ := asString(f["pred"])
	args, ok := asArray(f["args"])
	s := r.schemaOf(pred)
	if !ok || s == nil || len(s.ArgNames) != len(args) || len(args) == 0 {
		return raw, false
	}
	named := map[string]any{}
	for i, n := range s.ArgNames {
		named[n] = args[i]
	}
	delete(f, "args")
	f["named_args"] = named
	return mustJSON(f), true
}

func checkFactsNamedArgs(r *runner) outcome {
	if v, _ := asBool(path(r.mmap, "capabilities", "named_args")); !v {
		return skip("capabilities.named_args is not true")
	}
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	q := m.req.clone()
	converted := 0
	var named json.RawMessage
	for i, f := range q.Facts {
		if nf, ok := r.namedForm(f); ok {
			q.Facts[i] = nf
			converted++
			named = nf
		}
	}
	if converted == 0 {
		return skip("no fact of %s has a predicate with arg_names", m.desc)
	}
	var f failures
	resp, _, _, problem := r.evaluate(q.withOption("disclosure_preference", protocol.DisclosureFull))
	if problem != "" {
		return fail("%s with %d facts as named_args: %s", m.desc, converted, problem)
	}
	if got, want := namesScores(resp.MacroTools), namesScores(m.tools()); got != want {
		f.add("named_args selected %s, positional args %s", got, want)
	}
	// An unknown key is invalid_facts (Spec 03 section 2.4).
	var bad map[string]any
	_ = decodeNumbers(named, &bad)
	if na, ok := asObject(bad["named_args"]); ok {
		na["x_conformance_unknown"] = "x"
	}
	rep := r.send(protocol.TypeIntentRequest, m.req.withFacts(mustJSON(bad)).payload())
	if _, problem := wantCode(rep, protocol.CodeInvalidFacts); problem != "" {
		f.add("a named_args fact with an unknown key: %s", problem)
	}
	// Both forms at once is invalid.
	var both map[string]any
	_ = decodeNumbers(named, &both)
	if na, ok := asObject(both["named_args"]); ok {
		s := r.schemaOf(fmt.Sprint(both["pred"]))
		args := make([]any, len(s.ArgNames))
		for i, n := range s.ArgNames {
			args[i] = na[n]
		}
		both["args"] = args
	}
	rep = r.send(protocol.TypeIntentRequest, m.req.withFacts(mustJSON(both)).payload())
	if _, problem := wantCode(rep, factValidationCodes...); problem != "" && !isMalformed(rep) {
		f.add("a fact with both args and named_args: %s", problem)
	}
	return f.result("%d facts as named_args select %s", converted, namesScores(resp.MacroTools))
}

// isMalformed reports a malformed_message answer.
func isMalformed(rep *reply) bool {
	e, problem := errOf(rep)
	return problem == "" && e.Code == string(protocol.CodeMalformedMessage)
}

// namesScores summarizes a selection without macro_ids: name, level and
// score of each tool, sorted.
func namesScores(tools []protocol.MacroTool) string {
	parts := make([]string, len(tools))
	for i, t := range tools {
		score := "-"
		if t.Metadata != nil {
			score = fmt.Sprint(t.Metadata.Score)
		}
		parts[i] = fmt.Sprintf("%s/%s/%s", t.Name, t.DisclosureLevel, score)
	}
	sortStrings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func checkFactsTemporal(r *runner) outcome {
	if v, _ := asBool(path(r.mmap, "capabilities", "temporal")); !v {
		return skip("capabilities.temporal is false")
	}
	var p *protocol.PredicateSchema
	for _, s := range r.inputPredicates() {
		if s.Temporal {
			s := s
			p = &s
			break
		}
	}
	if p == nil {
		return skip("facts_profile declares no temporal input predicate")
	}
	base, ok := r.baseReq()
	if !ok {
		return skip("the manifest declares no intent to send facts with")
	}
	formats, _ := stringsOf(path(r.mmap, "facts_profile", "time_formats"))
	at := time.Date(2026, 2, 19, 14, 30, 0, 0, time.UTC)
	ts := func(d time.Duration) string { return at.Add(d).Format(time.RFC3339) }
	annotations := []map[string]any{
		{"at": ts(0)},
		{"start": ts(-time.Minute), "end": ts(time.Minute)},
		{"start": ts(-time.Hour), "end": "_"},
		{"start": "_", "end": ts(time.Hour)},
		{"start": ts(-time.Hour), "end": "now"},
	}
	if contains(formats, "epoch_ms") {
		annotations = append(annotations, map[string]any{"at": at.UnixMilli()})
	}
	q := base.clone()
	for i, t := range annotations {
		var f map[string]any
		_ = json.Unmarshal(factWith(p, -1, nil, 300+i), &f)
		f["t"] = t
		q.Facts = append(q.Facts, mustJSON(f))
	}
	var fl failures
	if _, _, _, problem := r.evaluate(q); problem != "" {
		fl.add("%d %s facts with point, interval, open, unbounded and now annotations: %s", len(annotations), p.Predicate, problem)
	}
	var bad map[string]any
	_ = json.Unmarshal(factWith(p, -1, nil, 400), &bad)
	bad["t"] = map[string]any{"at": "yesterday at noon"}
	rep := r.send(protocol.TypeIntentRequest, base.withFacts(mustJSON(bad)).payload())
	if _, problem := wantCode(rep, protocol.CodeInvalidFacts, protocol.CodeTypeMismatch); problem != "" {
		fl.add("a fact with t {\"at\": \"yesterday at noon\"}: %s", problem)
	}
	return fl.result("%d annotation forms on %s accepted; an invalid time refused", len(annotations), p.Predicate)
}

func checkFactsProvenance(r *runner) outcome {
	m := r.mainReq()
	if m == nil {
		return r.noMain()
	}
	q := m.req.clone()
	for i, raw := range q.Facts {
		var f map[string]any
		if decodeNumbers(raw, &f) != nil {
			continue
		}
		f["source"] = map[string]any{"source_type": "client", "source_id": "conformance", "asserted_at": "2026-02-19T14:29:00Z"}
		f["category"] = "session"
		q.Facts[i] = mustJSON(f)
	}
	resp, _, _, problem := r.evaluate(q.withOption("disclosure_preference", protocol.DisclosureFull))
	if problem != "" {
		return fail("%s with source and category on every fact: %s", m.desc, problem)
	}
	if got, want := namesScores(resp.MacroTools), namesScores(m.tools()); got != want {
		return fail("provenance changed the selection: %s, without it %s (provenance MUST NOT affect evaluation)", got, want)
	}
	return pass("%d facts with source and category select %s", len(q.Facts), namesScores(resp.MacroTools))
}
