package manglecp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestFactSetMatchesKeyMap: the set keeps exactly the facts a map of
// factKey strings keeps, in order, below and beyond smallSet and with
// equal facts formatted differently; its key text is digestFacts's.
func TestFactSetMatchesKeyMap(t *testing.T) {
	for _, n := range []int{0, 1, 5, smallSet - 1, smallSet, smallSet + 1, 100} {
		var facts []protocol.Fact
		for i := range n {
			facts = append(facts, protocol.NewFact("p", fmt.Sprint("a", i%7), json.Number(fmt.Sprint(i%3))))
			if i%4 == 0 {
				facts = append(facts, protocol.NewFact("p", fmt.Sprint("a", i%7), json.Number(fmt.Sprint(i%3))))
			}
			if i%5 == 0 {
				facts = append(facts, protocol.NewFact("q", map[string]any{"b": true, "a": []any{"x"}}))
			}
		}
		set := newFactSet(make([]protocol.Fact, len(facts)), 0)
		var want []protocol.Fact
		seen := map[string]bool{}
		for _, f := range facts {
			kept := set.add(f)
			k := factKey(f)
			if kept != !seen[k] {
				t.Fatalf("n=%d: add(%v) = %v, seen before %v", n, f, kept, seen[k])
			}
			if !seen[k] {
				seen[k] = true
				want = append(want, f)
			}
		}
		if !reflect.DeepEqual(set.facts, want) && len(want) > 0 {
			t.Errorf("n=%d: kept %v, want %v", n, set.facts, want)
		}
		if got, wantDigest := digestKeyedFacts(set.keys, nil), digestFacts(want); got != wantDigest {
			t.Errorf("n=%d: digest of the set's keys %s, digestFacts %s", n, got, wantDigest)
		}
		ext := []protocol.Fact{protocol.NewFact("report_exists", "r1")}
		if got, wantDigest := digestKeyedFacts(set.keys, ext), digestFacts(append(append([]protocol.Fact(nil), want...), ext...)); got != wantDigest {
			t.Errorf("n=%d: digest with external facts %s, digestFacts %s", n, got, wantDigest)
		}
	}
}
