package protocol

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkCheckIntentFactsParts checks 10,000 facts of the benchmarks'
// shapes on one goroutine and on two (compare the two in one run: the
// parts' wall time against one goroutine's).
func BenchmarkCheckIntentFactsParts(b *testing.B) {
	raws := make([]json.RawMessage, 10000)
	for i := range raws {
		switch i % 5 {
		case 0, 1:
			raws[i] = json.RawMessage(fmt.Sprintf(`{"pred":"nonames","args":["r%d-%d",%d]}`, i/5, i%5, 1771510200000+i*10))
		default:
			raws[i] = json.RawMessage(fmt.Sprintf(`{"pred":"console_event","args":["s1","info","message %d",%d]}`, i, 1771510200000+i*10))
		}
	}
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprint("procs=", procs), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := newFactsCheck(raws, "x", testProfile(), nil, procs).Run(nil); len(r.Violations) > 0 {
					b.Fatal(r.Violations[0])
				}
			}
		})
	}
}

// BenchmarkDecodeFacts decodes 10,000 facts of the benchmarks' shapes on
// one goroutine, without validation.
func BenchmarkDecodeFacts(b *testing.B) {
	raws := make([]json.RawMessage, 10000)
	for i := range raws {
		switch i % 5 {
		case 0, 1:
			raws[i] = json.RawMessage(fmt.Sprintf(`{"pred":"net_request","args":["s1","r%d-%d","GET","https://api/x",%d]}`, i/5, i%5, 1771510200000+i*10))
		case 2, 3:
			raws[i] = json.RawMessage(fmt.Sprintf(`{"pred":"net_response","args":["s1","r%d-%d",200,%d]}`, i/5, i%5-2, 1771510200000+i*10))
		default:
			raws[i] = json.RawMessage(fmt.Sprintf(`{"pred":"console_event","args":["s1","info","message %d",%d]}`, i, 1771510200000+i*10))
		}
	}
	facts := make([]Fact, len(raws))
	b.ReportAllocs()
	for b.Loop() {
		if vs := decodeFactsInto(raws, facts, 0); len(vs) > 0 {
			b.Fatal(vs)
		}
	}
}
