// Package render turns the tools an evaluation selected into the macro-tools
// of an intent response: each tool's view at its disclosure level (exactly
// the fields Spec 06 section 2.2 allows there), skills and context
// resources, a token budget met by demoting the lowest-scored tools first
// (FitBudget), and the proof hints. The server composes the response
// around it (definitions, diagnostics, warnings); this package knows the
// kernel's results, the protocol layer and macro definitions, never the
// server.
package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/manglecp/manglecp/internal/macros"
	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// ProofHints renders the kernel's explanation for the tools in the
// response, with macro_ids and the client facts (facts, the request's, by
// index) that supported each.
func ProofHints(facts []protocol.Fact, x *kernel.Explanation, shown []*Tool) *protocol.ProofHints {
	ids := map[string]string{}
	for _, st := range shown {
		ids[st.Def.Tool.Name] = st.Def.ID
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
			if i < len(facts) {
				f := facts[i]
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

// Tool is a macro-tool on its way into a response, with the
// presentation choices budget fitting may change.
type Tool struct {
	Def       *macros.Def
	Level     string // disclosure level
	Upgraded  bool   // the client asked for it in full (demoted last)
	ByRef     bool   // deliver every skill by reference
	Resources int    // how many context resources to keep; -1 = all
}

// Render is the tool as the response carries it: its view at its level
// and, in full, its skills (inline unless ByRef or the rules say not) and
// context resources.
func (st *Tool) Render(prog *kernel.Program) protocol.MacroTool {
	m := view(st.Def, st.Level)
	if st.Level == protocol.DisclosureFull {
		t := st.Def.Tool
		ci := m.ContextInjection
		if ci == nil {
			ci = &protocol.ContextInjection{}
		}
		for _, id := range t.Skills {
			ref := protocol.SkillRef{SkillID: id}
			if sk, ok := prog.Skill(id); ok && prog.SkillInline(id) && !st.ByRef {
				ref.Inline, ref.Content = true, sk.Content
			}
			ci.Skills = append(ci.Skills, ref)
		}
		keep := len(t.Resources)
		if st.Resources >= 0 && st.Resources < keep {
			keep = st.Resources
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

// Tokens estimates the tool's token cost: its JSON size divided by
// charsPerToken (at least 1).
func (st *Tool) Tokens(prog *kernel.Program, charsPerToken int) int {
	raw, _ := json.Marshal(st.Render(prog))
	return (len(raw) + charsPerToken - 1) / charsPerToken
}

// FitBudget demotes until the estimated total fits budget: first the
// lowest-scored tools one level at a time (tools the client upgraded last),
// then skills inline -> referenced, then context resources from the lowest
// priority. It returns a warning when the budget still cannot be met.
//
// cost estimates one tool as it stands. Each tool is measured once, and
// again only after a step changed it: the total is kept as a running sum,
// so fitting n tools costs O(n) measurements, not O(n^2).
func FitBudget(shown []*Tool, budget int64, cost func(*Tool) int64) *protocol.Warning {
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
				if st.Upgraded != upgradedPass {
					continue
				}
				switch st.Level {
				case protocol.DisclosureFull:
					st.Level = protocol.DisclosureCondensed
					demoted++
					remeasure(i)
				case protocol.DisclosureCondensed:
					st.Level = protocol.DisclosureMinimal
					demoted++
					remeasure(i)
				}
			}
		}
	}
	for i := len(shown) - 1; i >= 0 && total > budget; i-- {
		shown[i].ByRef = true
		remeasure(i)
	}
	for i := len(shown) - 1; i >= 0 && total > budget; i-- {
		st := shown[i]
		for st.Resources = len(st.Def.Tool.Resources) - 1; st.Resources >= 0; st.Resources-- {
			remeasure(i)
			if total <= budget {
				break
			}
		}
		if st.Resources < 0 {
			st.Resources = 0
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
