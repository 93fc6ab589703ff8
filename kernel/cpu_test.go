package kernel

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user + system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerOp reports the process CPU time per iteration as cpu-ns/op. On a
// shared machine wall time per operation mostly measures the other
// tenants; CPU time (the collector's included) is what one request costs.
// Call it before the loop; call the returned function after it.
func cpuPerOp(b *testing.B) func() {
	start := processCPU()
	return func() {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}
