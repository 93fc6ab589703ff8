package manglecp

import (
	"fmt"

	"github.com/manglecp/manglecp/internal/macroid"
	"github.com/manglecp/manglecp/internal/macros"
	"github.com/manglecp/manglecp/internal/render"
	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// render turns a kernel result into the intent response: macro-tools at
// their disclosure level, ordered by score then name, cached for
// invocation; the skills they need; diagnostics; warnings. A token budget
// is met by demoting the lowest-scored tools first, then delivering skills
// by reference, then dropping the lowest-priority context resources
// (Spec 05 section 5.2, Spec 06 section 5.3).
func (s *Server) render(ev *evaluation, res *kernel.Result) *protocol.IntentResponse {
	resp := &protocol.IntentResponse{
		EvalTimeUsed: protocol.Time{Time: ev.evalTime},
		MacroTools:   []protocol.MacroTool{},
		Warnings:     ev.warnings,
	}
	// External tuples are part of the composition: a non-deterministic
	// predicate that answers differently gives different macro_ids.
	factsDigest := macroid.More(ev.summarized().keys, ev.external)
	var shown []*render.Tool
	for _, t := range res.Tools {
		def := s.define(ev, t, factsDigest)
		level := s.disclosureLevel(ev.disclosure, t.Score)
		if ev.upgrades[def.ID] {
			level = protocol.DisclosureFull
		}
		if level == "" {
			continue
		}
		shown = append(shown, &render.Tool{Def: def, Level: level, Upgraded: ev.upgrades[def.ID], Resources: -1})
	}
	if ev.maxTools >= 0 && int64(len(shown)) > ev.maxTools {
		available := len(shown)
		shown = shown[:ev.maxTools]
		resp.Warnings = append(resp.Warnings, protocol.Warning{Code: protocol.WarnToolsTruncated,
			Message: fmt.Sprintf("max_tools_returned kept the %d highest-scored of %d macro-tools", ev.maxTools, available),
			Details: map[string]any{"returned": ev.maxTools, "available": available}})
	}
	if ev.maxTokens >= 0 {
		cost := func(st *render.Tool) int64 { return int64(st.Tokens(ev.program, s.opts.Disclosure.CharsPerToken)) }
		if w := render.FitBudget(shown, ev.maxTokens, cost); w != nil {
			resp.Warnings = append(resp.Warnings, *w)
		}
	}
	skills := map[string]bool{}
	for _, st := range shown {
		resp.MacroTools = append(resp.MacroTools, st.Render(ev.program))
		if st.Level == protocol.DisclosureFull {
			for _, id := range st.Def.Tool.Skills {
				skills[id] = true
			}
		}
	}
	for _, id := range sortedKeys(skills) {
		if sk, ok := ev.program.Skill(id); ok {
			resp.RequiredSkills = append(resp.RequiredSkills, sk)
		}
	}
	if ev.chosenTime {
		resp.Warnings = append(resp.Warnings, protocol.Warning{Code: protocol.WarnEvalTimeChosen,
			Message: "no eval_time in the request; the server clock was used (eval_time_used)"})
	}
	phases := res.PhasesCompleted
	resp.Diagnostics = &protocol.Diagnostics{
		FactsEvaluated:  res.FactsEvaluated,
		FactsDerived:    res.FactsDerived,
		RulesFired:      res.RulesFired,
		PhasesCompleted: &phases,
	}
	if c := res.Coverage; c != nil {
		rc := &protocol.RuleCoverage{TotalRules: c.TotalRules, RulesFired: c.Fired, RulesDormant: c.Dormant,
			RulesInapplicable: c.Inapplicable, DormantDetails: []protocol.RuleStatus{}}
		for _, d := range c.Details {
			rc.DormantDetails = append(rc.DormantDetails, protocol.RuleStatus{Rule: d.Rule, MissingPredicates: d.MissingPredicates, Status: d.Status})
		}
		resp.Diagnostics.RuleCoverage = rc
	}
	if x := res.Explanation; x != nil {
		resp.ProofHints = render.ProofHints(ev.facts, x, shown)
	}
	return resp
}

// disclosureLevel applies the client's preference, or the configured score
// thresholds for adaptive disclosure. "" means the tool is left out.
func (s *Server) disclosureLevel(pref string, score int64) string {
	if pref != protocol.DisclosureAdaptive {
		return pref
	}
	d := s.opts.Disclosure
	switch {
	case score >= d.Full:
		return protocol.DisclosureFull
	case score >= d.Condensed:
		return protocol.DisclosureCondensed
	case score >= d.Minimal:
		return protocol.DisclosureMinimal
	}
	return ""
}

// define builds (or refreshes) the cached definition of a selected tool.
func (s *Server) define(ev *evaluation, t kernel.Tool, factsDigest string) *macros.Def {
	schema := macroid.InputSchema(t.Params, t.Pairs...)
	if more := s.actions[t.Action].ParamSchemas; more != nil {
		addParamSchemas(schema, more(t.Name))
	}
	def := &macros.Def{
		Tool:    t,
		Intent:  ev.intent,
		Facts:   ev.facts,
		Schema:  schema,
		Output:  s.actions[t.Action].OutputSchema,
		Created: s.now(),
		Expires: s.now().Add(s.opts.MacroTTL),
		Size:    macros.Size(t, schema, ev.intent, ev.summarized().heap),
		Owner:   ownerRecord(ev.caller),
	}
	if t.ValidUntil != nil && t.ValidUntil.After(def.Expires) {
		def.Expires = *t.ValidUntil // kept at least for the validity window
	}
	def.ID = macroid.ID(t, schema, ev.intent, factsDigest, ownerOf(ev.caller))
	ev.defined = append(ev.defined, def) // stored by evaluate (saveMacros)
	return def
}

// ownerOf is the owner part of a macro_id: a digest of the identity's
// name (macroid.Owner), or "" for the anonymous caller of a server without
// authentication (whose ids stay what they were before owners were bound).
func ownerOf(c *caller) string {
	if c == nil || c.anonymous {
		return ""
	}
	return macroid.Owner(c.name)
}

// addParamSchemas adds an action's parameter schemas (ActionSpec.ParamSchemas)
// to an input schema built from the rules: to parameters the rules
// declare, and never over the keywords the rules set.
func addParamSchemas(schema map[string]any, more map[string]map[string]any) {
	props, _ := schema["properties"].(map[string]any)
	for name, extra := range more {
		prop, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		for k, v := range extra {
			if _, set := prop[k]; !set {
				prop[k] = v
			}
		}
	}
}
