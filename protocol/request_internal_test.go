package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestCheckIntentFactsInParts: a long fact list checked in parts, one per
// processor, gives exactly what checking it in one go gives: the same
// valid facts in order, the same violations with their fact indexes
// (malformed, unknown, mistyped and misplaced facts in every part, at the
// parts' edges too) and the same missing and present required facts; and
// FactsCheck.Run hands each part's valid facts to its then once, which in
// part order are the result's facts.
func TestCheckIntentFactsInParts(t *testing.T) {
	bad := []string{
		`{"pred":"console_event","args":["s","error","m",1`, // malformed
		`{"pred":"nosuch","args":[1]}`,
		`{"pred":"flag","args":["not a boolean"]}`,
		`{"pred":"current_url","args":[null]}`,
		`{"pred":"console_event","args":["s","x","m",1],"category":"other"}`,
		`{"pred":"current_url","args":["u"],"named_args":{"url":"u"}}`,
	}
	intents := []IntentDecl{{Name: "diagnose", RequiredFacts: []string{"current_url", "flag", "anyp"}}}
	for _, n := range []int{0, 1, factsPerWorker - 1, 2 * factsPerWorker, 3*factsPerWorker + 7} {
		raws := make([]json.RawMessage, n)
		for i := range raws {
			switch {
			case i%97 == 0 || i == factsPerWorker || i == n-1:
				raws[i] = json.RawMessage(bad[i%len(bad)])
			case i == n/2:
				raws[i] = json.RawMessage(`{"pred":"flag","args":[true]}`)
			case i%3 == 0:
				raws[i] = json.RawMessage(fmt.Sprintf(`{"pred":"nonames","args":["s%d",%d]}`, i%11, i))
			default:
				raws[i] = json.RawMessage(fmt.Sprintf(`{"pred":"console_event","args":["s1","info","m%d",%d],"t":{"at":%d}}`, i, i, 1771510200000+i))
			}
		}
		want := newFactsCheck(raws, "diagnose", testProfile(), intents, 1).Run(nil)
		for _, procs := range []int{1, 2, 3, 8} {
			check := newFactsCheck(raws, "diagnose", testProfile(), intents, procs)
			// What each part hands to then, copied: in part order, the
			// result's facts.
			seen := make([][]Fact, check.Parts())
			calls := make([]int, check.Parts())
			got := check.Run(func(k int, valid []Fact) {
				calls[k]++
				seen[k] = append([]Fact(nil), valid...)
			})
			if !reflect.DeepEqual(got, want) {
				t.Errorf("n=%d procs=%d: %d facts, %d violations, missing %v; in one part %d, %d, %v",
					n, procs, len(got.Facts), len(got.Violations), got.Missing, len(want.Facts), len(want.Violations), want.Missing)
			}
			var parts []Fact
			for k, c := range calls {
				if c != 1 {
					t.Errorf("n=%d procs=%d: then called %d times for part %d", n, procs, c, k)
				}
				parts = append(parts, seen[k]...)
			}
			if len(parts) != len(got.Facts) || len(parts) > 0 && !reflect.DeepEqual(parts, got.Facts) {
				t.Errorf("n=%d procs=%d: the parts handed %d facts, the result has %d", n, procs, len(parts), len(got.Facts))
			}
			if procs > 1 && n >= 2*factsPerWorker && check.Parts() < 2 {
				t.Errorf("n=%d procs=%d: %d parts", n, procs, check.Parts())
			}
		}
		if n > 2 && (len(want.Violations) == 0 || len(want.Facts) == 0) {
			t.Errorf("n=%d: the list should have valid and invalid facts: %d, %d", n, len(want.Facts), len(want.Violations))
		}
	}
}

// TestShortInteger: shortInteger says yes only where ParseInt does.
func TestShortInteger(t *testing.T) {
	for _, s := range []string{"", "-", "0", "-0", "7", "007", "123456789012345678", "-123456789012345678",
		"1234567890123456789", "9223372036854775807", "9223372036854775808", "+1", "1.5", "1e3", "1-", "--1", " 1", "1a"} {
		_, err := strconv.ParseInt(s, 10, 64)
		if shortInteger(s) && err != nil {
			t.Errorf("shortInteger(%q) but ParseInt says %v", s, err)
		}
		if want := err == nil && len(strings.TrimPrefix(s, "-")) <= 18 && !strings.HasPrefix(s, "+"); shortInteger(s) != want {
			t.Errorf("shortInteger(%q) = %v, want %v", s, shortInteger(s), want)
		}
	}
}
