package kernel

import (
	"errors"
	"testing"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/factstore"
)

// TestTemporalStoreLoadMatchesEngine: the kernel's temporal store, which
// keeps its own index and builds the engine's TemporalStore only when
// asked, accepts, refuses and counts every fact exactly as TemporalStore
// does: duplicates, the interval limit (checked before duplicates) and an
// interval that ends before it starts. The TemporalStore built from it
// answers a lookup as one fed directly.
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
	ours := newTemporalStore(limit, &evalStore{})
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
