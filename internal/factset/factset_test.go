package factset

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/manglecp/manglecp/internal/macroid"
	"github.com/manglecp/manglecp/protocol"
)

// TestFactSetMatchesKeyMap: the set keeps exactly the facts a map of
// factKey strings keeps, in order, below and beyond smallSet, its keys
// built in one part and in several at once (duplicates within a part and
// across parts), with equal facts formatted differently, and with facts
// left out as decodeIntent sets them aside; its key text is macroid.Facts's.
func TestFactSetMatchesKeyMap(t *testing.T) {
	// One set of buffers serves every set in turn, as the server's pool
	// does: a set must not see what the one before it left there.
	reused := &Buffers{}
	for _, n := range []int{0, 1, 5, smallSet - 1, smallSet, smallSet + 1, 100, 4096, 10243, 100, 4096, smallSet + 1, 5} {
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
		noQ := func(f *protocol.Fact) bool { return f.Pred != "q" }
		for _, c := range []struct {
			parts int
			keep  func(*protocol.Fact) bool
		}{{1, nil}, {8, nil}, {1, noQ}, {8, noQ}} {
			var want []protocol.Fact
			seen := map[string]bool{}
			for _, f := range facts {
				if k := protocol.FactKey(f); !seen[k] && (c.keep == nil || c.keep(&f)) {
					seen[k] = true
					want = append(want, f)
				}
			}
			parts := c.parts
			build := NewBuilder(len(facts), parts, 0, reused)
			in := append([]protocol.Fact(nil), facts...)
			var wg sync.WaitGroup
			for k := range parts {
				wg.Go(func() { build.Add(k, in[len(in)*k/parts:len(in)*(k+1)/parts], c.keep) })
			}
			wg.Wait()
			premises := in[:0]
			for _, f := range in {
				if c.keep == nil || c.keep(&f) {
					premises = append(premises, f)
				}
			}
			if all := len(premises) == len(in); build.KeyedAll() != all {
				t.Errorf("n=%d parts=%d: keyedAll %v, every fact kept %v", n, parts, build.KeyedAll(), all)
			}
			set := build.Set(premises)
			if !reflect.DeepEqual(set.Facts, want) && len(want) > 0 {
				t.Errorf("n=%d parts=%d: kept %d facts, want %d", n, parts, len(set.Facts), len(want))
			}
			for i, f := range want {
				if got := string(set.Key(int32(i))); got != protocol.FactKey(f) {
					t.Fatalf("n=%d parts=%d: key %d = %q, want %q", n, parts, i, got, protocol.FactKey(f))
				}
			}
			if got, wantDigest := macroid.KeyedFacts(set.Chunks, nil), macroid.Facts(want); got != wantDigest {
				t.Errorf("n=%d parts=%d: digest of the set's keys %s, digestFacts %s", n, parts, got, wantDigest)
			}
			ext := []protocol.Fact{protocol.NewFact("report_exists", "r1")}
			if got, wantDigest := macroid.KeyedFacts(set.Chunks, ext), macroid.Facts(append(append([]protocol.Fact(nil), want...), ext...)); got != wantDigest {
				t.Errorf("n=%d parts=%d: digest with external facts %s, digestFacts %s", n, parts, got, wantDigest)
			}
		}
	}
}
