package plan

import (
	"fmt"
	"sort"

	"codeberg.org/TauCeti/mangle-go/analysis"
	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"codeberg.org/TauCeti/mangle-go/rewrite"
	"github.com/manglecp/manglecp/kernel/analyse"
)

// Plan is how requests evaluate an analysed program: the strata no
// request can change are left out (evaluated at load), the others are
// compiled into steps, and each declared intent gets the steps its answer
// can depend on.
type Plan struct {
	*analyse.Analysis
	// BaseFacts are the server facts with what the static strata derived.
	BaseFacts factstore.ReadOnlyFactStore
	// DynStrata are the strata each request runs (through steps).
	DynStrata []analysis.Nodeset
	// StaticRule marks the rules evaluated at load.
	StaticRule []bool
	// Steps is how a request evaluates the dynamic strata (plan.go);
	// CompiledRule marks the rules it evaluates itself, whose firing the
	// evaluation records.
	Steps        []Step
	CompiledRule []bool
	// IntentPlans are the plans of the declared intents: the steps of
	// steps with only the rules each intent's answer can depend on
	// (prune.go).
	IntentPlans map[string][]Step
	// engineStrata are the strata the engine evaluates, and why.
	engineStrata []EngineStratum
}

// A request's evaluation plan.
//
// The engine's EvalStratifiedProgramWithStats re-prepares every stratum on
// every call (rewriting its rules, building maps and delta stores) and joins
// by building the full list of partial solutions of each premise, each a
// copied map (unionfind.UnionFind). On a 20-fact request that is most of
// the CPU. The kernel therefore compiles, once at load, every dynamic
// stratum it can evaluate itself into rules with numbered variable slots,
// and evaluates them depth first over the indexed store (exec.go). It hands
// the engine, in runs of consecutive strata, only what it does not
// evaluate itself: recursive strata, rules with a temporal head, deferred
// or merge (lattice) predicates, and rules whose variable bindings it
// cannot follow statically. Both evaluate the same stratified model; the
// differential tests (exec_test.go) hold the two to the same facts.

// Step is one part of a request's evaluation, in stratum order: a stratum
// the kernel evaluates itself (rules set), or a run of strata for the
// engine (strata set).
type Step struct {
	// Rules are the stratum's rules (after the engine's rewrite of
	// transforms), in a fixed order; DoRules are its do-transform rules,
	// applied at the end as the engine does.
	Rules, DoRules []*Rule
	// DeltaRules are a recursive stratum's semi-naive rules: each rule that
	// reads a predicate of the stratum, reading it from the last round's
	// new facts only. Nil for a stratum that is not recursive.
	DeltaRules []*Rule

	// Strata and predToStratum are the engine's run; info holds their rules.
	Strata        []analysis.Nodeset
	PredToStratum map[ast.PredicateSym]int
	Info          *analysis.ProgramInfo
}

// Rule is a compiled rule.
type Rule struct {
	Clause ast.Clause // as rewritten; what errors and transforms use
	// Rule is the index in Program.info.Rules of the rule this one comes
	// from: a complete solution of its body means that rule fired.
	Index int
	// CountsFiring is false for the transform half of a split rule.
	CountsFiring bool
	Vars         []ast.Variable
	Slots        map[ast.Variable]int
	Head         []Term
	Body         []Premise
	// Scratch is the room the body's lookups need (each premise's
	// arguments, and the slots it binds), allocated once per evaluation of
	// the rule; each premise has its own part (Premise.scratch).
	Scratch int
}

type TermKind uint8

const (
	TermConst TermKind = iota // a constant
	TermVar                   // a variable, by slot
	TermWild                  // _ : matches anything, binds nothing
	TermExpr                  // a function application, evaluated
)

// Term is a compiled argument.
type Term struct {
	Kind  TermKind
	Slot  int
	Value ast.BaseTerm // the constant, or the expression
}

type PremiseKind uint8

const (
	PremAtom PremiseKind = iota
	PremNeg
	PremBuiltin
	PremNegBuiltin
	PremEq
	PremIneq
	PremTemporal
)

// Premise is a compiled premise.
type Premise struct {
	Kind PremiseKind
	// Delta: the premise reads the last round's new facts (DeltaRules).
	Delta bool
	Pred  ast.PredicateSym
	Args  []Term
	Atom  ast.Atom // the atom as written (builtins are evaluated from it)
	// Left and right are an equality's or inequality's sides.
	Left, Right Term
	// Tl is a temporal literal; vars are the variables of a temporal or
	// builtin premise (their slots in the rule), which the engine's
	// evaluators bind through a unionfind.
	Temporal ast.TemporalLiteral
	Vars     []ast.Variable
	// Native is set for the temporal literals the kernel evaluates itself
	// (args compiled, from and to the slots of the interval's variables, -1
	// for none or _): p(...)@[From, To] with both unbound, and <-[d1, d2]
	// p(...) with or without such an interval; the others go to the
	// engine's TemporalEvaluator.
	Native   bool
	From, To int
	// Scratch is where this premise's part of the rule's scratch starts.
	Scratch int
}

// CompilePlan turns the dynamic strata into steps. It runs once at load.
// With compile false every stratum goes to the engine (the differential
// tests' reference).
func (p *Plan) Compile(compile bool) {
	byHead := map[ast.PredicateSym][]int{}
	for i, r := range p.Info.Rules {
		if p.StaticRule[i] {
			continue // evaluated at load (static.go)
		}
		byHead[r.Head.Predicate] = append(byHead[r.Head.Predicate], i)
	}
	p.CompiledRule = make([]bool, len(p.Info.Rules))
	var steps []Step
	var pending []analysis.Nodeset // strata waiting for one engine run
	flush := func() {
		if len(pending) == 0 {
			return
		}
		st := Step{Strata: pending, PredToStratum: map[ast.PredicateSym]int{}}
		var rules []ast.Clause
		for i, ns := range pending {
			for _, sym := range sortedSyms(ns) {
				st.PredToStratum[sym] = i
				for _, k := range byHead[sym] {
					rules = append(rules, p.Info.Rules[k])
				}
			}
		}
		st.Info = &analysis.ProgramInfo{
			EdbPredicates: p.Info.EdbPredicates,
			IdbPredicates: p.Info.IdbPredicates,
			Rules:         rules,
			Decls:         p.Info.Decls,
		}
		steps = append(steps, st)
		pending = nil
	}
	p.engineStrata = nil
	for _, ns := range p.DynStrata {
		st, why := p.compileStratum(ns, byHead)
		if why != nil || !compile {
			if why != nil {
				why.Predicates = predicateNames(ns)
				p.engineStrata = append(p.engineStrata, *why)
			}
			pending = append(pending, ns)
			continue
		}
		flush()
		steps = append(steps, st)
		for _, c := range append(st.Rules, st.DoRules...) {
			p.CompiledRule[c.Index] = true
		}
	}
	flush()
	p.Steps = steps
}

// EngineStratum is a stratum of the rules that the kernel hands to the
// Mangle engine instead of evaluating it itself (5-10 times slower per
// fact), and why.
type EngineStratum struct {
	// Predicates are the stratum's predicates, as name/arity, sorted.
	Predicates []string
	// Predicate is the one whose rule or declaration is the reason, and
	// Reason says what it is. Rule is that rule, as Mangle writes it
	// (empty for a declaration).
	Predicate, Reason, Rule string
}

// EngineStrata returns the strata the engine evaluates, in evaluation
// order; none when the kernel compiles every rule.
func (p *Plan) EngineStrata() []EngineStratum { return p.engineStrata }

// predicateNames returns the predicates of ns as name/arity, sorted.
func predicateNames(ns analysis.Nodeset) []string {
	var out []string
	for _, sym := range sortedSyms(ns) {
		out = append(out, symName(sym))
	}
	return out
}

// symName is sym as name/arity.
func symName(sym ast.PredicateSym) string { return fmt.Sprintf("%s/%d", sym.Symbol, sym.Arity) }

// compileStratum compiles one stratum, or says why the engine must
// evaluate it.
func (p *Plan) compileStratum(ns analysis.Nodeset, byHead map[ast.PredicateSym][]int) (Step, *EngineStratum) {
	engine := func(sym ast.PredicateSym, reason string, rule ...ast.Clause) (Step, *EngineStratum) {
		why := &EngineStratum{Predicate: symName(sym), Reason: reason}
		if len(rule) > 0 {
			why.Rule = rule[0].String()
		}
		return Step{}, why
	}
	var rules []ast.Clause
	var index []int
	for _, sym := range sortedSyms(ns) {
		if d := p.Info.Decls[sym]; d != nil && (d.DeferredPredicate() || len(d.FunDeps()) > 0) {
			return engine(sym, "it is declared with a merge (lattice) or deferred mode")
		}
		for _, k := range byHead[sym] {
			r := p.Info.Rules[k]
			if r.HeadTime != nil {
				return engine(sym, "a rule derives it with a temporal head (p(...)@[T] :- ...)", r)
			}
			// Linear recursion only (one premise of the stratum per
			// rule, a plain atom): the engine's semi-naive rounds and the
			// kernel's then derive the same facts.
			recursive := 0
			for _, prem := range r.Premises {
				if sym, ok := premisePredicate(prem); ok {
					if _, in := ns[sym]; in {
						if _, plain := prem.(ast.Atom); !plain || r.Transform != nil {
							return engine(sym, "a rule reads its own stratum other than through a plain premise (negated, temporal, or with a transform)", r)
						}
						recursive++
					}
				}
			}
			if recursive > 1 {
				return engine(sym, fmt.Sprintf("a rule has %d premises of its own stratum (non-linear recursion; linear recursion such as path(A, C) :- path(A, B), edge(B, C) is compiled)", recursive), r)
			}
			rules = append(rules, r)
			index = append(index, k)
		}
	}
	rewritten := rewrite.Rewrite(analysis.Program{EdbPredicates: p.Info.EdbPredicates, IdbPredicates: p.Info.IdbPredicates, Rules: rules}).Rules
	// Rewrite keeps the order and splits a do-transform rule with a body of
	// more than one atom in two: a rule collecting the body's solutions into
	// an internal predicate, then the transform over that predicate.
	var st Step
	next := 0
	for j, r := range rules {
		split := r.Transform != nil && !r.Transform.IsLetTransform() && !(len(r.Premises) == 1 && isAtom(r.Premises[0]))
		parts := rewritten[next : next+1]
		if split {
			parts = rewritten[next : next+2]
		}
		next += len(parts)
		for n, part := range parts {
			c, ok := compileRule(part)
			if !ok {
				return engine(r.Head.Predicate, "a rule uses a form the kernel does not compile", r)
			}
			c.Index = index[j]
			if part.Transform != nil && !part.Transform.IsLetTransform() {
				if len(part.Premises) != 1 || !isAtom(part.Premises[0]) {
					return engine(r.Head.Predicate, "a rule uses a form the kernel does not compile", r)
				}
				// A split rule fired when its first part found a solution.
				c.CountsFiring = !split || n == 0
				st.DoRules = append(st.DoRules, c)
				continue
			}
			c.CountsFiring = true
			st.Rules = append(st.Rules, c)
			for k, prem := range part.Premises {
				if sym, ok := premisePredicate(prem); ok {
					if _, in := ns[sym]; in {
						d := *c
						d.Body = append([]Premise(nil), c.Body...)
						d.Body[k].Delta = true
						st.DeltaRules = append(st.DeltaRules, &d)
					}
				}
			}
		}
	}
	if next != len(rewritten) {
		return engine(rules[0].Head.Predicate, "its rules use a form the kernel does not compile")
	}
	return st, nil
}

func isAtom(t ast.Term) bool {
	_, ok := t.(ast.Atom)
	return ok
}

// premisePredicate is the predicate a premise reads from the store.
func premisePredicate(prem ast.Term) (ast.PredicateSym, bool) {
	switch x := prem.(type) {
	case ast.Atom:
		return x.Predicate, !x.Predicate.IsBuiltin()
	case ast.NegAtom:
		return x.Atom.Predicate, !x.Atom.Predicate.IsBuiltin()
	case ast.TemporalLiteral:
		if a, ok := x.Literal.(ast.Atom); ok {
			return a.Predicate, true
		}
	case ast.TemporalAtom:
		return x.Atom.Predicate, true
	}
	return ast.PredicateSym{}, false
}

func sortedSyms(ns analysis.Nodeset) []ast.PredicateSym {
	out := make([]ast.PredicateSym, 0, len(ns))
	for sym := range ns {
		out = append(out, sym)
	}
	SortSyms(out)
	return out
}

// SortSyms sorts predicates by name, then arity.
func SortSyms(syms []ast.PredicateSym) {
	sort.Slice(syms, func(i, j int) bool {
		if syms[i].Symbol != syms[j].Symbol {
			return syms[i].Symbol < syms[j].Symbol
		}
		return syms[i].Arity < syms[j].Arity
	})
}

// compileRule numbers r's variables and compiles its premises, following
// which variables are bound after each premise (left to right, as the
// engine evaluates). It refuses a rule whose bindings it cannot follow:
// an equality of two unbound variables, an expression or negation over a
// variable not yet bound, a premise kind it does not know.
func compileRule(r ast.Clause) (*Rule, bool) {
	c := &Rule{Clause: r, Slots: map[ast.Variable]int{}}
	slot := func(v ast.Variable) int {
		if i, ok := c.Slots[v]; ok {
			return i
		}
		c.Slots[v] = len(c.Vars)
		c.Vars = append(c.Vars, v)
		return len(c.Vars) - 1
	}
	bound := map[ast.Variable]bool{}
	term := func(t ast.BaseTerm) (Term, bool) {
		switch x := t.(type) {
		case ast.Constant:
			return Term{Kind: TermConst, Value: x}, true
		case ast.Variable:
			if x.Symbol == "_" {
				return Term{Kind: TermWild}, true
			}
			return Term{Kind: TermVar, Slot: slot(x)}, true
		case ast.ApplyFn:
			vars := map[ast.Variable]bool{}
			ast.AddVars(x, vars)
			for v := range vars {
				if !bound[v] {
					return Term{}, false
				}
			}
			return Term{Kind: TermExpr, Value: x}, true
		}
		return Term{}, false
	}
	// engineVars numbers the variables of a premise the engine's code
	// evaluates, which binds them all, and returns them sorted.
	engineVars := func(vars map[ast.Variable]bool) []ast.Variable {
		var out []ast.Variable
		for v := range vars {
			if v.Symbol != "_" {
				slot(v)
				bound[v] = true
				out = append(out, v)
			}
		}
		sortVars(out)
		return out
	}
	for _, prem := range r.Premises {
		var cp Premise
		switch x := prem.(type) {
		case ast.Atom:
			cp.Atom, cp.Pred = x, x.Predicate
			if x.Predicate.IsBuiltin() {
				cp.Kind = PremBuiltin
				vars := map[ast.Variable]bool{}
				ast.AddVars(x, vars)
				cp.Vars = engineVars(vars)
				break
			}
			cp.Kind = PremAtom
			for _, a := range x.Args {
				t, ok := term(a)
				if !ok {
					return nil, false
				}
				cp.Args = append(cp.Args, t)
			}
			for _, a := range x.Args {
				if v, ok := a.(ast.Variable); ok && v.Symbol != "_" {
					bound[v] = true
				}
			}
		case ast.NegAtom:
			// Mangle's analysis requires a negation's variables to be bound
			// before it; a rule that does not is left to the engine.
			cp.Atom, cp.Pred = x.Atom, x.Atom.Predicate
			vars := map[ast.Variable]bool{}
			ast.AddVars(x.Atom, vars)
			for v := range vars {
				if v.Symbol != "_" && !bound[v] {
					return nil, false
				}
			}
			cp.Kind = PremNeg
			if x.Atom.Predicate.IsBuiltin() {
				cp.Kind = PremNegBuiltin
				break
			}
			for _, a := range x.Atom.Args {
				t, ok := term(a)
				if !ok {
					return nil, false
				}
				cp.Args = append(cp.Args, t)
			}
		case ast.Eq, ast.Ineq:
			var l, rt ast.BaseTerm
			cp.Kind = PremEq
			if eq, ok := x.(ast.Eq); ok {
				l, rt = eq.Left, eq.Right
			} else {
				ineq := x.(ast.Ineq)
				l, rt = ineq.Left, ineq.Right
				cp.Kind = PremIneq
			}
			lv, lvar := l.(ast.Variable)
			rv, rvar := rt.(ast.Variable)
			if (lvar && lv.Symbol == "_") || (rvar && rv.Symbol == "_") {
				return nil, false
			}
			lfree, rfree := lvar && !bound[lv], rvar && !bound[rv]
			if lfree && rfree {
				return nil, false
			}
			if cp.Kind == PremIneq && (lfree || rfree) {
				return nil, false
			}
			var ok bool
			if cp.Left, ok = term(l); !ok {
				return nil, false
			}
			if cp.Right, ok = term(rt); !ok {
				return nil, false
			}
			if lfree {
				bound[lv] = true
			}
			if rfree {
				bound[rv] = true
			}
		case ast.TemporalLiteral, ast.TemporalAtom:
			tl, ok := x.(ast.TemporalLiteral)
			if !ok {
				ta := x.(ast.TemporalAtom)
				tl = ast.TemporalLiteral{Literal: ta.Atom, Interval: ta.Interval}
			}
			atom, ok := tl.Literal.(ast.Atom)
			if !ok {
				return nil, false
			}
			cp.Kind, cp.Temporal, cp.Pred = PremTemporal, tl, atom.Predicate
			cp.Native, cp.From, cp.To = nativeTemporal(tl, bound), -1, -1
			if cp.Native {
				for _, a := range atom.Args {
					t, ok := term(a)
					if !ok {
						cp.Native = false
						break
					}
					cp.Args = append(cp.Args, t)
				}
			}
			if cp.Native && tl.Interval != nil {
				if v := tl.Interval.Start.Variable; v.Symbol != "_" {
					cp.From = slot(v)
				}
				if v := tl.Interval.End.Variable; v.Symbol != "_" {
					cp.To = slot(v)
				}
			}
			vars := map[ast.Variable]bool{}
			addTermVars(tl, vars)
			cp.Vars = engineVars(vars)
		default:
			return nil, false
		}
		c.Body = append(c.Body, cp)
	}
	for _, a := range r.Head.Args {
		if v, ok := a.(ast.Variable); ok && v.Symbol != "_" && !bound[v] {
			// Bound by a let transform, evaluated by the engine's code.
			if r.Transform == nil {
				return nil, false
			}
		}
		if v, ok := a.(ast.Variable); ok && !bound[v] {
			c.Head = append(c.Head, Term{Kind: TermWild, Value: v})
			continue
		}
		t, ok := term(a)
		if !ok {
			return nil, false
		}
		c.Head = append(c.Head, t)
	}
	for i := range c.Body {
		c.Body[i].Scratch = c.Scratch
		c.Scratch += len(c.Body[i].Args) + 2
	}
	return c, true
}

// nativeTemporal reports whether the kernel evaluates tl itself (see
// Premise.native), given the variables bound before it.
func nativeTemporal(tl ast.TemporalLiteral, bound map[ast.Variable]bool) bool {
	if tl.Interval != nil {
		s, e := tl.Interval.Start, tl.Interval.End
		if s.Type != ast.VariableBound || e.Type != ast.VariableBound {
			return false
		}
		for _, v := range []ast.Variable{s.Variable, e.Variable} {
			if v.Symbol != "_" && bound[v] {
				return false
			}
		}
		if s.Variable.Symbol != "_" && s.Variable == e.Variable {
			return false
		}
	}
	if tl.Operator == nil {
		return tl.Interval != nil
	}
	if tl.Operator.Type != ast.DiamondMinus {
		return false
	}
	for _, b := range []ast.TemporalBound{tl.Operator.Interval.Start, tl.Operator.Interval.End} {
		switch b.Type {
		case ast.TimestampBound, ast.DurationTemporalBound, ast.NowBound, ast.NegativeInfinityBound, ast.PositiveInfinityBound:
		default:
			return false
		}
	}
	return true
}

func operatorInterval(op *ast.TemporalOperator) *ast.Interval {
	if op == nil {
		return nil
	}
	return &op.Interval
}

func sortVars(vs []ast.Variable) {
	sort.Slice(vs, func(i, j int) bool { return vs[i].Symbol < vs[j].Symbol })
}
