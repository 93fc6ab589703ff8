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

func TestWorkers(t *testing.T) {
	if w := Workers(10, 100); w != 1 {
		t.Errorf("Workers(10, 100) = %d", w)
	}
	if w := Workers(1<<20, 1); w < 1 {
		t.Errorf("Workers = %d", w)
	}
}

func ExampleRun() {
	squares := make([]int, 5)
	Run(len(squares), Workers(len(squares), 1), func(i int) { squares[i] = i * i })
	fmt.Println(squares)
	// Output: [0 1 4 9 16]
}
