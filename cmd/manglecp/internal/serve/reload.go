package serve

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/manglecp/manglecp"
)

// watchRules reloads the rules on SIGHUP and, when dir is set, whenever a
// .mg file under it changes from the loaded state last (polled every
// interval: no platform dependency). It returns when ctx ends.
func watchRules(ctx context.Context, srv *manglecp.Server, dir string, rules fs.FS, last string, interval time.Duration, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	reload := func(why string) {
		logger.Info("reloading rules", "why", why)
		if dir != "" {
			rules = os.DirFS(dir)
		}
		_ = srv.Reload(rules) // on failure the server logs, stays on the old rules and says degraded
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload("SIGHUP")
			last = fingerprint(dir)
		case <-tick.C:
			if dir == "" {
				continue
			}
			if fp := fingerprint(dir); fp != last {
				last = fp
				reload("a rule file changed")
			}
		}
	}
}

// fingerprint summarizes the .mg files under dir (names, sizes, times).
func fingerprint(dir string) string {
	if dir == "" {
		return ""
	}
	h := sha256.New()
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".mg") {
			return nil
		}
		if info, err := d.Info(); err == nil {
			fmt.Fprintf(h, "%s|%d|%d\n", path, info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return fmt.Sprintf("%x", h.Sum(nil))
}
