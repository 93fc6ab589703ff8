//go:build unix

package testenv

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and system) the process used so far:
// steadier than wall time on a shared machine, for benchmarks' own
// metrics. It is 0 where the system does not say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
