//go:build !linux

package chrome

import "log/slog"

// memWatch is Linux only: elsewhere V8's heap limit (--max-old-space-size)
// is the only per-page memory bound.
type memWatch struct{}

func (w *memWatch) look(pid int, limit int64, log *slog.Logger) {}

// cpuTime is unknown (-1) elsewhere: a browser that does not answer two
// health checks is restarted whether it works or not.
func cpuTime(pid int) int64 { return -1 }
