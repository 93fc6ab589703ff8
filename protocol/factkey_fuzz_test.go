package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// FuzzFactKey holds fact identity to one definition: for every fact a
// server accepts (decoded and validated against fuzzProfile), its key
// (protocol.FactKey) is what a client computes from the fact as the server
// sends it back (encoded, decoded, protocol.CanonicalFact), and what the
// server computes again from that JSON. Servers dedupe facts and hash
// macro_ids by the key and clients keep their state by it, so they agree on
// which facts are the same.
func FuzzFactKey(f *testing.F) {
	for _, s := range factSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var raws []json.RawMessage
		if json.Unmarshal(data, &raws) != nil {
			return
		}
		facts, vs := protocol.DecodeFacts(raws)
		skip := map[int]bool{}
		for _, v := range vs {
			skip[v.FactIndex] = true
		}
		out, _ := protocol.ValidateFacts(facts, fuzzProfile(), protocol.Assert, skip)
		for _, fact := range out {
			key := protocol.FactKey(fact)
			raw, err := json.Marshal(fact)
			if err != nil {
				t.Fatalf("an accepted fact does not encode: %v", err)
			}
			again, vs := protocol.DecodeFacts([]json.RawMessage{raw})
			if len(vs) > 0 {
				t.Fatalf("%s does not decode again: %v", raw, vs)
			}
			valid, vs := protocol.ValidateFacts(again, fuzzProfile(), protocol.Assert, nil)
			if len(vs) > 0 {
				t.Fatalf("%s does not validate again: %v", raw, vs)
			}
			if got := protocol.FactKey(valid[0]); got != key {
				t.Fatalf("the server keys %s as %q, and again as %q", raw, key, got)
			}
			c, ok := protocol.CanonicalFact(fact, fuzzProfile())
			if !ok {
				t.Fatalf("CanonicalFact refuses an accepted fact %s", raw)
			}
			if got := protocol.FactKey(c); got != key {
				t.Fatalf("a client keys %s as %q, the server as %q", raw, got, key)
			}
		}
	})
}
