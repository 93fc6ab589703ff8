package kernel

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

// evalStore overlays a per-request store on the shared, read-only server
// facts. Every operation checks the stop flag and panics with abortSignal
// once it is set, which is how a deadline or cancellation stops the engine's
// CPU work.
type evalStore struct {
	base factstore.ReadOnlyFactStore
	own  *indexedStore
	stop *atomic.Bool
}

var _ factstore.FactStore = (*evalStore)(nil)

func (s *evalStore) check() {
	if s.stop != nil && s.stop.Load() {
		panic(abortSignal{})
	}
}

// GetFacts streams base facts, then request facts, checking the flag for
// every fact so that long scans stop too.
func (s *evalStore) GetFacts(q ast.Atom, fn func(ast.Atom) error) error {
	s.check()
	cb := func(a ast.Atom) error {
		s.check()
		return fn(a)
	}
	if err := s.base.GetFacts(q, cb); err != nil {
		return err
	}
	return s.own.GetFacts(q, cb)
}

// Contains reports whether either layer holds a.
func (s *evalStore) Contains(a ast.Atom) bool {
	s.check()
	return s.base.Contains(a) || s.own.Contains(a)
}

// ListPredicates lists the predicates of both layers.
func (s *evalStore) ListPredicates() []ast.PredicateSym {
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
func (s *evalStore) EstimateFactCount() int {
	return s.base.EstimateFactCount() + s.own.EstimateFactCount()
}

// Add adds a to the request layer unless the server facts already hold it.
func (s *evalStore) Add(a ast.Atom) bool {
	s.check()
	if s.base.Contains(a) {
		return false
	}
	return s.own.Add(a)
}

// Merge adds every fact of other.
func (s *evalStore) Merge(other factstore.ReadOnlyFactStore) {
	s.check()
	for _, p := range other.ListPredicates() {
		_ = other.GetFacts(ast.NewQuery(p), func(a ast.Atom) error {
			s.Add(a)
			return nil
		})
	}
}

// quiet returns a view of the same facts that never aborts, for reading
// results after evaluation.
func (s *evalStore) quiet() *evalStore {
	return &evalStore{base: s.base, own: s.own}
}
