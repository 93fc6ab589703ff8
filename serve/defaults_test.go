package serve_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/serve"
)

// TestNilOptionsLogWhereItListens: with nil options the server logs on
// stderr at info, starting with where it listens; before, the default
// logger discarded everything. (It swaps os.Stderr, so it is not
// parallel.)
func TestNilOptionsLogWhereItListens(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = stderr }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.Serve(ctx, ln, browser.Domain(browser.Config{ReportDir: t.TempDir()}), nil) }()
	_ = r.SetReadDeadline(time.Now().Add(10 * time.Second)) // a missing line fails rather than hangs
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for !strings.Contains(got.String(), "serving MangleCP") {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	os.Stderr = stderr
	w.Close()
	_, _ = io.Copy(&got, r)
	if !strings.Contains(got.String(), "level=INFO msg=\"serving MangleCP\" addr="+ln.Addr().String()) {
		t.Errorf("stderr does not say where it listens:\n%s", got.String())
	}
	if !strings.Contains(got.String(), "confirmation tokens are signed with the local key") {
		t.Errorf("stderr does not say which confirmation key signs:\n%s", got.String())
	}
}

// TestMain points the user config directory at a temporary one: servers
// with nil options create their confirmation key file there, never in the
// home directory of whoever runs the tests.
func TestMain(m *testing.M) { os.Exit(testenv.RunInConfigHome(m)) }
