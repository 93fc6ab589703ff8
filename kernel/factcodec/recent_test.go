package factcodec

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/protocol"
)

// TestAtomRecentMatchesAtom: converting a list of facts sharing one
// Recent gives each fact the atom Atom gives it alone, whichever values
// repeat at which position: a string and a number of the same text, an
// integer and a float, lists, booleans, more arguments than Recent keeps.
func TestAtomRecentMatchesAtom(t *testing.T) {
	values := []any{"200", json.Number("200"), json.Number("200.5"), json.Number("2e2"), "s1", "", "r1", true, false,
		[]any{"200"}, map[string]any{"a": "b"}, json.Number("9223372036854775808"), int64(200), float64(200)}
	r := rand.New(rand.NewPCG(40, 2))
	var recent Recent
	for i := range 5000 {
		args := make([]any, r.IntN(recentArity+3))
		for k := range args {
			args[k] = values[r.IntN(len(values))]
		}
		f := protocol.NewFact("p", args...)
		got, err := AtomRecent(f, make([]ast.BaseTerm, len(args)), &recent)
		want, werr := Atom(f)
		if (err == nil) != (werr == nil) {
			t.Fatalf("fact %d %v: AtomRecent error %v, Atom %v", i, args, err, werr)
		}
		if err == nil && !got.Equals(want) {
			t.Fatalf("fact %d %v: AtomRecent %v, Atom %v", i, args, got, want)
		}
	}
}

// BenchmarkAtomRecent converts the 20 facts of scripts/bench's
// evaluate-20 request shape with and without Recent.
func BenchmarkAtomRecent(b *testing.B) {
	var facts []protocol.Fact
	for i := range 6 {
		id := "r" + string(rune('0'+i))
		facts = append(facts,
			protocol.NewFact("net_request", "s1", id, "GET", "https://api.example.com/items/"+id, json.Number("1771510190000")),
			protocol.NewFact("net_response", "s1", id, json.Number("200"), json.Number("1771510190300")))
	}
	for range 7 {
		facts = append(facts, protocol.NewFact("console_event", "s1", "log", "loaded", json.Number("1771510194000")))
	}
	for _, withRecent := range []bool{false, true} {
		name := "Atom"
		if withRecent {
			name = "AtomRecent"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var recent Recent
				for _, f := range facts {
					args := make([]ast.BaseTerm, len(f.Args))
					if withRecent {
						_, _ = AtomRecent(f, args, &recent)
					} else {
						_, _ = AtomWith(f, args)
					}
				}
			}
		})
	}
}
