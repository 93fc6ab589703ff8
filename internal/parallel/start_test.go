package parallel

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRunStart measures how late Run's second goroutine starts, which
// bounds what a parallel part of a few milliseconds can gain. Each
// iteration first works alone for 200 µs, as a request does before it
// checks its facts, then runs two parts on two goroutines: the one taken
// first waits, spinning, until the other is taken (at most 10 ms).
// late-µs is the median of those waits and late-p90-µs their 90th
// percentile; see docs/BENCHMARKS.md ("Where a request's time goes") for what they were on
// the development machine.
func BenchmarkRunStart(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs GOMAXPROCS of 2 or more")
	}
	var lates []time.Duration
	for b.Loop() {
		spin(200 * time.Microsecond)
		start := time.Now()
		var second atomic.Int64 // when the second part was taken, +1
		var taken atomic.Int32
		Run(2, 2, func(int) {
			if taken.Add(1) == 2 {
				second.Store(int64(time.Since(start)) + 1)
				return
			}
			for second.Load() == 0 && time.Since(start) < 10*time.Millisecond {
			}
		})
		lates = append(lates, time.Duration(second.Load()-1))
	}
	slices.Sort(lates)
	b.ReportMetric(float64(lates[len(lates)/2].Microseconds()), "late-µs")
	b.ReportMetric(float64(lates[len(lates)*9/10].Microseconds()), "late-p90-µs")
}

// spin works for d without yielding the processor.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}
