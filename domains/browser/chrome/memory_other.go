//go:build !linux

package chrome

import "log/slog"

// limitRenderers is Linux only: elsewhere V8's heap limit
// (--max-old-space-size) is the only per-page memory bound.
func limitRenderers(pid int, limit int64, log *slog.Logger) {}
