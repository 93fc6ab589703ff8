package eval

import (
	"fmt"
	"time"

	"codeberg.org/TauCeti/mangle-go/analysis"
	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/engine"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"codeberg.org/TauCeti/mangle-go/unionfind"
	"github.com/manglecp/manglecp/kernel/analyse"
)

// Evaluating once at load what no request can change.
//
// A predicate is static when its facts are the same for every request: a
// predicate with only server facts (not in the facts profile, not external,
// not temporal, not asserted per request), or one whose every rule reads
// only static predicates, has no temporal literal and no head time. The
// strata made only of static predicates are evaluated once, at load, into
// the server facts; each request runs the remaining strata over them. The
// answer is the same (the skipped strata would derive exactly these facts
// again), and so are the statistics: facts_derived and rules_fired add what
// the static strata derived and fired, and the created-facts budget is
// charged for the static facts as before.

// staticLimit bounds what the static strata may derive at load.
const staticLimit = 10_000_000

// precomputeStatic splits the strata, evaluates the static ones into p.base
// and freezes it. It must run at the end of loading, before the program is
// shared.
func (p *Program) precomputeStatic() error {
	p.Server = newIndexedStore()
	p.Server.Merge(p.base)
	p.Server.freeze()
	client := map[string]bool{} // the facts profile's predicates
	for _, d := range p.Profile.Predicates {
		client[d.Predicate] = true
	}
	static := p.staticPredicates(client)
	var staticStrata, dynStrata []analysis.Nodeset
	staticIndex := map[ast.PredicateSym]int{}
	for _, ns := range p.Strata {
		all := len(ns) > 0
		for sym := range ns {
			all = all && static[sym]
		}
		if !all {
			dynStrata = append(dynStrata, ns)
			continue
		}
		for sym := range ns {
			staticIndex[sym] = len(staticStrata)
		}
		staticStrata = append(staticStrata, ns)
	}
	p.DynStrata = dynStrata
	before := p.base.EstimateFactCount()
	if len(staticStrata) > 0 {
		if err := p.evalAtLoad(p.Info, staticStrata, staticIndex); err != nil {
			return err
		}
	}
	pre, err := p.precomputeStaticRules(static, client)
	if err != nil {
		return err
	}
	p.staticCreated = int64(p.base.EstimateFactCount() - before)
	for sym, r := range p.base.rels {
		if !sym.IsInternalPredicate() && !p.Server.has(sym) {
			p.staticDerived += int64(len(r.facts))
		}
	}
	p.base.freeze()
	p.baseTotal = p.base.EstimateFactCount()

	// rules_fired of the static rules is fixed too.
	p.StaticRule = make([]bool, len(p.Info.Rules))
	p.staticFired = make([]bool, len(p.Info.Rules))
	view := &Store{base: p.base, own: newIndexedStore()}
	m := p.newMatcher(view, factstore.NewTemporalStore(), time.Unix(0, 0))
	for i, r := range p.Info.Rules {
		if !static[r.Head.Predicate] && !pre[i] {
			continue
		}
		p.StaticRule[i] = true
		p.staticFired[i] = m.bodyHasSolution(p.RuleBodies[i], unionfind.New())
	}
	return nil
}

// precomputeStaticRules evaluates at load the static rules of the
// predicates that are not static: a rule that reads only static
// predicates (no temporal literal, no head time, no aggregation) derives
// the same facts for every request, even when another rule of its
// predicate reads the request. Such a rule's facts join p.base (before the
// static facts are counted, so facts_derived counts them as it counts the
// static strata's), the rule is marked static (its firing is fixed at
// load) and no request evaluates it again. The gateway's packs need this:
// one rule reading a request fact (an open preview) made every
// mandatory_for_intent rule, over every upstream tool, run per request.
// The rules' bodies read only predicates that are complete in p.base, so
// one stratum of their heads is a correct evaluation order.
func (p *Program) precomputeStaticRules(static map[ast.PredicateSym]bool, client map[string]bool) ([]bool, error) {
	heads := map[ast.PredicateSym]bool{}
	for _, r := range p.Info.Rules {
		heads[r.Head.Predicate] = true
	}
	pre := make([]bool, len(p.Info.Rules))
	var rules []ast.Clause
	stratum := analysis.Nodeset{}
	for i, r := range p.Info.Rules {
		sym := r.Head.Predicate
		name := sym.Symbol
		_, ext := p.External[name]
		if static[sym] || r.Transform != nil || ext || client[name] || p.Temporal[name] || analyse.RequestPredicates[name] {
			continue
		}
		ok := ruleStatic(r, func(s ast.PredicateSym) bool {
			if heads[s] {
				return static[s]
			}
			return p.edbStatic(s, client)
		})
		if !ok {
			continue
		}
		pre[i] = true
		rules = append(rules, r)
		stratum[sym] = struct{}{}
	}
	if len(rules) == 0 {
		return pre, nil
	}
	info := &analysis.ProgramInfo{EdbPredicates: p.Info.EdbPredicates, IdbPredicates: p.Info.IdbPredicates, Rules: rules, Decls: p.Info.Decls}
	index := map[ast.PredicateSym]int{}
	for sym := range stratum {
		index[sym] = 0
	}
	if err := p.evalAtLoad(info, []analysis.Nodeset{stratum}, index); err != nil {
		return nil, err
	}
	for sym := range stratum {
		if p.base.has(sym) {
			p.baseHas[sym] = true
		}
	}
	return pre, nil
}

// evalAtLoad evaluates strata of info into p.base with the engine, at
// time zero, with an empty temporal store and the load's limit.
func (p *Program) evalAtLoad(info *analysis.ProgramInfo, strata []analysis.Nodeset, index map[ast.PredicateSym]int) error {
	if _, err := engine.EvalStratifiedProgramWithStats(info, strata, index, p.base,
		engine.WithEvaluationTime(time.Unix(0, 0)), engine.WithTemporalStore(factstore.NewTemporalStore()),
		engine.WithCreatedFactLimit(staticLimit)); err != nil {
		return fmt.Errorf("evaluating the request-independent rules at load: %w", err)
	}
	return nil
}

// staticPredicates finds the static predicates (see above); client holds
// the facts profile's predicates.
func (p *Program) staticPredicates(client map[string]bool) map[ast.PredicateSym]bool {
	heads := map[ast.PredicateSym][]ast.Clause{}
	for _, r := range p.Info.Rules {
		heads[r.Head.Predicate] = append(heads[r.Head.Predicate], r)
	}
	static := map[ast.PredicateSym]bool{}
	// Start from every predicate the rules define being static and remove
	// the ones that read something dynamic until nothing changes.
	for sym := range heads {
		_, ext := p.External[sym.Symbol]
		static[sym] = !client[sym.Symbol] && !ext && !p.Temporal[sym.Symbol] && !analyse.RequestPredicates[sym.Symbol]
	}
	isStatic := func(sym ast.PredicateSym) bool {
		if _, idb := heads[sym]; idb {
			return static[sym]
		}
		return p.edbStatic(sym, client)
	}
	for changed := true; changed; {
		changed = false
		for sym, rules := range heads {
			if !static[sym] {
				continue
			}
			for _, r := range rules {
				if !ruleStatic(r, isStatic) {
					static[sym], changed = false, true
					break
				}
			}
		}
	}
	for sym := range heads {
		if !static[sym] {
			delete(static, sym)
		}
	}
	return static
}

// edbStatic reports whether sym, a predicate no rule defines, has the same
// facts for every request: server facts only, not from the client (whose
// predicates client names), not external, temporal or asserted per request.
func (p *Program) edbStatic(sym ast.PredicateSym, client map[string]bool) bool {
	name := sym.Symbol
	if name == "tool_rank" {
		return true
	}
	_, ext := p.External[name]
	return p.Server.has(sym) && !client[name] && !ext && !p.Temporal[name] && !analyse.RequestPredicates[name]
}

// ruleStatic reports whether r reads only static predicates, has no
// temporal literal and no head time.
func ruleStatic(r ast.Clause, isStatic func(ast.PredicateSym) bool) bool {
	if r.HeadTime != nil {
		return false
	}
	for _, prem := range r.Premises {
		switch x := prem.(type) {
		case ast.Atom:
			if !x.Predicate.IsBuiltin() && !isStatic(x.Predicate) {
				return false
			}
		case ast.NegAtom:
			if !x.Atom.Predicate.IsBuiltin() && !isStatic(x.Atom.Predicate) {
				return false
			}
		case ast.Eq, ast.Ineq:
		default:
			return false // temporal literals and anything unknown
		}
	}
	return true
}
