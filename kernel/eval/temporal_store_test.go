package eval

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/factstore"
)

// TestTemporalStoreLoadMatchesEngine: the kernel's temporal store, which
// keeps its own index, accepts, refuses and counts every fact exactly as
// the engine's TemporalStore does: duplicates, the interval limit (checked
// before duplicates) and an interval that ends before it starts.
func TestTemporalStoreLoadMatchesEngine(t *testing.T) {
	at := func(sec int64) ast.TemporalBound { return ast.NewTimestampBound(time.Unix(sec, 0)) }
	iv := func(from, to int64) ast.Interval { return ast.NewInterval(at(from), at(to)) }
	a := ast.NewAtom("ping", ast.String("a"))
	b := ast.NewAtom("ping", ast.String("b"))
	steps := []struct {
		atom ast.Atom
		iv   ast.Interval
	}{
		{a, iv(1, 2)}, {a, iv(1, 2)}, {a, iv(3, 4)}, {b, ast.EternalInterval()},
		{a, iv(5, 6)}, {a, iv(1, 2)}, {a, iv(9, 8)}, {b, iv(7, 7)},
	}
	const limit = 3
	ours := newTemporalStore(limit, &Store{})
	theirs := factstore.NewTemporalStore(factstore.WithMaxIntervalsPerAtom(limit))
	for i, st := range steps {
		gotAdded, gotErr := ours.load(st.atom, st.iv)
		wantAdded, wantErr := theirs.Add(st.atom, st.iv)
		if gotAdded != wantAdded || (gotErr == nil) != (wantErr == nil) ||
			errors.Is(gotErr, factstore.ErrIntervalLimitExceeded) != errors.Is(wantErr, factstore.ErrIntervalLimitExceeded) {
			t.Fatalf("step %d: kernel (%v, %v), engine (%v, %v)", i, gotAdded, gotErr, wantAdded, wantErr)
		}
	}
	if ours.EstimateFactCount() != theirs.EstimateFactCount() {
		t.Errorf("count %d, engine %d", ours.EstimateFactCount(), theirs.EstimateFactCount())
	}
	count := func(s factstore.ReadOnlyTemporalFactStore) int {
		n := 0
		_ = s.GetAllFacts(ast.NewQuery(a.Predicate), func(factstore.TemporalFact) error { n++; return nil })
		return n
	}
	if got, want := count(ours), count(theirs); got != want || got != 5 {
		t.Errorf("GetAllFacts: %d facts, engine %d (want 5: a three times, b twice)", got, want)
	}
	n := 0
	_ = ours.eachMatch(ast.NewAtom("ping", ast.String("a")), true, 2e9, 5e9, func(ast.Atom, ast.Interval) error { n++; return nil })
	if n != 3 { // [1,2], [3,4] and [5,6] overlap [2 s, 5 s]
		t.Errorf("eachMatch during [2s, 5s]: %d facts, want 3", n)
	}
}

// TestTemporalStoreReadsMatchEngine: every read of the temporal store
// through factstore.ReadOnlyTemporalFactStore (what the engine's temporal
// evaluator, proofs and coverage use) gives the facts the engine's
// TemporalStore gives when fed the same facts, on random facts and
// queries: patterns with constants and variables, points in time and
// intervals, bounded and unbounded.
func TestTemporalStoreReadsMatchEngine(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	consts := []ast.Constant{ast.String("a"), ast.String("b"), ast.String("c"), ast.Number(1), ast.Number(2)}
	preds := []string{"ping", "pong"}
	bound := func() ast.TemporalBound {
		switch rng.IntN(8) {
		case 0:
			return ast.NegativeInfinity()
		case 1:
			return ast.PositiveInfinity()
		}
		return ast.NewTimestampBound(time.Unix(int64(rng.IntN(20)), 0))
	}
	interval := func() ast.Interval {
		if rng.IntN(6) == 0 {
			return ast.EternalInterval()
		}
		return ast.NewInterval(bound(), bound())
	}
	atom := func() ast.Atom {
		return ast.NewAtom(preds[rng.IntN(len(preds))], consts[rng.IntN(len(consts))], consts[rng.IntN(len(consts))])
	}
	query := func() ast.Atom {
		if rng.IntN(10) == 0 {
			return ast.Atom{} // every predicate
		}
		args := make([]ast.BaseTerm, 2)
		for i := range args {
			if rng.IntN(2) == 0 {
				args[i] = consts[rng.IntN(len(consts))]
			} else {
				args[i] = ast.Variable{Symbol: fmt.Sprintf("X%d", rng.IntN(2))} // sometimes repeated
			}
		}
		return ast.NewAtom(preds[rng.IntN(len(preds))], args...)
	}
	collect := func(read func(func(factstore.TemporalFact) error) error) []string {
		var out []string
		_ = read(func(f factstore.TemporalFact) error {
			out = append(out, f.Atom.String()+"@"+f.Interval.String())
			return nil
		})
		slices.Sort(out)
		return out
	}
	for round := range 200 {
		ours := newTemporalStore(4, &Store{})
		theirs := factstore.NewTemporalStore(factstore.WithMaxIntervalsPerAtom(4))
		for range rng.IntN(40) {
			a, iv := atom(), interval()
			_, _ = ours.load(a, iv)
			_, _ = theirs.Add(a, iv)
		}
		for range 20 {
			q, iv, at := query(), interval(), time.Unix(int64(rng.IntN(20)), 0)
			checks := []struct {
				name     string
				got, wnt []string
			}{
				{"GetAllFacts", collect(func(fn func(factstore.TemporalFact) error) error { return ours.GetAllFacts(q, fn) }),
					collect(func(fn func(factstore.TemporalFact) error) error { return theirs.GetAllFacts(q, fn) })},
				{"GetFactsAt", collect(func(fn func(factstore.TemporalFact) error) error { return ours.GetFactsAt(q, at, fn) }),
					collect(func(fn func(factstore.TemporalFact) error) error { return theirs.GetFactsAt(q, at, fn) })},
				{"GetFactsDuring", collect(func(fn func(factstore.TemporalFact) error) error { return ours.GetFactsDuring(q, iv, fn) }),
					collect(func(fn func(factstore.TemporalFact) error) error { return theirs.GetFactsDuring(q, iv, fn) })},
			}
			for _, c := range checks {
				if !slices.Equal(c.got, c.wnt) {
					t.Fatalf("round %d: %s(%v, at %v, during %v) = %v, engine %v", round, c.name, q, at.Unix(), iv, c.got, c.wnt)
				}
			}
			if a := atom(); ours.ContainsAt(a, at) != theirs.ContainsAt(a, at) {
				t.Fatalf("round %d: ContainsAt(%v, %v) = %v, engine %v", round, a, at.Unix(), ours.ContainsAt(a, at), theirs.ContainsAt(a, at))
			}
		}
	}
}
