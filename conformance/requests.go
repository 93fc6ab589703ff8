package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/manglecp/manglecp/protocol"
)

// intentReq is an intent_request payload under construction. Facts stay
// raw JSON so fixture facts go out exactly as written.
type intentReq struct {
	Name        string
	Params      json.RawMessage
	Facts       []json.RawMessage
	EvalTime    string
	Constraints map[string]any
	Options     map[string]any
}

// clone copies q deeply enough to change its slices and maps.
func (q intentReq) clone() intentReq {
	c := q
	c.Facts = append([]json.RawMessage(nil), q.Facts...)
	c.Constraints = copyMap(q.Constraints)
	c.Options = copyMap(q.Options)
	return c
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// withOption returns a copy with options[k] = v.
func (q intentReq) withOption(k string, v any) intentReq {
	c := q.clone()
	c.Options = withKey(c.Options, k, v)
	return c
}

// withConstraint returns a copy with constraints[k] = v.
func (q intentReq) withConstraint(k string, v any) intentReq {
	c := q.clone()
	c.Constraints = withKey(c.Constraints, k, v)
	return c
}

// withKey is m (a new map when nil) with m[k] = v.
func withKey(m map[string]any, k string, v any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m[k] = v
	return m
}

// withFacts returns a copy with more facts appended.
func (q intentReq) withFacts(facts ...json.RawMessage) intentReq {
	c := q.clone()
	c.Facts = append(c.Facts, facts...)
	return c
}

func (q intentReq) payload() map[string]any {
	intent := map[string]any{"name": q.Name}
	if len(q.Params) > 0 {
		intent["params"] = q.Params
	}
	facts := q.Facts
	if facts == nil {
		facts = []json.RawMessage{}
	}
	p := map[string]any{"intent": intent, "facts": facts}
	if q.EvalTime != "" {
		p["eval_time"] = q.EvalTime
	}
	if len(q.Constraints) > 0 {
		p["constraints"] = q.Constraints
	}
	if len(q.Options) > 0 {
		p["options"] = q.Options
	}
	return p
}

func fixtureReq(f *FixtureRequest) intentReq {
	return intentReq{Name: f.Intent.Name, Params: f.Intent.Params, Facts: append([]json.RawMessage(nil), f.Facts...), EvalTime: f.EvalTime}
}

// fact builds a positional fact.
func fact(pred string, args ...any) json.RawMessage {
	if args == nil {
		args = []any{}
	}
	return mustJSON(map[string]any{"pred": pred, "args": args})
}

// sampleValue is a value of a facts_profile argument type.
func sampleValue(argType string, i int) any {
	switch argType {
	case protocol.ArgNumber:
		return i + 1
	case protocol.ArgBoolean:
		return true
	}
	return fmt.Sprintf("conformance-%d", i)
}

// schemaOf returns the declared schema of pred, or nil.
func (r *runner) schemaOf(pred string) *protocol.PredicateSchema {
	if r.m == nil {
		return nil
	}
	return r.m.FactsProfile.Predicate(pred)
}

// sampleFact is a valid fact of a declared predicate; i varies its values.
func (r *runner) sampleFact(pred string, i int) (json.RawMessage, bool) {
	s := r.schemaOf(pred)
	if s == nil || s.Arity < 0 {
		return nil, false
	}
	args := make([]any, s.Arity)
	for k := range args {
		t := protocol.ArgAny
		if k < len(s.ArgTypes) {
			t = s.ArgTypes[k]
		}
		args[k] = sampleValue(t, i+k)
	}
	return fact(pred, args...), true
}

// minimalReq is an intent request with one sample fact of each of the
// intent's required facts (false when a required predicate is not declared).
func (r *runner) minimalReq(d protocol.IntentDecl) (intentReq, bool) {
	q := intentReq{Name: d.Name, Facts: []json.RawMessage{}}
	for i, p := range d.RequiredFacts {
		f, ok := r.sampleFact(p, i)
		if !ok {
			return q, false
		}
		q.Facts = append(q.Facts, f)
	}
	return q, true
}

// baseReq is the request the fact validation checks add a bad fact to:
// the main request when there is one, else the first intent's minimal one.
func (r *runner) baseReq() (intentReq, bool) {
	if m := r.mainReq(); m != nil {
		return m.req.clone(), true
	}
	if r.m == nil {
		return intentReq{}, false
	}
	for _, d := range r.m.Intents {
		if q, ok := r.minimalReq(d); ok {
			return q, true
		}
	}
	if len(r.m.Intents) > 0 {
		return intentReq{Name: r.m.Intents[0].Name}, true
	}
	return intentReq{}, false
}

// inputPredicates lists the declared predicates clients may send, base
// request predicates first (they are surely accepted), then by name.
func (r *runner) inputPredicates() []protocol.PredicateSchema {
	if r.m == nil {
		return nil
	}
	var out []protocol.PredicateSchema
	for _, p := range r.m.FactsProfile.Predicates {
		if p.Direction == protocol.DirectionOutput || p.Predicate == "disclosure_upgrade" {
			continue
		}
		out = append(out, p)
	}
	preferred := map[string]bool{}
	if q, ok := r.baseReq(); ok {
		for _, f := range q.Facts {
			var x struct {
				Pred string `json:"pred"`
			}
			_ = json.Unmarshal(f, &x)
			preferred[x.Pred] = true
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if preferred[out[i].Predicate] != preferred[out[j].Predicate] {
			return preferred[out[i].Predicate]
		}
		return out[i].Predicate < out[j].Predicate
	})
	return out
}

// mainRequest is the request the suite evaluates again and again: the
// fixture's, or one found by probing the manifest's intents.
type mainRequest struct {
	req  intentReq
	desc string
	// full is the response at full disclosure.
	full    *protocol.IntentResponse
	fullMap map[string]any
	fixture bool
}

// tools returns the main response's macro-tools.
func (m *mainRequest) tools() []protocol.MacroTool {
	if m == nil || m.full == nil {
		return nil
	}
	return m.full.MacroTools
}

// mainReq evaluates the main request once (at full disclosure) and returns
// it, or nil with r.mainWhy set.
func (r *runner) mainReq() *mainRequest {
	if r.mainDone {
		return r.main
	}
	r.mainDone = true
	if r.m == nil {
		r.mainWhy = "no manifest"
		return nil
	}
	if r.fixture != nil && r.fixture.Evaluate != nil {
		q := fixtureReq(r.fixture.Evaluate)
		m, why := r.tryMain(q)
		if m == nil {
			r.mainWhy = "the fixture's evaluate request failed: " + why
			return nil
		}
		m.desc, m.fixture = fmt.Sprintf("the fixture's %s request", q.Name), true
		r.main = m
		return m
	}
	var fallback *mainRequest
	why := "the manifest declares no intents"
	for i, d := range r.m.Intents {
		if i == 6 {
			break
		}
		q, ok := r.minimalReq(d)
		if !ok {
			why = fmt.Sprintf("intent %s requires facts the facts_profile does not declare", d.Name)
			continue
		}
		m, w := r.tryMain(q)
		if m == nil {
			why = fmt.Sprintf("intent %s: %s", d.Name, w)
			continue
		}
		m.desc = fmt.Sprintf("intent %s with sample required facts (no fixture)", d.Name)
		if len(m.tools()) > 0 {
			r.main = m
			return m
		}
		if fallback == nil {
			fallback = m
		}
	}
	if fallback != nil {
		r.main = fallback
		return fallback
	}
	r.mainWhy = why
	return nil
}

func (r *runner) tryMain(q intentReq) (*mainRequest, string) {
	rep := r.send(protocol.TypeIntentRequest, q.withOption("disclosure_preference", protocol.DisclosureFull).payload())
	if !rep.is(protocol.TypeIntentResponse) {
		return nil, rep.describe()
	}
	m := &mainRequest{req: q}
	var typed protocol.IntentResponse
	if err := decodeNumbers(rep.Env.Payload, &typed); err != nil {
		return nil, "the intent_response payload does not decode: " + err.Error()
	}
	_ = decodeNumbers(rep.Env.Payload, &m.fullMap)
	m.full = &typed
	return m, ""
}

// evaluate sends an intent request and decodes the response; problem is
// "" on success.
func (r *runner) evaluate(q intentReq) (*protocol.IntentResponse, map[string]any, *reply, string) {
	rep := r.send(protocol.TypeIntentRequest, q.payload())
	if !rep.is(protocol.TypeIntentResponse) {
		return nil, nil, rep, "want intent_response, got " + rep.describe()
	}
	var typed protocol.IntentResponse
	var m map[string]any
	if err := decodeNumbers(rep.Env.Payload, &typed); err != nil {
		return nil, nil, rep, "the intent_response payload does not decode: " + err.Error()
	}
	_ = decodeNumbers(rep.Env.Payload, &m)
	return &typed, m, rep, ""
}

// findTool returns the macro-tool called name.
func findTool(tools []protocol.MacroTool, name string) *protocol.MacroTool {
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i]
		}
	}
	return nil
}

// toolNames lists the names of tools.
func toolNames(tools []protocol.MacroTool) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return "[" + strings.Join(names, " ") + "]"
}

// toolMaps returns the macro_tools of a payload map.
func toolMaps(payload map[string]any) []map[string]any {
	a, _ := asArray(payload["macro_tools"])
	out := make([]map[string]any, 0, len(a))
	for _, x := range a {
		m, _ := asObject(x)
		out = append(out, m)
	}
	return out
}

// selection is what the determinism test compares: the macro_id set with
// each tool's disclosure level and score.
func selection(payload map[string]any) string {
	var parts []string
	for _, t := range toolMaps(payload) {
		score := "-"
		if s, ok := path(t, "metadata", "score").(json.Number); ok {
			score = s.String()
		}
		parts = append(parts, fmt.Sprintf("%v/%v/%s", t["macro_id"], t["disclosure_level"], score))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// misspell returns a near miss of a predicate name (one letter dropped).
func misspell(pred string) string {
	if len(pred) < 4 {
		return pred + "x"
	}
	i := len(pred) - 2
	return pred[:i] + pred[i+1:]
}

var predicatePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
