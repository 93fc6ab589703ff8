package eval

import (
	"sort"

	"codeberg.org/TauCeti/mangle-go/unionfind"
	"github.com/manglecp/manglecp/kernel/plan"
)

// StoreFacts evaluates req with p's plan for it and returns every fact
// the evaluation added to the request's store, as text, sorted; the
// engine's internal predicates too when internal is set.
func (p *Program) StoreFacts(req Request, internal bool) ([]string, error) {
	r, _, err := p.prepare(req)
	if err != nil {
		return nil, err
	}
	if err := guard(func() error { return p.run(r, req) }); err != nil {
		return nil, err
	}
	var out []string
	for _, sym := range r.store.own.ListPredicates() {
		if !internal && sym.IsInternalPredicate() {
			continue
		}
		for _, f := range r.store.own.rels[sym].facts {
			out = append(out, f.String())
		}
	}
	sort.Strings(out)
	return out, nil
}

// FiredAndSearched evaluates req and returns, for every rule, whether
// firedRules reports it fired and whether searching its body in the final
// store finds a solution, with the plan the request evaluated.
func (p *Program) FiredAndSearched(req Request) (fired, searched []bool, steps []plan.Step, err error) {
	r, _, err := p.prepare(req)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := guard(func() error { return p.run(r, req) }); err != nil {
		return nil, nil, nil, err
	}
	clientPreds := map[string]bool{}
	for _, f := range req.Facts {
		clientPreds[f.Pred] = true
	}
	m := p.newMatcher(r.store, r.ts, req.EvalTime)
	fired = p.firedRules(r.store, m, clientPreds, r.fired)
	searched = make([]bool, len(p.Info.Rules))
	for i := range p.Info.Rules {
		searched[i] = m.bodyHasSolution(p.RuleBodies[i], unionfind.New())
	}
	return fired, searched, r.plan, nil
}
