package eval

import (
	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/kernel/analyse"
	"github.com/manglecp/manglecp/kernel/factcodec"
	"github.com/manglecp/manglecp/kernel/plan"
	"github.com/manglecp/manglecp/protocol"
)

// Program is a planned program with its server facts in an indexed
// store: what evaluates requests.
type Program struct {
	*plan.Plan
	base      *indexedStore // server facts, read-only (frozen) after Load
	baseCount int           // server facts of the rules (not counting what precomputeStatic derived)
	// Server is the server facts alone (proofs stop at them); base adds
	// what the static strata derive (static.go). baseTotal counts base.
	Server    *indexedStore
	baseTotal int
	// staticFired marks the static rules that fired; staticDerived and
	// staticCreated count the facts the static strata derived (without
	// and with the engine's internal predicates).
	staticFired                  []bool
	staticDerived, staticCreated int64
	baseHas                      map[ast.PredicateSym]bool // predicates with server facts
	phases                       int
}

// New puts the server facts of a into an indexed store, evaluates
// the static strata into it and plans the others (with compile false every
// stratum goes to the engine: the differential tests' reference).
func New(a *analyse.Analysis, compile bool) (*Program, error) {
	p := &Program{Plan: &plan.Plan{Analysis: a}, phases: 6}
	// Server facts go to a shared read-only store once; the engine must not
	// add them again per request.
	p.base = newIndexedStore()
	for _, f := range a.Facts {
		p.base.Add(f)
	}
	for i, t := range p.ToolNames {
		p.base.Add(ast.NewAtom("tool_rank", ast.String(t), ast.Number(int64(i))))
	}
	p.baseCount = p.base.EstimateFactCount()
	p.baseHas = map[ast.PredicateSym]bool{}
	for _, sym := range p.base.ListPredicates() {
		p.baseHas[sym] = true
	}
	for _, t := range p.TimedBase {
		p.baseHas[t.Atom.Predicate] = true
	}
	for sym := range p.External {
		p.baseHas[ast.PredicateSym{Symbol: sym, Arity: p.External[sym]}] = true
	}
	if err := p.precomputeStatic(); err != nil {
		return nil, err
	}
	p.BaseFacts = p.base
	p.Compile(compile)
	p.PlanIntents()
	return p, nil
}

// BaseFactCount is the number of cached server facts.
func (p *Program) BaseFactCount() int { return p.baseCount }

// atomFromFact is a helper for tests and callers holding wire facts.
func atomFromFact(f protocol.Fact) (ast.Atom, error) { return factcodec.Atom(f) }
