package eval

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/engine"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"codeberg.org/TauCeti/mangle-go/unionfind"
	"github.com/manglecp/manglecp/kernel/factcodec"
)

// Facts returns every fact of pred in s.
func Facts(s factstore.ReadOnlyFactStore, pred string, arity int) []ast.Atom {
	var out []ast.Atom
	_ = s.GetFacts(ast.NewQuery(ast.PredicateSym{Symbol: pred, Arity: arity}), func(a ast.Atom) error {
		out = append(out, a)
		return nil
	})
	return out
}

func num(t ast.BaseTerm) int64 {
	if c, ok := t.(ast.Constant); ok && c.Type == ast.NumberType {
		n, _ := c.NumberValue()
		return n
	}
	return 0
}

// timeArg reads a time constant or integer Unix nanoseconds.
func timeArg(t ast.BaseTerm) *time.Time {
	c, ok := t.(ast.Constant)
	if !ok {
		return nil
	}
	var n int64
	switch c.Type {
	case ast.TimeType:
		n, _ = c.TimeValue()
	case ast.NumberType:
		n, _ = c.NumberValue()
	default:
		return nil
	}
	v := time.Unix(0, n).UTC()
	return &v
}

// readResult reads final_selected and every tool attribute from the final
// store. Output is sorted so that it is identical across runs.
func (p *Program) readResult(s *Store) ([]Tool, []Dropped) {
	byName := map[string]*Tool{}
	var tools []*Tool
	// keys holds, for every selected tool, the constant final_selected
	// names it by: attributes are looked up by it through the store's
	// index, so reading the result costs what was selected, not the size
	// of the catalogue.
	var keys []ast.BaseTerm
	for _, a := range Facts(s, "final_selected", 3) {
		name := factcodec.Text(a.Args[0])
		score, phase := num(a.Args[1]), factcodec.Text(a.Args[2])
		if t, ok := byName[name]; ok {
			// A tool both kept and added as a dependency: keep the higher score.
			if score > t.Score || (score == t.Score && phase < t.Phase) {
				t.Score, t.Phase = score, phase
			}
			continue
		}
		t := &Tool{Name: name, Score: score, Phase: phase}
		byName[name] = t
		tools = append(tools, t)
		keys = append(keys, a.Args[0])
	}
	// One query serves every attribute: the store keeps none.
	args := make([]ast.BaseTerm, 5)
	each := func(pred string, arity int, fn func(t *Tool, a ast.Atom)) {
		q := ast.Atom{Predicate: ast.PredicateSym{Symbol: pred, Arity: arity}, Args: args[:arity]}
		if !s.base.has(q.Predicate) && !s.own.has(q.Predicate) {
			return // an attribute no rule derived and no fact states
		}
		for j := range q.Args {
			q.Args[j] = wildcard
		}
		for i, t := range tools {
			q.Args[0] = keys[i]
			_ = s.GetFacts(q, func(a ast.Atom) error {
				fn(t, a)
				return nil
			})
		}
	}
	each("tool_description", 2, func(t *Tool, a ast.Atom) { t.Description = minStr(t.Description, factcodec.Text(a.Args[1])) })
	each("tool_summary", 2, func(t *Tool, a ast.Atom) { t.Summary = minStr(t.Summary, factcodec.Text(a.Args[1])) })
	each("tool_action", 2, func(t *Tool, a ast.Atom) { t.Action = minStr(t.Action, factcodec.Text(a.Args[1])) })
	// Several instructions of one tool are all kept (rules may state one
	// fact per instruction: a form's fields, a page's alerts), sorted so
	// the rendering is stable, and joined (joinInstructions).
	instructions := map[*Tool][]string{}
	each("tool_instructions", 2, func(t *Tool, a ast.Atom) {
		if v := factcodec.Text(a.Args[1]); v != "" {
			instructions[t] = append(instructions[t], v)
		}
	})
	for t, list := range instructions {
		t.Instructions = joinInstructions(list)
	}
	each("tool_side_effect", 2, func(t *Tool, a ast.Atom) { t.SideEffects = append(t.SideEffects, factcodec.Text(a.Args[1])) })
	each("tool_evidence", 2, func(t *Tool, a ast.Atom) { t.Evidence = append(t.Evidence, factcodec.Text(a.Args[1])) })
	each("requires_confirmation", 1, func(t *Tool, a ast.Atom) { t.RequiresConfirmation = true })
	each("tool_reversible", 1, func(t *Tool, a ast.Atom) { t.Reversible = true })
	each("tool_idempotent", 1, func(t *Tool, a ast.Atom) { t.Idempotent = true })
	each("tool_valid_from", 2, func(t *Tool, a ast.Atom) {
		if v := timeArg(a.Args[1]); v != nil && (t.ValidFrom == nil || v.After(*t.ValidFrom)) {
			t.ValidFrom = v
		}
	})
	each("tool_valid_until", 2, func(t *Tool, a ast.Atom) {
		if v := timeArg(a.Args[1]); v != nil && (t.ValidUntil == nil || v.Before(*t.ValidUntil)) {
			t.ValidUntil = v
		}
	})
	each("tool_skill", 2, func(t *Tool, a ast.Atom) {
		if _, ok := p.Skills[factcodec.Text(a.Args[1])]; ok {
			t.Skills = append(t.Skills, factcodec.Text(a.Args[1]))
		}
	})
	each("tool_context_resource", 4, func(t *Tool, a ast.Atom) {
		t.Resources = append(t.Resources, Resource{URI: factcodec.Text(a.Args[1]), Relevance: factcodec.Text(a.Args[2]), Priority: num(a.Args[3])})
	})
	each("tool_next_intent", 3, func(t *Tool, a ast.Atom) {
		t.NextIntents = append(t.NextIntents, NextIntent{Name: factcodec.Text(a.Args[1]), Description: factcodec.Text(a.Args[2])})
	})
	params := map[string]map[string]*Param{}
	param := func(t *Tool, name string) *Param {
		if params[t.Name] == nil {
			params[t.Name] = map[string]*Param{}
		}
		return params[t.Name][name]
	}
	each("tool_param", 4, func(t *Tool, a ast.Atom) {
		name := factcodec.Text(a.Args[1])
		next := &Param{Name: name, Type: factcodec.Text(a.Args[2]), Description: factcodec.Text(a.Args[3])}
		// Several declarations of one parameter: the smallest (type, then
		// description) wins, whatever order the store yields them in.
		if cur := param(t, name); cur == nil || next.Type < cur.Type || (next.Type == cur.Type && next.Description < cur.Description) {
			params[t.Name][name] = next
		}
	})
	each("tool_param_required", 2, func(t *Tool, a ast.Atom) {
		if pr := param(t, factcodec.Text(a.Args[1])); pr != nil {
			pr.Required = true
		}
	})
	each("tool_param_enum", 3, func(t *Tool, a ast.Atom) {
		if pr := param(t, factcodec.Text(a.Args[1])); pr != nil {
			pr.Enum = append(pr.Enum, factcodec.TermValue(a.Args[2]))
		}
	})
	each("tool_param_pair", 5, func(t *Tool, a ast.Atom) {
		t.Pairs = append(t.Pairs, ParamPair{Param: factcodec.Text(a.Args[1]), Value: factcodec.TermValue(a.Args[2]), Other: factcodec.Text(a.Args[3]), OtherValue: factcodec.TermValue(a.Args[4])})
	})
	defaults := map[*Param][]any{}
	each("tool_param_default", 3, func(t *Tool, a ast.Atom) {
		if pr := param(t, factcodec.Text(a.Args[1])); pr != nil {
			defaults[pr] = append(defaults[pr], factcodec.TermValue(a.Args[2]))
		}
	})
	for pr, vals := range defaults {
		sort.Slice(vals, func(i, j int) bool { return fmt.Sprint(vals[i]) < fmt.Sprint(vals[j]) })
		pr.Default = vals[0] // the smallest, so the choice is stable
	}
	out := make([]Tool, 0, len(tools))
	for _, t := range tools {
		sort.Strings(t.SideEffects)
		t.SideEffects = slices.Compact(t.SideEffects)
		sort.Strings(t.Evidence)
		t.Evidence = slices.Compact(t.Evidence)
		sort.Strings(t.Skills)
		t.Skills = slices.Compact(t.Skills)
		sort.Slice(t.Resources, func(i, j int) bool {
			if t.Resources[i].Priority != t.Resources[j].Priority {
				return t.Resources[i].Priority > t.Resources[j].Priority
			}
			return t.Resources[i].URI < t.Resources[j].URI
		})
		sort.Slice(t.NextIntents, func(i, j int) bool { return t.NextIntents[i].Name < t.NextIntents[j].Name })
		for _, pr := range params[t.Name] {
			sort.Slice(pr.Enum, func(i, j int) bool { return fmt.Sprint(pr.Enum[i]) < fmt.Sprint(pr.Enum[j]) })
			t.Params = append(t.Params, *pr)
		}
		sort.Slice(t.Params, func(i, j int) bool { return t.Params[i].Name < t.Params[j].Name })
		sort.Slice(t.Pairs, func(i, j int) bool { return fmt.Sprint(t.Pairs[i]) < fmt.Sprint(t.Pairs[j]) })
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Name < out[j].Name
	})
	var dropped []Dropped
	for _, a := range Facts(s, "dropped", 2) {
		dropped = append(dropped, Dropped{Tool: factcodec.Text(a.Args[0]), Phase: factcodec.Text(a.Args[1])})
	}
	sort.Slice(dropped, func(i, j int) bool {
		if dropped[i].Tool != dropped[j].Tool {
			return dropped[i].Tool < dropped[j].Tool
		}
		return dropped[i].Phase < dropped[j].Phase
	})
	return out, dropped
}

// MaxInstructionBytes bounds a tool's joined instructions.
const maxInstructionBytes = 4096

// JoinInstructions sorts and de-duplicates a tool's instructions and joins
// them with spaces, at most MaxInstructionBytes (whole instructions only;
// the rest is counted).
func joinInstructions(list []string) string {
	sort.Strings(list)
	list = slices.Compact(list)
	var b strings.Builder
	for i, v := range list {
		if b.Len()+len(v)+1 > maxInstructionBytes && b.Len() > 0 {
			fmt.Fprintf(&b, " (%d more not shown)", len(list)-i)
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v)
	}
	return b.String()
}

// minStr picks the lexically smallest non-empty value, so that a rule set
// deriving several values still renders deterministically.
func minStr(cur, next string) string {
	if cur == "" || (next != "" && next < cur) {
		return next
	}
	return cur
}

// Matcher finds body solutions in the final store, temporal premises
// included.
type Matcher struct {
	qc engine.QueryContext
	te *engine.TemporalEvaluator
	Ts factstore.TemporalFactStore
}

func (p *Program) newMatcher(s *Store, ts factstore.TemporalFactStore, evalTime time.Time) Matcher {
	return Matcher{qc: engine.QueryContext{PredToDecl: p.Info.Decls, Store: s}, te: engine.NewTemporalEvaluator(ts, evalTime), Ts: ts}
}

// FiredRules reports for every rule whether its body has at least one
// solution in the final store. Against the fixpoint this equals "the rule
// derived a head instance" (lower strata are final when a stratum runs),
// MANGLE_NOTES 9. For a predicate with no facts in the program and none
// from the client, the evaluation derived every fact it has: if it has
// none, none of its rules fired; if it has one rule, that rule fired
// exactly when it has facts. Neither needs a search. The static rules'
// firing is fixed at load (static.go), and the evaluation recorded which
// compiled rules fired (exec.go). Only the other rules' bodies are
// searched.
func (p *Program) firedRules(s *Store, m Matcher, clientPreds map[string]bool, fired []bool) []bool {
	out := make([]bool, len(p.Info.Rules))
	for i, r := range p.Info.Rules {
		switch {
		case p.StaticRule[i]:
			out[i] = p.staticFired[i]
			continue
		case p.CompiledRule[i]:
			out[i] = fired[i]
			continue
		}
		sym := r.Head.Predicate
		if r.HeadTime == nil && !clientPreds[sym.Symbol] && !p.baseHas[sym] {
			has := s.own.has(sym)
			if p.SoleRule[i] || !has {
				out[i] = has
				continue
			}
		}
		out[i] = m.bodyHasSolution(p.RuleBodies[i], unionfind.New())
	}
	return out
}

// rulesFired counts the rules FiredRules reports fired.
func rulesFired(fired []bool) int64 {
	var n int64
	for _, f := range fired {
		if f {
			n++
		}
	}
	return n
}

func (m Matcher) bodyHasSolution(premises []ast.Term, subst unionfind.UnionFind) bool {
	if len(premises) == 0 {
		return true
	}
	var sols []unionfind.UnionFind
	var err error
	if tl, ok := premises[0].(ast.TemporalLiteral); ok {
		sols, err = m.te.EvalTemporalLiteral(tl, subst)
	} else {
		sols, err = m.qc.EvalPremise(premises[0], subst)
	}
	if err != nil {
		return false
	}
	for _, s := range sols {
		if m.bodyHasSolution(premises[1:], s) {
			return true
		}
	}
	return false
}

func HasFactsIn(s factstore.ReadOnlyFactStore, sym ast.PredicateSym) bool {
	found := false
	_ = s.GetFacts(ast.NewQuery(sym), func(ast.Atom) error {
		found = true
		return ErrStop
	})
	return found
}
