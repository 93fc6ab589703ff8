package serve

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
)

// Garbage collector defaults of `manglecp serve` (docs/BENCHMARKS.md,
// "Garbage collection"). The server's live heap is a few MiB, so with the
// runtime's GOGC=100 the heap goal sits at the 4 MiB minimum and a request
// allocating about 1 MiB triggers a collection every few requests: the
// collector took 17% of the CPU and, by pausing requests in turn, made the
// p99 latency 24 times the median. A higher GOGC makes collections rarer;
// the soft memory limit bounds what that costs: near the limit the
// collector runs as often as it must, whatever GOGC says.
const (
	defaultGCPercent   = 400
	defaultMemoryLimit = 1 << 30 // 1 GiB
)

// gcSettings are the --gc-percent and --memory-limit flags.
type gcSettings struct {
	percent int    // -1: the flag was not given
	limit   string // "": the flag was not given
}

// apply sets the collector: a flag wins, then the GOGC and GOMEMLIMIT
// environment variables (which the runtime has already applied), then the
// defaults above. It returns what is in effect, for the log.
func (g gcSettings) apply(env cmdline.Env, logger *slog.Logger) error {
	percent := g.percent
	if percent < 0 && env.Getenv("GOGC") == "" {
		percent = defaultGCPercent
	}
	if percent >= 0 {
		debug.SetGCPercent(percent)
	}
	var limit int64 = -1
	switch {
	case g.limit != "":
		n, err := parseBytes(g.limit)
		if err != nil {
			return fmt.Errorf("--memory-limit: %v", err)
		}
		limit = n
	case env.Getenv("GOMEMLIMIT") == "":
		limit = defaultMemoryLimit
	}
	if limit >= 0 {
		debug.SetMemoryLimit(limit)
	}
	cur := debug.SetGCPercent(-1)
	debug.SetGCPercent(cur)
	logger.Debug("garbage collector", "gc_percent", cur, "memory_limit_bytes", debug.SetMemoryLimit(-1))
	return nil
}

// parseBytes reads a size: a number of bytes with an optional unit KiB,
// MiB, GiB (or K, M, G, all powers of 1024).
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size such as 512MiB or 2GiB", s)
	}
	return n * mult, nil
}
