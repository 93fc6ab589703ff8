package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ChildPIDs lists the processes the test binary started and that still
// run (for example a browser), by process id.
func ChildPIDs(t testing.TB) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid())).Output()
	return strings.Fields(string(out))
}

// WaitGone waits up to [Budget](10s) for the processes pids to exit and
// reports each that does not.
func WaitGone(t testing.TB, pids []string) {
	t.Helper()
	for _, p := range pids {
		if !Poll(10*time.Second, func() bool { _, err := os.Stat("/proc/" + p); return err != nil }) {
			t.Errorf("process %s still runs after Close", p)
		}
	}
}
