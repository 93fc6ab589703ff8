package parallel

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// TestRun: every part runs exactly once, whatever the number of workers
// and parts.
func TestRun(t *testing.T) {
	for _, tc := range []struct{ parts, workers int }{{0, 4}, {1, 4}, {5, 1}, {5, 2}, {64, 3}, {3, 8}} {
		t.Run(fmt.Sprint(tc.parts, "/", tc.workers), func(t *testing.T) {
			runs := make([]atomic.Int32, tc.parts)
			Run(tc.parts, tc.workers, func(i int) { runs[i].Add(1) })
			for i := range runs {
				if n := runs[i].Load(); n != 1 {
					t.Errorf("part %d ran %d times", i, n)
				}
			}
		})
	}
}

// TestRunPanics: a panic in a part is raised on the caller after the
// other workers stop, and no part runs twice.
func TestRunPanics(t *testing.T) {
	var ran atomic.Int32
	defer func() {
		if r := recover(); r != "part 7" {
			t.Errorf("recovered %v, want the part's panic", r)
		}
		if n := ran.Load(); n > 32 {
			t.Errorf("%d parts ran", n)
		}
	}()
	Run(32, 2, func(i int) {
		ran.Add(1)
		if i == 7 {
			panic("part 7")
		}
	})
	t.Error("Run returned")
}

// TestPlan: one goroutine gets one part; more get partsPerWorker parts
// each; never more goroutines than processors or than perWorker allows.
func TestPlan(t *testing.T) {
	for _, tc := range []struct{ n, procs, per, partsPer, parts, workers int }{
		{0, 4, 100, 4, 1, 1},
		{99, 4, 100, 4, 1, 1},
		{200, 4, 100, 4, 8, 2},
		{10000, 2, 2048, 4, 8, 2},
		{10000, 1, 2048, 4, 1, 1},
		{1 << 20, 3, 1, 2, 6, 3},
	} {
		parts, workers := Plan(tc.n, tc.procs, tc.per, tc.partsPer)
		if parts != tc.parts || workers != tc.workers {
			t.Errorf("Plan(%d, %d, %d, %d) = %d, %d; want %d, %d", tc.n, tc.procs, tc.per, tc.partsPer, parts, workers, tc.parts, tc.workers)
		}
	}
}

func ExampleRun() {
	squares := make([]int, 10)
	parts, workers := Plan(len(squares), 2, 5, 2) // 2 goroutines, 4 parts
	Run(parts, workers, func(p int) {
		for i := len(squares) * p / parts; i < len(squares)*(p+1)/parts; i++ {
			squares[i] = i * i
		}
	})
	fmt.Println(parts, workers, squares)
	// Output: 4 2 [0 1 4 9 16 25 36 49 64 81]
}
