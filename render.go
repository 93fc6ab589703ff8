package manglecp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/manglecp/manglecp/internal/kernel"
	"github.com/manglecp/manglecp/internal/macroid"
	"github.com/manglecp/manglecp/internal/macros"
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
	var shown []*shownTool
	for _, t := range res.Tools {
		def := s.define(ev, t, factsDigest)
		level := s.disclosureLevel(ev.disclosure, t.Score)
		if ev.upgrades[def.ID] {
			level = protocol.DisclosureFull
		}
		if level == "" {
			continue
		}
		shown = append(shown, &shownTool{def: def, level: level, upgraded: ev.upgrades[def.ID], resources: -1})
	}
	if ev.maxTools >= 0 && int64(len(shown)) > ev.maxTools {
		available := len(shown)
		shown = shown[:ev.maxTools]
		resp.Warnings = append(resp.Warnings, protocol.Warning{Code: protocol.WarnToolsTruncated,
			Message: fmt.Sprintf("max_tools_returned kept the %d highest-scored of %d macro-tools", ev.maxTools, available),
			Details: map[string]any{"returned": ev.maxTools, "available": available}})
	}
	if ev.maxTokens >= 0 {
		cost := func(st *shownTool) int64 { return int64(st.tokens(s, ev.program)) }
		if w := fitBudget(shown, ev.maxTokens, cost); w != nil {
			resp.Warnings = append(resp.Warnings, *w)
		}
	}
	skills := map[string]bool{}
	for _, st := range shown {
		resp.MacroTools = append(resp.MacroTools, st.render(ev.program))
		if st.level == protocol.DisclosureFull {
			for _, id := range st.def.Tool.Skills {
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
		resp.ProofHints = proofHints(ev, x, shown)
	}
	return resp
}

// proofHints renders the kernel's explanation for the tools in the
// response, with macro_ids and the client facts that supported each.
func proofHints(ev *evaluation, x *kernel.Explanation, shown []*shownTool) *protocol.ProofHints {
	ids := map[string]string{}
	for _, st := range shown {
		ids[st.def.Tool.Name] = st.def.ID
	}
	ph := &protocol.ProofHints{Derivations: []protocol.Derivation{}}
	for _, d := range x.Derivations {
		id, ok := ids[d.Tool]
		if !ok {
			continue // left out by disclosure or max_tools_returned
		}
		pd := protocol.Derivation{MacroID: id, SelectedBy: d.SelectedBy, Score: d.Score, RuleChain: d.RuleChain,
			SupportingFacts: []protocol.Fact{}, Tree: proofNode(d.Tree)}
		for _, i := range d.SupportingFacts {
			if i < len(ev.facts) {
				f := ev.facts[i]
				pd.SupportingFacts = append(pd.SupportingFacts, protocol.Fact{Pred: f.Pred, Args: f.Args, T: f.T})
			}
		}
		ph.Derivations = append(ph.Derivations, pd)
	}
	for _, e := range x.Excluded {
		ph.Excluded = append(ph.Excluded, protocol.Exclusion{Candidate: e.Candidate, ExcludedBy: e.ExcludedBy, Reason: e.Reason})
	}
	for _, u := range x.Unmatched {
		ph.UnmatchedFacts = append(ph.UnmatchedFacts, protocol.UnmatchedFact{Pred: u.Pred, Reason: u.Reason})
	}
	return ph
}

func proofNode(n *kernel.ProofNode) *protocol.ProofNode {
	if n == nil {
		return nil
	}
	out := &protocol.ProofNode{Fact: n.Fact, Type: n.Type}
	for _, c := range n.Children {
		out.Children = append(out.Children, proofNode(c))
	}
	return out
}

// shownTool is a macro-tool on its way into a response, with the
// presentation choices budget fitting may change.
type shownTool struct {
	def       *macros.Def
	level     string
	upgraded  bool
	byRef     bool // deliver every skill by reference
	resources int  // how many context resources to keep; -1 = all
}

func (st *shownTool) render(prog *kernel.Program) protocol.MacroTool {
	m := view(st.def, st.level)
	if st.level == protocol.DisclosureFull {
		t := st.def.Tool
		ci := m.ContextInjection
		if ci == nil {
			ci = &protocol.ContextInjection{}
		}
		for _, id := range t.Skills {
			ref := protocol.SkillRef{SkillID: id}
			if sk, ok := prog.Skill(id); ok && prog.SkillInline(id) && !st.byRef {
				ref.Inline, ref.Content = true, sk.Content
			}
			ci.Skills = append(ci.Skills, ref)
		}
		keep := len(t.Resources)
		if st.resources >= 0 && st.resources < keep {
			keep = st.resources
		}
		for _, r := range t.Resources[:keep] {
			p := r.Priority
			ci.ContextResources = append(ci.ContextResources, protocol.ContextResource{URI: r.URI, Relevance: r.Relevance, Priority: &p})
		}
		if ci.Instructions != "" || len(ci.Skills) > 0 || len(ci.ContextResources) > 0 {
			m.ContextInjection = ci
		}
	}
	return m
}

// tokens estimates the tool's token cost: its JSON size divided by the
// configured characters per token.
func (st *shownTool) tokens(s *Server, prog *kernel.Program) int {
	raw, _ := json.Marshal(st.render(prog))
	return (len(raw) + s.opts.Disclosure.CharsPerToken - 1) / s.opts.Disclosure.CharsPerToken
}

// fitBudget demotes until the estimated total fits budget: first the
// lowest-scored tools one level at a time (tools the client upgraded last),
// then skills inline -> referenced, then context resources from the lowest
// priority. It returns a warning when the budget still cannot be met.
//
// cost estimates one tool as it stands. Each tool is measured once, and
// again only after a step changed it: the total is kept as a running sum,
// so fitting n tools costs O(n) measurements, not O(n^2).
func fitBudget(shown []*shownTool, budget int64, cost func(*shownTool) int64) *protocol.Warning {
	costs := make([]int64, len(shown))
	total := int64(0)
	for i, st := range shown {
		costs[i] = cost(st)
		total += costs[i]
	}
	remeasure := func(i int) {
		c := cost(shown[i])
		total += c - costs[i]
		costs[i] = c
	}
	demoted := 0
	for pass := 0; pass < 2 && total > budget; pass++ {
		for _, upgradedPass := range []bool{false, true} {
			for i := len(shown) - 1; i >= 0 && total > budget; i-- { // lowest score first
				st := shown[i]
				if st.upgraded != upgradedPass {
					continue
				}
				switch st.level {
				case protocol.DisclosureFull:
					st.level = protocol.DisclosureCondensed
					demoted++
					remeasure(i)
				case protocol.DisclosureCondensed:
					st.level = protocol.DisclosureMinimal
					demoted++
					remeasure(i)
				}
			}
		}
	}
	for i := len(shown) - 1; i >= 0 && total > budget; i-- {
		shown[i].byRef = true
		remeasure(i)
	}
	for i := len(shown) - 1; i >= 0 && total > budget; i-- {
		st := shown[i]
		for st.resources = len(st.def.Tool.Resources) - 1; st.resources >= 0; st.resources-- {
			remeasure(i)
			if total <= budget {
				break
			}
		}
		if st.resources < 0 {
			st.resources = 0
			remeasure(i)
		}
	}
	if total > budget {
		return &protocol.Warning{Code: protocol.WarnTokenBudgetExceeded,
			Message: fmt.Sprintf("even at the lowest disclosure the macro-tools need about %d tokens, over max_tokens_budget %d", total, budget),
			Details: map[string]any{"budget": budget, "estimated": total}}
	}
	return nil
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
	schema := macroid.InputSchema(t.Params)
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

// view renders the macro-tool d at a disclosure level with exactly the
// fields Spec 06 section 2.2 allows there.
func view(d *macros.Def, level string) protocol.MacroTool {
	t := d.Tool
	m := protocol.MacroTool{MacroID: d.ID, Name: t.Name, DisclosureLevel: level}
	meta := &protocol.ToolMetadata{SelectionPhase: t.Phase, Score: t.Score, SourceRules: t.Evidence}
	switch level {
	case protocol.DisclosureFull:
		m.Description = t.Description
		m.InputSchema = d.Schema
		m.OutputSchema = d.Output
		effects := t.SideEffects
		if len(effects) == 0 {
			effects = []string{"none"}
		}
		m.Safety = &protocol.Safety{
			RequiresUserConfirmation: t.RequiresConfirmation,
			SideEffects:              effects,
			Reversible:               t.Reversible,
			Idempotent:               t.Idempotent,
		}
		if t.Instructions != "" {
			m.ContextInjection = &protocol.ContextInjection{Instructions: t.Instructions}
		}
		if t.ValidFrom != nil || t.ValidUntil != nil {
			m.Validity = &protocol.Validity{}
			if t.ValidFrom != nil {
				m.Validity.NotBefore = protocol.NewTime(*t.ValidFrom)
			}
			if t.ValidUntil != nil {
				m.Validity.ExpiresAt = protocol.NewTime(*t.ValidUntil)
			}
		}
		m.Metadata = meta
	case protocol.DisclosureCondensed:
		m.Description = oneLine(t)
		m.Metadata = meta
	}
	return m
}

// oneLine is the condensed description: the tool's summary, or the first
// sentence of its description.
func oneLine(t kernel.Tool) string {
	if t.Summary != "" {
		return t.Summary
	}
	if i := strings.Index(t.Description, ". "); i >= 0 {
		return t.Description[:i+1]
	}
	return t.Description
}
