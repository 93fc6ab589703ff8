package mcpbridge

import (
	"context"

	"github.com/manglecp/manglecp/protocol"
)

// Disclosure: a tool the server condensed (its token budget, a low score:
// no input schema, maybe no safety block) is asked for again at full
// disclosure when the bridge needs what it lacks: its parameters, to show
// them the first time the model is offered it (discloseNew), or to check a
// call's arguments and ask the user about its side effects (disclose).
// The bridge asks the server again for the evaluation that selected it
// (same intent, facts and eval time) with disclosure_upgrade(macro_id)
// and without the token budget (Spec 05 section 5.3); the answer is kept
// with the entry.

// upgradePredicate asks the server for one macro-tool at full disclosure
// (Spec 05 section 5.3); every domain accepts it.
const upgradePredicate = "disclosure_upgrade"

// disclose returns e's definition at full disclosure: e's own when the
// server disclosed its safety block and input schema, else the one the
// server gives when asked again (upgrade). A tool the server condensed
// under the token budget thus still gets the question its side effects
// deserve and the arguments its schema fixes. nil when the server does
// not say (or its facts profile lacks disclosure_upgrade).
func (ss *mcpSession) disclose(ctx context.Context, e *macroEntry) *protocol.MacroTool {
	if e.tool.Safety != nil && e.tool.InputSchema != nil {
		return &e.tool
	}
	ss.mu.Lock()
	full := e.full
	ss.mu.Unlock()
	if full == nil {
		ss.upgrade(ctx, []*macroEntry{e})
		ss.mu.Lock()
		full = e.full
		ss.mu.Unlock()
	}
	return full
}

// discloseNew fetches the full definitions of the entries the server
// condensed (no input schema), so that writeTool shows their parameters,
// or that they changed: one evaluation per selection
// (the same intent, facts and eval time), asking for each of them with
// disclosure_upgrade and without the token budget (Spec 05 section 5.3).
// An entry the server does not upgrade stays condensed (name(...)).
func (ss *mcpSession) discloseNew(ctx context.Context, entries []*macroEntry) {
	var need []*macroEntry
	ss.mu.Lock()
	for _, e := range entries {
		if e.tool.InputSchema != nil || e.full != nil || e.tool.MacroID == "" {
			continue
		}
		need = append(need, e)
	}
	ss.mu.Unlock()
	for len(need) > 0 {
		first := need[0]
		var group, rest []*macroEntry
		for _, e := range need {
			if e.intent == first.intent && e.evalTime == first.evalTime && sameFacts(e.extra, first.extra) {
				group = append(group, e)
			} else {
				rest = append(rest, e)
			}
		}
		need = rest
		ss.upgrade(ctx, group)
	}
}

// sameFacts reports whether a and b are the same slice of facts (entries
// of one evaluation share it).
func sameFacts(a, b []protocol.Fact) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// upgrade asks the server again for the evaluation that selected group
// (one intent, facts and eval time) with disclosure_upgrade for each of
// its macro_ids, and keeps each full definition in its entry.
func (ss *mcpSession) upgrade(ctx context.Context, group []*macroEntry) {
	s, err := ss.b.session(ctx)
	if err != nil || s.Manifest() == nil || s.Manifest().FactsProfile.Predicate(upgradePredicate) == nil {
		return
	}
	e0 := group[0]
	extra := append([]protocol.Fact(nil), e0.extra...)
	byID := make(map[string]*macroEntry, len(group))
	for _, e := range group {
		extra = append(extra, protocol.NewFact(upgradePredicate, e.tool.MacroID))
		byID[e.tool.MacroID] = e
	}
	r := ss.workingState(s).Request(protocol.Intent{Name: e0.intent, Params: e0.params}, extra...)
	if !e0.evalTime.IsZero() {
		r.EvalTime = &e0.evalTime // the macro_ids are bound to it
	}
	resp, err := s.Evaluate(ctx, r)
	if err != nil {
		ss.b.opts.Logger.WarnContext(ctx, "disclosing tools", "intent", e0.intent, "error", err.Error())
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, t := range resp.MacroTools {
		if e := byID[t.MacroID]; e != nil && e.full == nil && t.Safety != nil {
			t := t
			e.full = &t
		}
	}
}
