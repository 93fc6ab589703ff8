package upstream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingCommandSaysWhy: an upstream whose binary does not exist
// (issue 39 item 6) fails with the reason in its message ("no such file or
// directory"), its whole path and cause reach the operator's log
// (Cause), and a restart that keeps failing the same way is one WARN line,
// then DEBUG, not a WARN every 0.5-30 s.
func TestMissingCommandSaysWhy(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tools of mine", "not-installed-mcp-server")
	var logs bytes.Buffer
	u, err := New(Config{Name: "gone", Command: []string{bin, "--stdio"}, Lazy: true,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	err = u.Start(context.Background())
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Message, "no such file or directory") {
		t.Fatalf("Start: %v; want a message saying no such file or directory", err)
	}
	if strings.Contains(e.Message, filepath.Dir(bin)) {
		t.Errorf("the client-safe message shows the operator's path: %s", e.Message)
	}
	if c := Cause(err); !strings.Contains(c, bin) || !strings.Contains(c, "no such file or directory") {
		t.Errorf("Cause = %q; want the whole path and why", c)
	}
	u.logRestartFailure(err)
	u.logRestartFailure(err)
	out := logs.String()
	if strings.Count(out, "level=WARN") != 1 || strings.Count(out, "level=DEBUG") != 1 || !strings.Contains(out, "tools of mine/not-installed-mcp-server") {
		t.Errorf("two identical restart failures logged:\n%s\nwant one WARN with the whole path, then DEBUG", out)
	}
}
