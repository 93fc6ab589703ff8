//go:build !unix

package testenv

import "time"

// ProcessCPU is the CPU time the process used so far; 0 on this system.
func ProcessCPU() time.Duration { return 0 }
