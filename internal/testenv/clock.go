package testenv

import (
	"crypto/sha256"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Time in tests: where time itself is the subject (an idle timeout, a
// backoff, a rate), a test runs in a testing/synctest bubble or on an
// injected clock and never sleeps. What is left is waiting for something
// real (a browser, a child process, a server goroutine) that takes as long
// as the machine makes it take: those waits are budgets, not deadlines
// under test, and they stretch with the machine's measured speed so that
// a test that passes on an idle laptop also passes with both cores busy.

// maxSlowdown bounds [Slowdown]: a budget grows at most this many times,
// so a test that really hangs still fails well inside go test's -timeout.
const maxSlowdown = 10

// referenceWork is how long [work] takes on an idle, unremarkable machine
// (one core of a 2-core x86-64 VM, 2026): the speed a budget written in a
// test assumes.
const referenceWork = 8 * time.Millisecond

var slowdown = sync.OnceValue(measureSlowdown)

// Slowdown is how many times slower than the reference machine this one
// runs the test binary now, at least 1 and at most 10: the larger of a
// short CPU-bound measurement taken once per test binary (the median of
// nine runs of a fixed workload against its time on the reference
// machine) and the current load average per CPU. $MANGLECP_TEST_SLOWDOWN,
// a number, replaces the measurement (1 keeps every budget as written).
func Slowdown() float64 {
	if s, err := strconv.ParseFloat(os.Getenv("MANGLECP_TEST_SLOWDOWN"), 64); err == nil && s > 0 {
		return min(max(s, 1), maxSlowdown)
	}
	return min(max(slowdown(), loadPerCPU(), 1), maxSlowdown)
}

// Budget is d stretched by [Slowdown]: the time a test allows for work
// that a real program does (a page load, a process start), where d is
// what it takes on an idle machine with room to spare. Use it for every
// wait whose length is not what the test checks.
func Budget(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Slowdown())
}

// Eventually polls cond until it holds and fails t if it does not within
// [Budget](within), naming what it waited for. Polling starts at 5ms and
// backs off to 100ms. It is for conditions a real process or goroutine
// brings about; where the test controls time, use testing/synctest.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("%s: not within %v (budget %v on this machine)", what, within, Budget(within).Round(time.Millisecond))
	}
}

// Poll polls cond as [Eventually] does and reports whether it held
// within [Budget](within), for a test that goes on after a failed wait.
func Poll(within time.Duration, cond func() bool) bool {
	w := NewWait(within)
	for {
		if cond() {
			return true
		}
		if !w.Next() {
			return cond()
		}
	}
}

// Wait paces a polling loop whose look is more than a condition (it
// keeps what it read, or fails with its own message):
//
//	w := testenv.NewWait(10 * time.Second)
//	for {
//		if resp, err = get(); err == nil {
//			break
//		}
//		if !w.Next() {
//			t.Fatalf("never answered: %v", err)
//		}
//	}
type Wait struct {
	deadline time.Time
	pause    time.Duration
}

// NewWait starts a wait of [Budget](within).
func NewWait(within time.Duration) *Wait {
	return &Wait{deadline: time.Now().Add(Budget(within)), pause: 5 * time.Millisecond}
}

// Next reports whether the budget leaves time for another look and, if
// so, pauses before it: 5ms at first, doubling up to 100ms.
func (w *Wait) Next() bool {
	left := time.Until(w.deadline)
	if left <= 0 {
		return false
	}
	time.Sleep(min(w.pause, left))
	w.pause = min(w.pause*2, 100*time.Millisecond)
	return true
}

// measureSlowdown times a fixed CPU-bound workload nine times and
// compares the median with [referenceWork].
func measureSlowdown() float64 {
	var took []time.Duration
	for range 9 {
		start := time.Now()
		work()
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return float64(took[len(took)/2]) / float64(referenceWork)
}

var workInput = make([]byte, 1<<20)

// work hashes 4 MiB.
func work() {
	for range 4 {
		sha256.Sum256(workInput)
	}
}

// loadPerCPU is the one-minute load average over the number of CPUs (0
// where the system does not say).
func loadPerCPU() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return l / float64(runtime.NumCPU())
}
