package protocol

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkSkipValue skips a list of 10,000 facts of the benchmarks'
// shapes (about 740 KB), as decoding an envelope and its payload does.
func BenchmarkSkipValue(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 10000 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"pred":"console_event","args":["s1","info","message %d",%d]}`, i, 1771510200000+i*10)
	}
	sb.WriteString("]")
	raw := []byte(sb.String())
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if n, ok := skipValue(raw, 0); !ok || n != len(raw) {
			b.Fatal(n, ok)
		}
	}
}
