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

// WaitGone waits up to 10 seconds for the processes pids to exit and
// reports each that does not.
func WaitGone(t testing.TB, pids []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for {
			if _, err := os.Stat("/proc/" + p); err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("process %s still runs after Close", p)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
