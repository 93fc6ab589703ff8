package eval

import (
	"slices"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"github.com/manglecp/manglecp/kernel/plan"
)

// indexedStore is the fact store the kernel gives the engine: facts by
// predicate, each predicate's facts in insertion order, and per-argument
// hash indexes so that a query with a bound argument visits only the facts
// holding that constant instead of every fact of the predicate (the
// engine's SimpleInMemoryStore scans them all). The engine always
// substitutes the bindings it has into a premise before the lookup, so most
// of its queries have bound arguments.
//
// Facts are identified by ast.Atom.Hash, as in SimpleInMemoryStore, so both
// stores hold the same facts. An index is built the first time a query binds
// its argument and kept up to date from then on; freeze builds them all, for
// a store that is shared read-only between goroutines afterwards.
type indexedStore struct {
	rels  map[ast.PredicateSym]*relation
	count int
	// slab is where new relations are made, a few at a time.
	slab []relation
}

// smallRelation is the most facts a request's relation holds without a
// set of hashes or argument indexes: up to it, a membership test compares
// a few hashes and a lookup looks at every fact, which costs less than
// building and filling maps (most relations of a request hold a fact or
// two).
const smallRelation = 8

// relation holds the facts of one predicate.
type relation struct {
	facts []ast.Atom
	// small holds the facts' hashes, in order, while the relation has at
	// most smallRelation facts and is not frozen (nsmall of them); hashes
	// then (nil before).
	small  [smallRelation]uint64
	nsmall int
	hashes map[uint64]struct{}
	// index[i] maps the hash of argument i's constant to the positions in
	// facts of the facts holding it; nil until built.
	index []map[uint64][]int32
	// frozen relations never build indexes lazily (they are shared).
	frozen bool
}

var _ factstore.FactStore = (*indexedStore)(nil)

func newIndexedStore() *indexedStore {
	return &indexedStore{rels: make(map[ast.PredicateSym]*relation, 16)}
}

// newRelation makes an empty relation from the slab.
func (s *indexedStore) newRelation() *relation {
	if len(s.slab) == 0 {
		s.slab = make([]relation, 8)
	}
	r := &s.slab[0]
	s.slab = s.slab[1:]
	return r
}

// freeze builds every index, after which the store may be read from many
// goroutines at once as long as nobody adds to it.
func (s *indexedStore) freeze() {
	for sym, r := range s.rels {
		r.bigger(sym.Arity)
		for i := range r.index {
			r.build(i)
		}
		r.frozen = true
	}
}

func (r *relation) build(pos int) map[uint64][]int32 {
	if idx := r.index[pos]; idx != nil {
		return idx
	}
	idx := make(map[uint64][]int32, len(r.facts))
	for j, f := range r.facts {
		h := argHash(f.Args[pos])
		idx[h] = append(idx[h], int32(j))
	}
	r.index[pos] = idx
	return idx
}

// argHash is the index key of a fact's argument: the constant's own hash
// (facts are ground; anything else goes to one bucket and is filtered by
// Matches).
func argHash(t ast.BaseTerm) uint64 {
	if c, ok := t.(ast.Constant); ok {
		return c.Hash()
	}
	return 0
}

// bigger moves a small relation's hashes to a set, and makes room for
// its argument indexes.
func (r *relation) bigger(arity int) {
	if r.hashes != nil {
		return
	}
	r.hashes = make(map[uint64]struct{}, 2*r.nsmall+1)
	for _, h := range r.small[:r.nsmall] {
		r.hashes[h] = struct{}{}
	}
	r.nsmall = 0
	r.index = make([]map[uint64][]int32, arity)
}

// has reports whether a fact with hash h is present.
func (r *relation) has(h uint64) bool {
	if r.hashes == nil {
		return slices.Contains(r.small[:r.nsmall], h)
	}
	_, ok := r.hashes[h]
	return ok
}

// Add adds a unless a fact with the same hash is present.
func (s *indexedStore) Add(a ast.Atom) bool {
	r := s.rels[a.Predicate]
	if r == nil {
		r = s.newRelation()
		s.rels[a.Predicate] = r
	}
	h := a.Hash()
	if r.has(h) {
		return false
	}
	if r.hashes == nil && r.nsmall < smallRelation {
		r.small[r.nsmall] = h
		r.nsmall++
	} else {
		r.bigger(len(a.Args))
		r.hashes[h] = struct{}{}
	}
	j := int32(len(r.facts))
	r.facts = append(r.facts, a)
	for i, idx := range r.index {
		if idx != nil {
			k := argHash(a.Args[i])
			idx[k] = append(idx[k], j)
		}
	}
	s.count++
	return true
}

// Contains reports whether a fact with a's hash is present.
func (s *indexedStore) Contains(a ast.Atom) bool {
	r := s.rels[a.Predicate]
	if r == nil {
		return false
	}
	return r.has(a.Hash())
}

// GetFacts calls fn for every fact matching q: through the smallest index
// bucket of q's bound arguments, or every fact of the predicate when none
// is bound. It stops at the first error fn returns and returns it.
func (s *indexedStore) GetFacts(q ast.Atom, fn func(ast.Atom) error) error {
	return s.lookup(q).each(q, fn)
}

// candidates are the facts a lookup looks at: facts[bucket[i]] for every
// i, or every fact when all is set (then, when scan is set, only those
// matching the query's bound arguments match).
type candidates struct {
	facts  []ast.Atom
	bucket []int32
	all    bool
	scan   bool
}

// size is how many facts the lookup looks at.
func (c candidates) size() int64 {
	if c.all {
		return int64(len(c.facts))
	}
	return int64(len(c.bucket))
}

// lookup finds the candidates of q.
func (s *indexedStore) lookup(q ast.Atom) candidates {
	r := s.rels[q.Predicate]
	if r == nil {
		return candidates{}
	}
	if r.hashes == nil {
		// A small relation: every fact, filtered.
		return candidates{facts: r.facts, all: true, scan: len(q.Args) > 0}
	}
	var bucket []int32
	bound := false
	for i, t := range q.Args {
		c, ok := t.(ast.Constant)
		if !ok || i >= len(r.index) {
			continue
		}
		idx := r.index[i]
		if idx == nil {
			if r.frozen {
				continue
			}
			idx = r.build(i)
		}
		b := idx[c.Hash()]
		if !bound || len(b) < len(bucket) {
			bucket, bound = b, true
		}
		if len(bucket) == 0 {
			return candidates{}
		}
	}
	// facts is a snapshot: facts added during the walk are not visited.
	return candidates{facts: r.facts, bucket: bucket, all: !bound}
}

// each calls fn for the candidates that match q.
func (c candidates) each(q ast.Atom, fn func(ast.Atom) error) error {
	return c.charged(q, nil, fn)
}

// charged is each, charging s (when not nil) matchCost for every fact
// that matches before fn sees it.
func (c candidates) charged(q ast.Atom, s *Store, fn func(ast.Atom) error) error {
	n := len(c.bucket)
	if c.all {
		n = len(c.facts)
	}
	for k := range n {
		var f ast.Atom
		if c.all {
			f = c.facts[k]
			if c.scan && !factstore.Matches(q.Args, f.Args) {
				continue
			}
		} else if f = c.facts[c.bucket[k]]; !factstore.Matches(q.Args, f.Args) {
			continue
		}
		if s != nil {
			s.spend(matchCost)
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// ListPredicates lists the predicates that have facts, sorted by name and
// arity so that every walk over the store is in the same order.
func (s *indexedStore) ListPredicates() []ast.PredicateSym {
	out := make([]ast.PredicateSym, 0, len(s.rels))
	for p := range s.rels {
		out = append(out, p)
	}
	plan.SortSyms(out)
	return out
}

// EstimateFactCount is the exact number of facts.
func (s *indexedStore) EstimateFactCount() int { return s.count }

// Merge adds every fact of other.
func (s *indexedStore) Merge(other factstore.ReadOnlyFactStore) {
	for _, p := range other.ListPredicates() {
		_ = other.GetFacts(ast.NewQuery(p), func(a ast.Atom) error {
			s.Add(a)
			return nil
		})
	}
}

// has reports whether sym has any fact.
func (s *indexedStore) has(sym ast.PredicateSym) bool {
	r := s.rels[sym]
	return r != nil && len(r.facts) > 0
}
