package eval

import (
	"sync/atomic"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/factstore"
)

// abortSignal is the private panic value that unwinds the engine when the
// request's context ends. The engine takes no context, starts no goroutines
// and holds no locks, so unwinding it from inside a store call is safe
// (MANGLE_NOTES section 4).
type abortSignal struct{}

// budgetSignal is the private panic value that unwinds the engine when the
// evaluation has spent more work than its budget allows.
type budgetSignal struct{}

// matchCost is the work charged for a fact a lookup returns, against 1 for
// a fact it only looks at. Joining a returned fact (unification, copying
// the substitution, building the next solution) costs about 100 times as
// much CPU as rejecting one (measured on the browser domain: ~6 us against
// ~50 ns), so with this weight a unit is roughly the same CPU time
// whatever the join looks like.
const matchCost = 100

// Store overlays a per-request store on the shared, read-only server
// facts. Every operation checks the stop flag and panics with abortSignal
// once it is set, which is how a deadline or cancellation stops the engine's
// CPU work.
//
// It also counts the evaluation's work. A lookup costs one unit plus one
// per fact it looks at (the facts of the index bucket it uses, or every
// fact of the predicate when no argument is bound, index.go), charged
// before the scan, and matchCost more per fact it returns. Membership tests and additions cost one unit. The engine
// does all its joins through lookups, so the count bounds the CPU an
// evaluation spends even when it derives almost nothing, which the
// created-facts limit cannot see. Charging the scan up front keeps the count
// deterministic when the engine stops a lookup at its first match. Past
// budget units it panics with budgetSignal. The engine calls the store
// from one goroutine, so the counters need no synchronization.
type Store struct {
	base   *indexedStore // shared and frozen
	own    *indexedStore
	stop   *atomic.Bool
	work   int64 // units spent so far
	budget int64 // units allowed; 0 means no budget
}

var _ factstore.FactStore = (*Store)(nil)

func (s *Store) check() {
	if s.stop != nil && s.stop.Load() {
		panic(abortSignal{})
	}
}

// spend charges n units of work and checks the stop flag.
func (s *Store) spend(n int64) {
	s.work += n
	if s.budget > 0 && s.work > s.budget {
		panic(budgetSignal{})
	}
	s.check()
}

// GetFacts streams the base facts, then the request facts, that match q.
func (s *Store) GetFacts(q ast.Atom, fn func(ast.Atom) error) error {
	base, own := s.base.lookup(q), s.own.lookup(q)
	s.spend(1 + base.size() + own.size())
	if err := base.charged(q, s, fn); err != nil {
		return err
	}
	return own.charged(q, s, fn)
}

// Contains reports whether either layer holds a.
func (s *Store) Contains(a ast.Atom) bool {
	s.spend(1)
	return s.base.Contains(a) || s.own.Contains(a)
}

// ListPredicates lists the predicates of both layers.
func (s *Store) ListPredicates() []ast.PredicateSym {
	s.check()
	seen := map[ast.PredicateSym]bool{}
	var out []ast.PredicateSym
	for _, p := range append(s.base.ListPredicates(), s.own.ListPredicates()...) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// EstimateFactCount counts both layers.
func (s *Store) EstimateFactCount() int {
	return s.base.EstimateFactCount() + s.own.EstimateFactCount()
}

// Add adds a to the request layer unless the server facts already hold it.
func (s *Store) Add(a ast.Atom) bool {
	s.spend(1)
	if s.base.Contains(a) {
		return false
	}
	return s.own.Add(a)
}

// Merge adds every fact of other.
func (s *Store) Merge(other factstore.ReadOnlyFactStore) {
	s.check()
	for _, p := range other.ListPredicates() {
		_ = other.GetFacts(ast.NewQuery(p), func(a ast.Atom) error {
			s.Add(a)
			return nil
		})
	}
}

type stopErr struct{}

func (stopErr) Error() string { return "stop" }

// ErrStop ends a search at its first solution.
var ErrStop = stopErr{}
