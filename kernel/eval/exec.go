package eval

import (
	"fmt"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/builtin"
	"codeberg.org/TauCeti/mangle-go/engine"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"codeberg.org/TauCeti/mangle-go/functional"
	"codeberg.org/TauCeti/mangle-go/unionfind"
	"github.com/manglecp/manglecp/kernel/plan"
)

// Evaluating the plan (plan.go) of one request.
//
// A compiled stratum is evaluated as the engine evaluates it: every rule
// once over the store (its premises read earlier strata, which are final),
// then, if the stratum is recursive, semi-naive rounds in which each rule
// reading the stratum reads only the last round's new facts, until a round
// adds nothing; then the do-transforms over what that produced. A rule is
// joined depth first, premise by premise, left to right: the solutions
// are the engine's, without building each premise's full list of partial
// solutions as copied maps. The limits are the engine's too: the
// created-facts budget counts the join's width after each premise, the
// facts a round adds and the facts in the store after each round, with the
// engine's messages; every lookup goes through Store's work count,
// which also checks the stop flag.

// runner evaluates one request's plan.
type runner struct {
	p        *Program
	plan     []plan.Step // Program.PlanFor the request
	store    *Store
	ts       *temporalStore
	evalTime time.Time
	te       *engine.TemporalEvaluator
	// createdLimit is the created-facts budget (0: none); totalLimit the
	// store size it allows.
	createdLimit, totalLimit int
	empty                    unionfind.UnionFind
	// Fired marks, by index in Program.info.Rules, the compiled rules whose
	// body had a solution: with non-recursive strata evaluated in order, a
	// body's premises are final when it is evaluated, so this is exactly
	// rules_fired's "has a solution in the final store".
	fired []bool
	// env is the bindings of the rule being evaluated.
	env env
	// terms is where derived facts' arguments are made (derive).
	terms termSlab
	// delta is what the last round of a recursive stratum added, read by
	// its delta rules; next collects what this round adds (nil outside a
	// recursive stratum).
	delta, next *indexedStore
}

// run evaluates the plan's steps in order.
func (r *runner) run() error {
	for i := range r.plan {
		st := &r.plan[i]
		if st.Strata != nil {
			if err := r.engineStep(st); err != nil {
				return err
			}
			continue
		}
		if err := r.stratum(st); err != nil {
			return err
		}
	}
	return nil
}

// engineStep hands a run of strata to the engine, with what is left of
// the created-facts budget.
func (r *runner) engineStep(st *plan.Step) error {
	opts := []engine.EvalOption{engine.WithEvaluationTime(r.evalTime), engine.WithTemporalStore(r.ts)}
	if r.createdLimit > 0 {
		left := r.totalLimit - r.store.EstimateFactCount()
		if left <= 0 {
			return fmt.Errorf("fact size limit reached %d > %d", r.store.EstimateFactCount(), r.totalLimit)
		}
		opts = append(opts, engine.WithCreatedFactLimit(left))
	}
	_, err := engine.EvalStratifiedProgramWithStats(st.Info, st.Strata, st.PredToStratum, r.store, opts...)
	return err
}

// stratum evaluates a compiled stratum: every rule once, then, for a
// recursive stratum, semi-naive rounds until a round adds nothing, then
// the do-transforms.
func (r *runner) stratum(st *plan.Step) error {
	if st.DeltaRules != nil {
		r.next = newIndexedStore()
		defer func() { r.delta, r.next = nil, nil }()
	}
	for _, c := range st.Rules {
		if err := r.rule(c); err != nil {
			return err
		}
	}
	if err := r.checkTotal(); err != nil {
		return err
	}
	for r.next != nil && r.next.count > 0 {
		r.delta, r.next = r.next, newIndexedStore()
		for _, c := range st.DeltaRules {
			if err := r.rule(c); err != nil {
				return err
			}
			if r.createdLimit > 0 && r.next.count > r.createdLimit {
				return fmt.Errorf("fact size limit reached evaluating %q %d > %d", c.Clause.String(), r.next.count, r.createdLimit)
			}
		}
		if err := r.checkTotal(); err != nil {
			return err
		}
	}
	for _, c := range st.DoRules {
		if err := r.doTransform(c); err != nil {
			return err
		}
	}
	return nil
}

// checkTotal is the engine's check of the store's size after a round.
func (r *runner) checkTotal() error {
	if r.totalLimit > 0 && r.store.EstimateFactCount() > r.totalLimit {
		return fmt.Errorf("fact size limit reached %d > %d", r.store.EstimateFactCount(), r.totalLimit)
	}
	return nil
}

// add adds a derived fact to the store, and to the round's new facts in a
// recursive stratum, and reports whether it was new.
func (r *runner) add(a ast.Atom) bool {
	if !r.store.Add(a) {
		return false
	}
	if r.next != nil {
		r.next.Add(a)
	}
	return true
}

// termSlab hands out argument lists from larger allocations.
type termSlab struct {
	buf []ast.BaseTerm
	off int
}

// take returns n terms, zeroed.
func (s *termSlab) take(n int) []ast.BaseTerm {
	if s.off+n > len(s.buf) {
		s.buf, s.off = make([]ast.BaseTerm, max(64, n)), 0
	}
	out := s.buf[s.off : s.off+n : s.off+n]
	s.off += n
	return out
}

// giveBack returns the last n terms taken, which nothing keeps.
func (s *termSlab) giveBack(n int) {
	s.off -= n
	clear(s.buf[s.off : s.off+n])
}

// doTransform applies a do-transform rule as the engine does at a
// stratum's fixpoint, with groups kept apart by value (groupBy).
func (r *runner) doTransform(c *plan.Rule) error {
	clause := c.Clause
	premise := clause.Premises[0].(ast.Atom)
	var substs []ast.ConstSubstList
	_ = r.store.GetFacts(premise, func(fact ast.Atom) error {
		var subst ast.ConstSubstList
		for i, t := range premise.Args {
			if v, ok := t.(ast.Variable); ok {
				if k, ok := fact.Args[i].(ast.Constant); ok {
					subst = subst.Extend(v, k)
				}
			}
		}
		substs = append(substs, subst)
		return nil
	})
	if c.CountsFiring && len(substs) > 0 {
		r.fired[c.Index] = true
	}
	var emitErr error
	err := GroupBy(clause.Head, *clause.Transform, substs, func(a ast.Atom) bool {
		a, err := functional.EvalAtom(a, ast.ConstSubstList{})
		if err != nil {
			if emitErr == nil {
				emitErr = err
			}
			return false
		}
		return r.store.Add(a)
	})
	if err != nil {
		return err
	}
	return emitErr
}

// env is one rule's variable bindings; it is the ast.Subst the engine's
// function and builtin evaluators read.
type env struct {
	c    *plan.Rule
	vals []ast.BaseTerm // nil: unbound
	// width counts the partial solutions after each premise, the engine's
	// join-width limit.
	width []int
	// terms and slots are the lookups' scratch (Rule.scratch): a premise's
	// query arguments, and the slots a candidate bound. Each premise uses
	// its own part, so a deeper premise never overwrites a shallower one's.
	terms []ast.BaseTerm
	slots []int
}

// scratch returns p's query arguments and an empty slot list with room
// for them.
func (e *env) scratch(p *plan.Premise) ([]ast.BaseTerm, []int) {
	end := p.Scratch + len(p.Args)
	return e.terms[p.Scratch:end:end], e.slots[p.Scratch : p.Scratch : p.Scratch+len(p.Args)+2]
}

// Get implements ast.Subst.
func (e *env) Get(v ast.Variable) ast.BaseTerm {
	if i, ok := e.c.Slots[v]; ok {
		return e.vals[i]
	}
	return nil
}

// value is t's value under e, or nil when t is an unbound variable or _.
func (e *env) value(t plan.Term) (ast.BaseTerm, error) {
	switch t.Kind {
	case plan.TermConst:
		return t.Value, nil
	case plan.TermVar:
		return e.vals[t.Slot], nil
	case plan.TermExpr:
		return functional.EvalExpr(t.Value, e)
	}
	return nil, nil
}

// sides evaluates an equality's or inequality's two sides (nil for an
// unbound variable).
func (e *env) sides(p *plan.Premise) (ast.BaseTerm, ast.BaseTerm, error) {
	l, err := e.value(p.Left)
	if err != nil {
		return nil, nil, err
	}
	rt, err := e.value(p.Right)
	return l, rt, err
}

// reuse returns buf with length n and zero values, reallocated only when
// it is too short.
func reuse[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

// rule evaluates one rule and adds what it derives.
func (r *runner) rule(c *plan.Rule) error {
	// Rules are evaluated one at a time, so one env serves them all.
	e := &r.env
	e.c = c
	e.vals = reuse(e.vals, len(c.Vars))
	e.width = reuse(e.width, len(c.Body))
	e.terms = reuse(e.terms, c.Scratch)
	e.slots = reuse(e.slots, c.Scratch)
	return r.join(e, 0)
}

// join extends the bindings through premise i and on, and derives the head
// for every complete solution.
func (r *runner) join(e *env, i int) error {
	if i > 0 && r.createdLimit > 0 {
		e.width[i-1]++
		if e.width[i-1] > r.createdLimit {
			return fmt.Errorf("fact size limit reached %q %d > %d", e.c.Clause.Head.String(), e.width[i-1], r.createdLimit)
		}
	}
	if i == len(e.c.Body) {
		if e.c.CountsFiring {
			r.fired[e.c.Index] = true
		}
		return r.derive(e)
	}
	p := &e.c.Body[i]
	switch p.Kind {
	case plan.PremAtom:
		return r.atom(e, i, p)
	case plan.PremNeg:
		found, err := r.exists(e, p)
		if err != nil || found {
			return err
		}
		return r.join(e, i+1)
	case plan.PremEq:
		l, rt, err := e.sides(p)
		if err != nil {
			return err
		}
		switch {
		case l == nil:
			e.vals[p.Left.Slot] = rt
			err = r.join(e, i+1)
			e.vals[p.Left.Slot] = nil
			return err
		case rt == nil:
			e.vals[p.Right.Slot] = l
			err = r.join(e, i+1)
			e.vals[p.Right.Slot] = nil
			return err
		case l.Equals(rt):
			return r.join(e, i+1)
		}
		return nil
	case plan.PremIneq:
		l, rt, err := e.sides(p)
		if err != nil {
			return err
		}
		if l == nil || rt == nil || l.Equals(rt) {
			return nil // the engine unifies an unbound side: no solution
		}
		return r.join(e, i+1)
	case plan.PremBuiltin, plan.PremNegBuiltin:
		a, err := functional.EvalAtom(p.Atom, e)
		if err != nil {
			return err
		}
		uf := r.empty
		free := false
		for _, v := range p.Vars {
			free = free || e.vals[e.c.Slots[v]] == nil
		}
		if free {
			if uf, err = r.unionFind(e, p.Vars); err != nil {
				return err
			}
		}
		ok, solutions, err := builtin.Decide(a, &uf)
		if err != nil {
			return err
		}
		if p.Kind == plan.PremNegBuiltin {
			if ok {
				return nil
			}
			return r.join(e, i+1)
		}
		if !ok {
			return nil
		}
		for _, s := range solutions {
			if err := r.bindFrom(e, i, p.Vars, *s); err != nil {
				return err
			}
		}
		return nil
	case plan.PremTemporal:
		if p.Native {
			return r.temporal(e, i, p)
		}
		uf, err := r.unionFind(e, p.Vars)
		if err != nil {
			return err
		}
		solutions, err := r.te.EvalTemporalLiteral(p.Temporal, uf)
		if err != nil {
			return err
		}
		for _, s := range solutions {
			if err := r.bindFrom(e, i, p.Vars, s); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown premise kind %d", p.Kind)
}

// unionFind builds the engine's substitution for vars from e's bindings.
func (r *runner) unionFind(e *env, vars []ast.Variable) (unionfind.UnionFind, error) {
	var vs []ast.Variable
	var ts []ast.BaseTerm
	for _, v := range vars {
		if t := e.vals[e.c.Slots[v]]; t != nil {
			vs = append(vs, v)
			ts = append(ts, t)
		}
	}
	if len(vs) == 0 {
		return unionfind.New(), nil
	}
	return unionfind.InitVars(vs, ts)
}

// bindFrom binds vars that are still unbound from one of the engine's
// solutions, continues the join, and unbinds them.
func (r *runner) bindFrom(e *env, i int, vars []ast.Variable, s unionfind.UnionFind) error {
	var set []int
	for _, v := range vars {
		k := e.c.Slots[v]
		if e.vals[k] != nil {
			continue
		}
		if c, ok := s.Get(v).(ast.Constant); ok {
			e.vals[k] = c
			set = append(set, k)
		}
	}
	err := r.join(e, i+1)
	for _, k := range set {
		e.vals[k] = nil
	}
	return err
}

// wildcard is _ as a term, boxed once: a lookup's unbound arguments.
var wildcard ast.BaseTerm = ast.Variable{Symbol: "_"}

// query evaluates p's arguments into a lookup: the bound values, and the
// atom the store looks up (variables where unbound).
func (e *env) query(p *plan.Premise, q []ast.BaseTerm) error {
	for j, t := range p.Args {
		v, err := e.value(t)
		if err != nil {
			return err
		}
		if v == nil {
			v = wildcard
		}
		q[j] = v
	}
	return nil
}

// atom joins a positive atom: every fact that matches the bound arguments
// extends the solution.
func (r *runner) atom(e *env, i int, p *plan.Premise) error {
	q, set := e.scratch(p)
	if err := e.query(p, q); err != nil {
		return err
	}
	qa := ast.Atom{Predicate: p.Pred, Args: q}
	var base, own candidates
	if p.Delta {
		own = r.delta.lookup(qa)
	} else {
		base, own = r.store.base.lookup(qa), r.store.own.lookup(qa)
	}
	r.store.spend(1 + base.size() + own.size())
	for _, cand := range [2]candidates{base, own} {
		n := len(cand.bucket)
		if cand.all {
			n = len(cand.facts)
		}
		for k := 0; k < n; k++ {
			f := cand.facts[k]
			if !cand.all {
				f = cand.facts[cand.bucket[k]]
			}
			var ok bool
			set, ok = e.match(p, q, f.Args, set[:0])
			var err error
			if ok {
				r.store.spend(matchCost)
				err = r.join(e, i+1)
			}
			for _, s := range set {
				e.vals[s] = nil
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// match matches a fact's arguments against p's: bound ones must be equal,
// unbound variables are bound (their slots appended to set, to unbind).
func (e *env) match(p *plan.Premise, q, args []ast.BaseTerm, set []int) ([]int, bool) {
	for j, t := range p.Args {
		switch t.Kind {
		case plan.TermWild:
		case plan.TermVar:
			if cur := e.vals[t.Slot]; cur != nil {
				if !cur.Equals(args[j]) {
					return set, false
				}
			} else {
				e.vals[t.Slot] = args[j]
				set = append(set, t.Slot)
			}
		default:
			if !q[j].Equals(args[j]) {
				return set, false
			}
		}
	}
	return set, true
}

// temporal joins a temporal literal the kernel evaluates itself: every
// fact of the temporal store matching the bound arguments (and, for <-,
// overlapping the operator's interval), with the interval's variables
// bound to the fact's start and end, as the engine's TemporalEvaluator.
func (r *runner) temporal(e *env, i int, p *plan.Premise) error {
	q, set := e.scratch(p)
	if err := e.query(p, q); err != nil {
		return err
	}
	var start, end int64
	during := p.Temporal.Operator != nil
	if during {
		iv := r.pastInterval(p.Temporal.Operator.Interval)
		start, end = factstore.GetStartTime(iv), factstore.GetEndTime(iv)
	}
	return r.ts.eachMatch(ast.Atom{Predicate: p.Pred, Args: q}, during, start, end, func(a ast.Atom, iv ast.Interval) error {
		var ok bool
		if set, ok = e.match(p, q, a.Args, set[:0]); ok {
			if p.From >= 0 {
				e.vals[p.From] = ast.Time(factstore.GetStartTime(iv))
				set = append(set, p.From)
			}
			if p.To >= 0 {
				e.vals[p.To] = ast.Time(factstore.GetEndTime(iv))
				set = append(set, p.To)
			}
		}
		var err error
		if ok {
			err = r.join(e, i+1)
		}
		for _, k := range set {
			e.vals[k] = nil
		}
		return err
	})
}

// pastInterval resolves a past operator's interval against the
// evaluation time as the engine does: durations count back from it, and
// <-[d1, d2] covers from d2 ago to d1 ago.
func (r *runner) pastInterval(iv ast.Interval) ast.Interval {
	resolve := func(b ast.TemporalBound) ast.TemporalBound {
		switch b.Type {
		case ast.DurationTemporalBound:
			return ast.NewTimestampBound(r.evalTime.Add(-time.Duration(b.Timestamp)))
		case ast.NowBound:
			return ast.NewTimestampBound(r.evalTime)
		}
		return b
	}
	return ast.NewInterval(resolve(iv.End), resolve(iv.Start))
}

// exists reports whether a fact matches a negated atom's bound arguments.
func (r *runner) exists(e *env, p *plan.Premise) (bool, error) {
	q, _ := e.scratch(p)
	if err := e.query(p, q); err != nil {
		return false, err
	}
	found := false
	_ = r.store.GetFacts(ast.Atom{Predicate: p.Pred, Args: q}, func(ast.Atom) error {
		found = true
		return ErrStop
	})
	return found, nil
}

// derive evaluates the head of a complete solution and adds the fact (and
// applies a let transform, as the engine does).
func (r *runner) derive(e *env) error {
	c := e.c
	args := r.terms.take(len(c.Head))
	for j, t := range c.Head {
		if t.Kind == plan.TermWild {
			args[j] = t.Value // a let-bound variable
			continue
		}
		v, err := e.value(t)
		if err != nil {
			return err
		}
		args[j] = v
	}
	head := ast.Atom{Predicate: c.Clause.Head.Predicate, Args: args}
	if c.Clause.Transform == nil {
		if !r.add(head) {
			r.terms.giveBack(len(args)) // a fact the store had: nothing keeps args
		}
		return nil
	}
	var subst ast.ConstSubstList
	for k, v := range c.Vars {
		if k, ok := e.vals[k].(ast.Constant); ok {
			subst = subst.Extend(v, k)
		}
	}
	var added []ast.Atom
	if err := engine.EvalTransform(head, *c.Clause.Transform, []ast.ConstSubstList{subst}, func(a ast.Atom) bool {
		added = append(added, a)
		return true
	}); err != nil {
		return err
	}
	for _, a := range added {
		r.add(a)
	}
	if r.totalLimit > 0 && r.store.EstimateFactCount() > r.totalLimit {
		return fmt.Errorf("fact size limit reached evaluting %q %d > %d", c.Clause.Head.String(), r.store.EstimateFactCount(), r.totalLimit)
	}
	return nil
}
