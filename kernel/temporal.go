package kernel

import (
	"fmt"
	"sort"
	"time"

	"codeberg.org/TauCeti/mangle-go/analysis"
	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/factstore"
)

// plainPremise returns the atom or negated atom inside a temporal premise,
// and whether the premise was temporal.
func plainPremise(p ast.Term) (ast.Term, bool) {
	switch x := p.(type) {
	case ast.TemporalLiteral:
		return x.Literal, true
	case ast.TemporalAtom:
		return x.Atom, true
	}
	return p, false
}

// stratifyTemporalAware stratifies a shadow of the rules in which temporal
// literals are plain atoms. Mangle v0.5.0's stratification skips temporal
// literals (MANGLE_NOTES section 5), which orders strata wrongly; the
// engine only needs the strata, so the original rules are evaluated with
// the shadow's strata.
func stratifyTemporalAware(info *analysis.ProgramInfo) ([]analysis.Nodeset, map[ast.PredicateSym]int, error) {
	shadow := make([]ast.Clause, len(info.Rules))
	for i, r := range info.Rules {
		c := r
		c.Premises = make([]ast.Term, len(r.Premises))
		for j, p := range r.Premises {
			c.Premises[j], _ = plainPremise(p)
		}
		shadow[i] = c
	}
	return analysis.Stratify(analysis.Program{EdbPredicates: info.EdbPredicates, IdbPredicates: info.IdbPredicates, Rules: shadow})
}

// checkTemporalRecursion rejects rules the v0.5.0 engine evaluates wrongly:
// a rule with a temporal head in a recursive cycle (the engine drops the
// head time and writes stray eternal facts) and a cycle through a temporal
// literal (mutual temporal recursion). It names file, line and predicate.
func checkTemporalRecursion(files []*sourceFile) error {
	graph := map[string]map[string]bool{}
	type ruleRef struct {
		file     *sourceFile
		index    int
		head     string
		temporal []string // predicates reached through temporal premises
		timed    bool     // the head has a time annotation
	}
	var rules []ruleRef
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			if len(c.Premises) == 0 {
				continue
			}
			r := ruleRef{file: f, index: i, head: c.Head.Predicate.Symbol, timed: c.HeadTime != nil && !c.HeadTime.IsEternal()}
			if graph[r.head] == nil {
				graph[r.head] = map[string]bool{}
			}
			for _, p := range c.Premises {
				lit, temporal := plainPremise(p)
				var sym string
				switch a := lit.(type) {
				case ast.Atom:
					sym = a.Predicate.Symbol
				case ast.NegAtom:
					sym = a.Atom.Predicate.Symbol
				default:
					continue
				}
				graph[r.head][sym] = true
				if temporal {
					r.temporal = append(r.temporal, sym)
				}
			}
			rules = append(rules, r)
		}
	}
	comp := sccs(graph)
	recursive := func(a, b string) bool { // b reaches a, and a reaches b
		return comp[a] != 0 && comp[a] == comp[b]
	}
	var errs LoadErrors
	for _, r := range rules {
		if r.timed && (graph[r.head][r.head] || cycleSize(comp, r.head) > 1) {
			errs = append(errs, &LoadError{File: r.file.name, Line: r.file.clauseLine(r.index),
				Message: fmt.Sprintf("invalid_temporal_pattern: %s has a temporal head and is recursive; Mangle v0.5.0 drops the head time in recursion and derives wrong facts", r.head)})
			continue
		}
		for _, t := range r.temporal {
			if t == r.head || recursive(r.head, t) {
				errs = append(errs, &LoadError{File: r.file.name, Line: r.file.clauseLine(r.index),
					Message: fmt.Sprintf("invalid_temporal_pattern: %s depends on itself through the temporal literal on %s (temporal recursion may not terminate and v0.5.0 evaluates it wrongly)", r.head, t)})
				break
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// sccs numbers the strongly connected components of a graph (Tarjan);
// nodes in the same component get the same non-zero number.
func sccs(graph map[string]map[string]bool) map[string]int {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	comp := map[string]int{}
	next, ncomp := 1, 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range sortedSet(graph[v]) {
			if index[w] == 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			ncomp++
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = ncomp
				if w == v {
					break
				}
			}
		}
	}
	nodes := make([]string, 0, len(graph))
	for v := range graph {
		nodes = append(nodes, v)
	}
	sort.Strings(nodes)
	for _, v := range nodes {
		if index[v] == 0 {
			visit(v)
		}
	}
	return comp
}

func cycleSize(comp map[string]int, v string) int {
	n := 0
	for _, c := range comp {
		if c == comp[v] {
			n++
		}
	}
	return n
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// temporalStore is the request's temporal store. It keeps the facts in an
// argument index of their atoms with each atom's intervals. The kernel's
// evaluator reads it through eachMatch; the engine's temporal evaluator
// (strata the engine evaluates), proofs and coverage read it through
// factstore.ReadOnlyTemporalFactStore, which it answers from the same
// index exactly as the engine's TemporalStore would, in a fixed order
// instead of a map's (TestTemporalStoreReadsMatchEngine).
//
// Like evalStore for the regular store, every call checks the stop flag
// and charges the work to the same budget. The charge of a lookup through
// the interface is what it cost when it went to a TemporalStore, which
// scans every atom of the queried predicate: one unit plus the
// predicate's stored intervals (an upper bound of its atoms), and one more
// for each fact streamed out.
type temporalStore struct {
	stop  *evalStore
	limit int                        // intervals per atom (TemporalStore's maxIntervalsPerAtom)
	sizes map[ast.PredicateSym]int64 // intervals stored per predicate
	total int64
	// atoms indexes the stored atoms by argument and intervals holds each
	// one's intervals in insertion order, by atom hash as TemporalStore
	// keys them.
	atoms     *indexedStore
	intervals map[uint64][]ast.Interval
}

var _ factstore.TemporalFactStore = (*temporalStore)(nil)

func newTemporalStore(limit int, work *evalStore) *temporalStore {
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

// checkAggregations rejects what Mangle v0.5.0 evaluates silently wrong:
// two aggregation rules with the same head predicate where one has more
// than one premise share an internal relation, so each aggregates over the
// union of both bodies (MANGLE_NOTES section 2). Split such rules into
// separate head predicates.
func checkAggregations(files []*sourceFile) error {
	type agg struct {
		file  *sourceFile
		index int
		multi bool
	}
	byHead := map[string][]agg{}
	var order []string
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			if c.Transform == nil || c.Transform.IsLetTransform() {
				continue
			}
			h := c.Head.Predicate.Symbol
			if _, ok := byHead[h]; !ok {
				order = append(order, h)
			}
			byHead[h] = append(byHead[h], agg{f, i, len(c.Premises) > 1})
		}
	}
	var errs LoadErrors
	for _, h := range order {
		rules := byHead[h]
		if len(rules) < 2 {
			continue
		}
		multi := false
		for _, r := range rules {
			multi = multi || r.multi
		}
		if multi {
			r := rules[1]
			errs = append(errs, &LoadError{File: r.file.name, Line: r.file.clauseLine(r.index),
				Message: fmt.Sprintf("%s has %d aggregation (do) rules and one has several premises; Mangle v0.5.0 would aggregate over both bodies together. Give each aggregation its own head predicate", h, len(rules))})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
