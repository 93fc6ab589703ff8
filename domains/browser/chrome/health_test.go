package chrome

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/testenv"
)

// TestFailedChecks: the health check restarts a browser that did not
// answer two checks in a row and used no CPU time in between (hung or
// stopped, or the CPU time is unknown), but waits for one that works
// (slow on a loaded machine: TestLoadManySessions found its browser
// restarted, every session gone, after 32 sessions ended at once beside
// two CPU hogs), up to the limit.
func TestFailedChecks(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)
	const limit = 20 * time.Second
	type check struct {
		at      time.Duration // since t0
		cpu     int64
		restart bool
		worked  bool // the reason says it worked
	}
	for _, tc := range []struct {
		name   string
		checks []check
	}{
		{"stopped", []check{{0, 100, false, false}, {5 * time.Second, 100, true, false}}},
		{"unknown CPU time", []check{{0, -1, false, false}, {5 * time.Second, -1, true, false}}},
		{"CPU time gone", []check{{0, 100, false, false}, {5 * time.Second, -1, true, false}}},
		{"working, then stopped", []check{{0, 100, false, false}, {5 * time.Second, 140, false, false},
			{10 * time.Second, 180, false, false}, {15 * time.Second, 180, true, false}}},
		{"working past the limit", []check{{0, 100, false, false}, {5 * time.Second, 140, false, false},
			{15 * time.Second, 180, false, false}, {20 * time.Second, 200, true, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c failedChecks
			for i, k := range tc.checks {
				restart, why := c.failed(t0.Add(k.at), k.cpu, limit)
				if restart != k.restart || strings.Contains(why, "worked") != k.worked {
					t.Errorf("check %d (at %v, cpu %d): restart %v %q, want %v (worked %v)", i+1, k.at, k.cpu, restart, why, k.restart, k.worked)
				}
			}
		})
	}
	// An answered check starts the count again (the monitor resets it).
	var c failedChecks
	c.failed(t0, 100, limit)
	c = failedChecks{}
	if restart, _ := c.failed(t0.Add(5*time.Second), 100, limit); restart {
		t.Error("a failed check after an answered one restarts the browser")
	}
}

// TestCPUTime: the CPU time of this process grows while it works, and is
// unknown for a process that does not exist.
func TestCPUTime(t *testing.T) {
	t.Parallel()
	if cpuTime(0) != -1 {
		t.Errorf("cpuTime(0) = %d", cpuTime(0))
	}
	self := os.Getpid()
	start := cpuTime(self)
	if runtime.GOOS != "linux" {
		if start != -1 {
			t.Errorf("cpuTime = %d off Linux", start)
		}
		return
	}
	if start < 0 {
		t.Fatalf("cpuTime(self) = %d", start)
	}
	x := 0
	if !testenv.Poll(10*time.Second, func() bool {
		for i := range 1 << 22 {
			x += i
		}
		return cpuTime(self) > start
	}) {
		t.Errorf("cpuTime did not grow from %d while the test worked (%d)", start, x)
	}
}
