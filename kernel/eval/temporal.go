package eval

import (
	"fmt"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/factstore"
)

// TemporalStore is the request's temporal store. It keeps the facts in an
// argument index of their atoms with each atom's intervals. The kernel's
// evaluator reads it through eachMatch; the engine's temporal evaluator
// (strata the engine evaluates), proofs and coverage read it through
// factstore.ReadOnlyTemporalFactStore, which it answers from the same
// index exactly as the engine's TemporalStore would, in a fixed order
// instead of a map's (TestTemporalStoreReadsMatchEngine).
//
// Like Store for the regular store, every call checks the stop flag
// and charges the work to the same budget. The charge of a lookup through
// the interface is what it cost when it went to a TemporalStore, which
// scans every atom of the queried predicate: one unit plus the
// predicate's stored intervals (an upper bound of its atoms), and one more
// for each fact streamed out.
type temporalStore struct {
	stop  *Store
	limit int                        // intervals per atom (factstore.TemporalStore's maxIntervalsPerAtom)
	sizes map[ast.PredicateSym]int64 // intervals stored per predicate
	total int64
	// atoms indexes the stored atoms by argument and intervals holds each
	// one's intervals in insertion order, by atom hash as TemporalStore
	// keys them.
	atoms     *indexedStore
	intervals map[uint64][]ast.Interval
}

func newTemporalStore(limit int, work *Store) *temporalStore {
	return &temporalStore{stop: work, limit: limit,
		sizes: map[ast.PredicateSym]int64{}, atoms: newIndexedStore(), intervals: map[uint64][]ast.Interval{}}
}

// load adds a fact before evaluation: counted, never aborted. It accepts
// and refuses exactly what TemporalStore.Add does: an interval that ends
// before it starts, one interval more than the limit for an atom (checked
// before duplicates, as there), a duplicate interval (not added).
func (s *temporalStore) load(a ast.Atom, iv ast.Interval) (bool, error) {
	if iv.Start.Type == ast.TimestampBound && iv.End.Type == ast.TimestampBound && iv.Start.Timestamp > iv.End.Timestamp {
		return false, fmt.Errorf("invalid temporal interval: start %v > end %v", iv.Start, iv.End)
	}
	h := a.Hash()
	ivs := s.intervals[h]
	if s.limit > 0 && len(ivs) >= s.limit {
		return false, fmt.Errorf("%w: maximum %d intervals per atom", factstore.ErrIntervalLimitExceeded, s.limit)
	}
	for _, old := range ivs {
		if old == iv {
			return false, nil
		}
	}
	s.intervals[h] = append(ivs, iv)
	s.atoms.Add(a)
	s.sizes[a.Predicate]++
	s.total++
	return true, nil
}

// eachMatch calls fn for every stored fact whose atom matches q and, with
// during set, whose interval overlaps [start, end] (inclusive, as the
// store's GetFactsDuring). It charges the work of a lookup: one unit per
// candidate atom, matchCost per fact passed to fn.
func (s *temporalStore) eachMatch(q ast.Atom, during bool, start, end int64, fn func(ast.Atom, ast.Interval) error) error {
	cand := s.atoms.lookup(q)
	s.stop.spend(1 + cand.size())
	return cand.each(q, func(a ast.Atom) error {
		for _, iv := range s.intervals[a.Hash()] {
			if during && !overlaps(iv, start, end) {
				continue
			}
			s.stop.spend(matchCost)
			if err := fn(a, iv); err != nil {
				return err
			}
		}
		return nil
	})
}

// overlaps reports whether iv overlaps [start, end] (Unix nanoseconds),
// bounds included, as TemporalStore's interval tree decides: a point in
// time is [t, t].
func overlaps(iv ast.Interval, start, end int64) bool {
	return factstore.GetStartTime(iv) <= end && start <= factstore.GetEndTime(iv)
}

// scan charges a lookup of q's predicate.
func (s *temporalStore) scan(q ast.Atom) {
	if q.Predicate.Symbol == "" {
		s.stop.spend(1 + s.total)
		return
	}
	s.stop.spend(1 + s.sizes[q.Predicate])
}

// each calls fn for every stored fact whose atom matches q (as
// factstore.Matches: q's constants are equal, its variables match
// anything), each with each of its intervals: atoms in the order they were
// stored, an atom's intervals in the order they came. A q without a
// predicate matches every fact when all is set, and none otherwise, as in
// TemporalStore. It charges nothing.
func (s *temporalStore) each(q ast.Atom, all bool, fn func(factstore.TemporalFact) error) error {
	visit := func(a ast.Atom) error {
		for _, iv := range s.intervals[a.Hash()] {
			if err := fn(factstore.TemporalFact{Atom: a, Interval: iv}); err != nil {
				return err
			}
		}
		return nil
	}
	if q.Predicate.Symbol != "" || !all {
		return s.atoms.lookup(q).each(q, visit)
	}
	for _, sym := range s.atoms.ListPredicates() {
		for _, a := range s.atoms.rels[sym].facts {
			if err := visit(a); err != nil {
				return err
			}
		}
	}
	return nil
}

// GetFactsAt implements factstore.ReadOnlyTemporalFactStore: the facts
// matching q whose interval holds t, its bounds included.
func (s *temporalStore) GetFactsAt(q ast.Atom, t time.Time, fn func(factstore.TemporalFact) error) error {
	s.scan(q)
	at := t.UnixNano()
	return s.each(q, false, func(f factstore.TemporalFact) error {
		if overlaps(f.Interval, at, at) {
			s.stop.spend(matchCost)
			return fn(f)
		}
		return nil
	})
}

// GetFactsDuring implements factstore.ReadOnlyTemporalFactStore: the facts
// matching q whose interval overlaps iv, bounds included.
func (s *temporalStore) GetFactsDuring(q ast.Atom, iv ast.Interval, fn func(factstore.TemporalFact) error) error {
	s.scan(q)
	start, end := factstore.GetStartTime(iv), factstore.GetEndTime(iv)
	return s.each(q, false, func(f factstore.TemporalFact) error {
		if overlaps(f.Interval, start, end) {
			s.stop.spend(matchCost)
			return fn(f)
		}
		return nil
	})
}

// GetAllFacts implements factstore.ReadOnlyTemporalFactStore: the facts
// matching q, every fact when q has no predicate.
func (s *temporalStore) GetAllFacts(q ast.Atom, fn func(factstore.TemporalFact) error) error {
	s.scan(q)
	return s.each(q, true, func(f factstore.TemporalFact) error {
		s.stop.spend(matchCost)
		return fn(f)
	})
}

// ContainsAt implements factstore.ReadOnlyTemporalFactStore: whether a is
// stored with an interval that holds t.
func (s *temporalStore) ContainsAt(a ast.Atom, t time.Time) bool {
	s.stop.spend(1)
	at := t.UnixNano()
	for _, iv := range s.intervals[a.Hash()] {
		if overlaps(iv, at, at) {
			return true
		}
	}
	return false
}

// ListPredicates implements factstore.ReadOnlyTemporalFactStore.
func (s *temporalStore) ListPredicates() []ast.PredicateSym {
	s.stop.check()
	return s.atoms.ListPredicates()
}

// EstimateFactCount implements factstore.ReadOnlyTemporalFactStore: the
// number of stored intervals, as TemporalStore counts.
func (s *temporalStore) EstimateFactCount() int { return int(s.total) }

// Add implements factstore.TemporalFactStore.
func (s *temporalStore) Add(a ast.Atom, iv ast.Interval) (bool, error) {
	s.stop.spend(1)
	return s.load(a, iv)
}

// AddEternal implements factstore.TemporalFactStore.
func (s *temporalStore) AddEternal(a ast.Atom) (bool, error) {
	return s.Add(a, ast.EternalInterval())
}

// Coalesce implements factstore.TemporalFactStore. The engine does not
// call it during evaluation; merging intervals would change the index's
// copy, so it is refused.
func (s *temporalStore) Coalesce(ast.PredicateSym) error {
	return fmt.Errorf("the kernel's temporal store does not coalesce")
}

// Merge implements factstore.TemporalFactStore: every fact of other is
// added.
func (s *temporalStore) Merge(other factstore.ReadOnlyTemporalFactStore) error {
	for _, sym := range other.ListPredicates() {
		err := other.GetAllFacts(ast.NewQuery(sym), func(tf factstore.TemporalFact) error {
			_, err := s.Add(tf.Atom, tf.Interval)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
