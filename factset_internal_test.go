package manglecp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestFactSetMatchesKeyMap: the set keeps exactly the facts a map of
// factKey strings keeps, in order, below and beyond smallSet, in one part
// and in several (duplicates within a part and across parts), and with
// equal facts formatted differently; its key text is digestFacts's.
func TestFactSetMatchesKeyMap(t *testing.T) {
	// One set of buffers serves every set in turn, as the server's pool
	// does: a set must not see what the one before it left there.
	reused := &factSetBuffers{}
	for _, n := range []int{0, 1, 5, smallSet - 1, smallSet, smallSet + 1, 100, 2 * keysPerWorker, 5*keysPerWorker + 3, 100, 2 * keysPerWorker, smallSet + 1, 5} {
		var facts []protocol.Fact
		for i := range n {
			facts = append(facts, protocol.NewFact("p", fmt.Sprint("a", i%7), json.Number(fmt.Sprint(i%3))))
			if i%4 == 0 {
				facts = append(facts, protocol.NewFact("p", fmt.Sprint("a", i%7), json.Number(fmt.Sprint(i%3))))
			}
			if i%5 == 0 {
				facts = append(facts, protocol.NewFact("q", map[string]any{"b": true, "a": []any{"x"}}))
			}
			if n > 100 {
				// Mostly distinct facts, some repeated far apart (in
				// another part).
				facts = append(facts, protocol.NewFact("r", json.Number(fmt.Sprint(i%(n/2)))))
			}
		}
		var want []protocol.Fact
		seen := map[string]bool{}
		for _, f := range facts {
			if k := factKey(f); !seen[k] {
				seen[k] = true
				want = append(want, f)
			}
		}
		for _, procs := range []int{1, 4} {
			set := newFactSetParts(append([]protocol.Fact(nil), facts...), 0, procs, reused)
			if !reflect.DeepEqual(set.facts, want) && len(want) > 0 {
				t.Errorf("n=%d procs=%d: kept %d facts, want %d", n, procs, len(set.facts), len(want))
			}
			for i, f := range want {
				if got := string(set.key(int32(i))); got != factKey(f) {
					t.Fatalf("n=%d procs=%d: key %d = %q, want %q", n, procs, i, got, factKey(f))
				}
			}
			if got, wantDigest := digestKeyedFacts(set.chunks, nil), digestFacts(want); got != wantDigest {
				t.Errorf("n=%d procs=%d: digest of the set's keys %s, digestFacts %s", n, procs, got, wantDigest)
			}
			ext := []protocol.Fact{protocol.NewFact("report_exists", "r1")}
			if got, wantDigest := digestKeyedFacts(set.chunks, ext), digestFacts(append(append([]protocol.Fact(nil), want...), ext...)); got != wantDigest {
				t.Errorf("n=%d procs=%d: digest with external facts %s, digestFacts %s", n, procs, got, wantDigest)
			}
		}
	}
}
