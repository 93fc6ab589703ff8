package testenv

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Logger is a logger whose records go to t's log (t.Log), at level Debug
// and up, for a component under test whose own log says why it failed (a
// browser that was restarted, a child process that ended). Records made
// after the test ended are dropped instead of panicking.
func Logger(t testing.TB) *slog.Logger {
	t.Helper()
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}
