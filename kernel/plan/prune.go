package plan

import (
	"strconv"
	"strings"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/kernel/analyse"
)

// Evaluating, per intent, only the rules the answer can depend on.
//
// A domain's rules serve every intent: the browser domain's 150 dynamic
// rules derive what observe, automate and diagnose_error each select, and
// the attributes (parameters, instructions, resources) of every tool. A
// request for one intent reads only the tools that intent can select and
// their attributes, yet evaluating every rule costs as if it read them all.
// So at load the kernel works out, for each declared intent, which rules
// can contribute to the answer (resultPredicates) and builds a plan of
// those alone; a request evaluates the plan of its intent.
//
// Which rules can contribute is decided on an over-approximation of the
// facts (absState): every predicate's possible facts as tuples of
// constants and "any value" (top), computed bottom up from the server
// facts, the intent's intent/1 fact and "anything" for what clients,
// external predicates and the other request predicates supply, ignoring
// negation and treating builtins as true. Every real fact of the request
// is an instance of one of these tuples. Then, top down from what the
// answer reads (the demand: final_selected, dropped, intent_denied of the
// intent, and the attributes of the tools final_selected can hold), a rule
// is kept when its head can match a demanded pattern and its body has an
// abstract solution under that match; each premise of a kept rule demands
// the instances its abstract bindings allow. A rule reading intent("x") for
// another intent, or deriving mandatory_for_intent("x", ...), or an
// attribute of a tool this intent never selects, is never demanded.
//
// The evaluation of a plan is exact for what it is asked: a kept rule is
// evaluated in full, and its premises may miss facts outside the demand,
// so it derives a subset of its facts, never a false one, provided every
// fact it reads under negation or through an aggregation is complete. So
// the instances a negated premise or a transform's body reads are demanded
// from the rule's body alone (the bindings its earlier premises allow, not
// the head's demand), which covers every instance the evaluation reads.
// Proofs and rule coverage describe every rule and use the full plan.
//
// What changes is what the evaluation did: facts_derived and rules_fired
// count the facts derived and the rules fired by the rules the intent's
// plan runs (docs/design.md, "facts_derived and rules_fired").

// resultPredicates are the predicates readResult reads for the selected
// tools, each keyed by the tool in its first argument.
var resultPredicates = []ast.PredicateSym{
	{Symbol: "tool_description", Arity: 2}, {Symbol: "tool_summary", Arity: 2}, {Symbol: "tool_action", Arity: 2},
	{Symbol: "tool_instructions", Arity: 2}, {Symbol: "tool_side_effect", Arity: 2}, {Symbol: "tool_evidence", Arity: 2},
	{Symbol: "requires_confirmation", Arity: 1}, {Symbol: "tool_reversible", Arity: 1}, {Symbol: "tool_idempotent", Arity: 1},
	{Symbol: "tool_valid_from", Arity: 2}, {Symbol: "tool_valid_until", Arity: 2}, {Symbol: "tool_skill", Arity: 2},
	{Symbol: "tool_context_resource", Arity: 4}, {Symbol: "tool_next_intent", Arity: 3}, {Symbol: "tool_param", Arity: 4},
	{Symbol: "tool_param_required", Arity: 2}, {Symbol: "tool_param_enum", Arity: 3}, {Symbol: "tool_param_pair", Arity: 5},
	{Symbol: "tool_param_default", Arity: 3},
}

// maxAbstractTuples bounds the tuples the analysis keeps for one
// predicate; past it the predicate may hold anything (one all-top tuple).
const maxAbstractTuples = 256

// aval is an abstract value: a known constant, or any value (top).
type aval struct {
	c     ast.Constant
	known bool
}

var top = aval{}

func (v aval) key() string {
	if !v.known {
		return "*"
	}
	return strconv.FormatUint(v.c.Hash(), 36) + ":" + strconv.Itoa(int(v.c.Type))
}

// meet is what a value known to match both a and b can be.
func meet(a, b aval) (aval, bool) {
	switch {
	case !a.known:
		return b, true
	case !b.known:
		return a, true
	}
	return a, a.c.Equals(b.c)
}

// aset is a set of abstract tuples.
type aset struct {
	tuples [][]aval
	keys   map[string]bool
	all    bool // holds the all-top tuple: matches anything
}

func tupleKey(t []aval) string {
	var b strings.Builder
	for _, v := range t {
		b.WriteString(v.key())
		b.WriteByte(',')
	}
	return b.String()
}

// add adds t and reports whether the set grew.
func (s *aset) add(t []aval) bool {
	if s.all {
		return false
	}
	allTop := true
	for _, v := range t {
		allTop = allTop && !v.known
	}
	if allTop || len(s.tuples) >= maxAbstractTuples {
		s.all, s.tuples, s.keys = true, [][]aval{make([]aval, len(t))}, nil
		return true
	}
	if s.keys == nil {
		s.keys = map[string]bool{}
	}
	k := tupleKey(t)
	if s.keys[k] {
		return false
	}
	s.keys[k] = true
	s.tuples = append(s.tuples, t)
	return true
}

// binding is the abstract values of a rule's variables.
type binding map[ast.Variable]aval

func (b binding) with(v ast.Variable, x aval) binding {
	out := make(binding, len(b)+1)
	for k, y := range b {
		out[k] = y
	}
	out[v] = x
	return out
}

func (b binding) key() string {
	vars := make([]ast.Variable, 0, len(b))
	for v := range b {
		vars = append(vars, v)
	}
	sortVars(vars)
	var s strings.Builder
	for _, v := range vars {
		s.WriteString(v.Symbol)
		s.WriteByte('=')
		s.WriteString(b[v].key())
		s.WriteByte(',')
	}
	return s.String()
}

// value is t's abstract value under b (top for an unbound variable or an
// expression).
func (b binding) value(t ast.BaseTerm) (aval, bool) {
	switch x := t.(type) {
	case ast.Constant:
		return aval{c: x, known: true}, true
	case ast.Variable:
		if x.Symbol == "_" {
			return top, false
		}
		v, ok := b[x]
		return v, ok
	}
	return top, true
}

// absState is one intent's over-approximation of the facts.
type absState struct {
	p     *Plan
	facts map[ast.PredicateSym]*aset
	// anything are the predicates whose facts may be anything: the
	// facts profile's, the external predicates, the request predicates
	// other than intent.
	anything map[string]bool
}

// newAbsState computes the facts of intent (bottom up, to a fixpoint).
func (p *Plan) newAbsState(intent string) *absState {
	a := &absState{p: p, facts: map[ast.PredicateSym]*aset{}, anything: map[string]bool{}}
	for _, d := range p.Profile.Predicates {
		a.anything[d.Predicate] = true
	}
	for name := range p.External {
		a.anything[name] = true
	}
	for name := range analyse.RequestPredicates {
		if name != "intent" && name != "tool_rank" {
			a.anything[name] = true
		}
	}
	for _, sym := range p.BaseFacts.ListPredicates() {
		s := a.set(sym)
		_ = p.BaseFacts.GetFacts(ast.NewQuery(sym), func(f ast.Atom) error {
			t := make([]aval, len(f.Args))
			for i, x := range f.Args {
				if c, ok := x.(ast.Constant); ok {
					t[i] = aval{c: c, known: true}
				}
			}
			s.add(t)
			return nil
		})
	}
	for _, b := range p.TimedBase {
		a.set(b.Atom.Predicate).add(make([]aval, len(b.Atom.Args)))
	}
	a.set(ast.PredicateSym{Symbol: "intent", Arity: 1}).add([]aval{{c: ast.String(intent), known: true}})
	for changed := true; changed; {
		changed = false
		for i, r := range p.Info.Rules {
			if p.StaticRule[i] {
				continue // its facts are in p.base
			}
			for _, b := range a.body(i, binding{}, nil) {
				if a.set(r.Head.Predicate).add(a.head(r, b)) {
					changed = true
				}
			}
		}
	}
	return a
}

func (a *absState) set(sym ast.PredicateSym) *aset {
	s := a.facts[sym]
	if s == nil {
		s = &aset{}
		if a.anything[sym.Symbol] {
			s.add(make([]aval, sym.Arity))
		}
		a.facts[sym] = s
	}
	return s
}

// head is rule r's head under b: top where a transform binds the
// variable, or an expression computes the value.
func (a *absState) head(r ast.Clause, b binding) []aval {
	t := make([]aval, len(r.Head.Args))
	for i, x := range r.Head.Args {
		t[i], _ = b.value(x)
	}
	return t
}

// body returns the abstract solutions of rule i's body from init. visit,
// when not nil, is called with every premise and each binding that reaches
// it.
func (a *absState) body(i int, init binding, visit func(prem ast.Term, b binding)) []binding {
	sols := []binding{init}
	for _, prem := range a.p.RuleBodies[i] {
		if visit != nil {
			for _, b := range sols {
				visit(prem, b)
			}
		}
		var next []binding
		seen := map[string]bool{}
		keep := func(b binding) {
			if k := b.key(); !seen[k] {
				seen[k] = true
				next = append(next, b)
			}
		}
		for _, b := range sols {
			a.premise(prem, b, keep)
		}
		sols = next
		if len(sols) == 0 {
			return nil
		}
	}
	return sols
}

// premise extends b through one premise, calling keep with each result.
func (a *absState) premise(prem ast.Term, b binding, keep func(binding)) {
	switch x := prem.(type) {
	case ast.Atom:
		if x.Predicate.IsBuiltin() {
			keep(bindFree(b, x))
			return
		}
		s := a.set(x.Predicate)
	next:
		for _, t := range s.tuples {
			nb := b
			for j, arg := range x.Args {
				switch v := arg.(type) {
				case ast.Constant:
					if _, ok := meet(aval{c: v, known: true}, t[j]); !ok {
						continue next
					}
				case ast.Variable:
					if v.Symbol == "_" {
						continue
					}
					cur, bound := nb[v]
					if !bound {
						nb = nb.with(v, t[j])
						continue
					}
					m, ok := meet(cur, t[j])
					if !ok {
						continue next
					}
					if m != cur {
						nb = nb.with(v, m)
					}
				}
			}
			keep(nb)
		}
	case ast.NegAtom:
		keep(b)
	case ast.Eq:
		l, lok := b.value(x.Left)
		r, rok := b.value(x.Right)
		lv, lvar := x.Left.(ast.Variable)
		rv, rvar := x.Right.(ast.Variable)
		switch {
		case lvar && !lok && lv.Symbol != "_":
			keep(b.with(lv, r))
		case rvar && !rok && rv.Symbol != "_":
			keep(b.with(rv, l))
		default:
			if _, ok := meet(l, r); ok {
				keep(b)
			}
		}
	default:
		// Inequalities, temporal literals, anything else: true, binding
		// what is free to any value.
		keep(bindFree(b, prem))
	}
}

// bindFree binds t's unbound variables to top.
func bindFree(b binding, t ast.Term) binding {
	vars := map[ast.Variable]bool{}
	addTermVars(t, vars)
	for v := range vars {
		if _, ok := b[v]; !ok && v.Symbol != "_" {
			b = b.with(v, top)
		}
	}
	return b
}

// addTermVars adds the variables of a premise of any kind.
func addTermVars(t ast.Term, vars map[ast.Variable]bool) {
	switch x := t.(type) {
	case ast.TemporalLiteral:
		addTermVars(x.Literal, vars)
		for _, iv := range []*ast.Interval{x.Interval, operatorInterval(x.Operator)} {
			if iv == nil {
				continue
			}
			for _, bd := range []ast.TemporalBound{iv.Start, iv.End} {
				if bd.Type == ast.VariableBound {
					vars[bd.Variable] = true
				}
			}
		}
	case ast.TemporalAtom:
		addTermVars(ast.TemporalLiteral{Literal: x.Atom, Interval: x.Interval}, vars)
	default:
		ast.AddVars(t, vars)
	}
}

// premiseAtom is the atom a premise reads from the store, if any, and
// whether it reads it negated or through a temporal literal (then every
// instance it reads is demanded from the body's bindings alone).
func premiseAtom(prem ast.Term) (ast.Atom, bool, bool) {
	switch x := prem.(type) {
	case ast.Atom:
		return x, false, !x.Predicate.IsBuiltin()
	case ast.NegAtom:
		return x.Atom, true, !x.Atom.Predicate.IsBuiltin()
	case ast.TemporalLiteral:
		a, ok := x.Literal.(ast.Atom)
		return a, true, ok
	case ast.TemporalAtom:
		return x.Atom, true, true
	}
	return ast.Atom{}, false, false
}

// relevantRules returns, for intent, which rules of p.info.Rules its plan
// evaluates (see above).
func (p *Plan) relevantRules(intent string) []bool {
	a := p.newAbsState(intent)
	byHead := map[ast.PredicateSym][]int{}
	for i, r := range p.Info.Rules {
		if !p.StaticRule[i] {
			byHead[r.Head.Predicate] = append(byHead[r.Head.Predicate], i)
		}
	}
	keep := make([]bool, len(p.Info.Rules))
	demand := map[ast.PredicateSym]*aset{}
	type item struct {
		sym ast.PredicateSym
		t   []aval
	}
	var work []item
	want := func(sym ast.PredicateSym, t []aval) {
		if _, dynamic := byHead[sym]; !dynamic {
			return
		}
		d := demand[sym]
		if d == nil {
			d = &aset{}
			demand[sym] = d
		}
		if d.add(t) {
			if d.all {
				t = make([]aval, len(t))
			}
			work = append(work, item{sym, t})
		}
	}
	wantAtom := func(atom ast.Atom, b binding) {
		t := make([]aval, len(atom.Args))
		for j, x := range atom.Args {
			t[j], _ = b.value(x)
		}
		want(atom.Predicate, t)
	}
	// Rules the engine evaluates are kept whole, and whatever they read.
	for i := range p.Info.Rules {
		if p.StaticRule[i] || p.CompiledRule[i] {
			continue
		}
		keep[i] = true
		for _, prem := range p.RuleBodies[i] {
			if atom, _, ok := premiseAtom(prem); ok {
				want(atom.Predicate, make([]aval, atom.Predicate.Arity))
			}
		}
	}
	want(ast.PredicateSym{Symbol: "final_selected", Arity: 3}, make([]aval, 3))
	want(ast.PredicateSym{Symbol: "dropped", Arity: 2}, make([]aval, 2))
	want(ast.PredicateSym{Symbol: "intent_denied", Arity: 1}, []aval{{c: ast.String(intent), known: true}})
	var tools []aval
	if s := a.facts[ast.PredicateSym{Symbol: "final_selected", Arity: 3}]; s != nil {
		for _, t := range s.tuples {
			if !t[0].known {
				tools = []aval{top}
				break
			}
			tools = append(tools, t[0])
		}
	}
	for _, sym := range resultPredicates {
		for _, tool := range tools {
			t := make([]aval, sym.Arity)
			t[0] = tool
			want(sym, t)
		}
	}
	for len(work) > 0 {
		it := work[len(work)-1]
		work = work[:len(work)-1]
		for _, i := range byHead[it.sym] {
			r := p.Info.Rules[i]
			init, ok := headBinding(r, it.t)
			if !ok {
				continue
			}
			// Positive premises are demanded under the head's binding;
			// negated and temporal premises, and every premise of a rule
			// with a transform, under the body's bindings alone.
			if r.Transform != nil {
				init = binding{}
			}
			if a.body(i, init, func(prem ast.Term, b binding) {
				if atom, wide, ok := premiseAtom(prem); ok && !wide {
					wantAtom(atom, b)
				}
			}) == nil {
				continue
			}
			if !keep[i] {
				keep[i] = true
				a.body(i, binding{}, func(prem ast.Term, b binding) {
					if atom, wide, ok := premiseAtom(prem); ok && (wide || r.Transform != nil) {
						wantAtom(atom, b)
					}
				})
			}
		}
	}
	return keep
}

// headBinding unifies rule r's head with a demanded tuple: the head's
// variables bound to the tuple's constants, or false when a constant of
// the head differs from the tuple's.
func headBinding(r ast.Clause, t []aval) (binding, bool) {
	b := binding{}
	for j, x := range r.Head.Args {
		switch v := x.(type) {
		case ast.Constant:
			if _, ok := meet(aval{c: v, known: true}, t[j]); !ok {
				return nil, false
			}
		case ast.Variable:
			if v.Symbol == "_" || !t[j].known {
				continue
			}
			if cur, ok := b[v]; ok {
				if _, ok := meet(cur, t[j]); !ok {
					return nil, false
				}
				continue
			}
			b[v] = t[j]
		}
	}
	return b, true
}

// PlanIntents builds the plan of every declared intent.
func (p *Plan) PlanIntents() {
	p.IntentPlans = map[string][]Step{}
	for _, in := range p.IntentDecls {
		p.IntentPlans[in.Name] = filterPlan(p.Steps, p.relevantRules(in.Name))
	}
}

// filterPlan is plan with only the rules keep marks; the engine's steps
// stay whole.
func filterPlan(plan []Step, keep []bool) []Step {
	var out []Step
	only := func(rules []*Rule) []*Rule {
		var kept []*Rule
		for _, c := range rules {
			if keep[c.Index] {
				kept = append(kept, c)
			}
		}
		return kept
	}
	for _, st := range plan {
		if st.Strata != nil {
			out = append(out, st)
			continue
		}
		st.Rules, st.DoRules, st.DeltaRules = only(st.Rules), only(st.DoRules), only(st.DeltaRules)
		if len(st.Rules)+len(st.DoRules) > 0 {
			out = append(out, st)
		}
	}
	return out
}

// PlanFor is the plan a request evaluates: its intent's, or every rule
// when it asks for proofs or rule coverage (which describe every rule) or
// names an intent the manifest does not declare.
func (p *Plan) PlanFor(intent string, every bool) []Step {
	if every {
		return p.Steps
	}
	if plan, ok := p.IntentPlans[intent]; ok {
		return plan
	}
	return p.Steps
}
