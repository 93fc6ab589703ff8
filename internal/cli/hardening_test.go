package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStdioReaderClosesStdout: when the reader of stdout goes away, the
// stdio server is not killed by SIGPIPE: it logs that its answers cannot
// be delivered and exits with status 1, even while stdin stays open
// (issue 9 item 9).
func TestStdioReaderClosesStdout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "manglecp")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/manglecp").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR.Close() // nobody will read stdout
	cmd := exec.Command(bin, "serve", "--stdio")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close() // stays open while the process runs
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = outW, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	_, _ = stdin.Write([]byte(`{"type":"intent_request","id":"a","manglecp":"2026-02-draft","payload":{"intent":{"name":"observe"},"facts":[]}}` + "\n"))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the server did not exit after its stdout closed\nstderr:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("exit: %v (want status 1)\nstderr:\n%s", err, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("killed by %v\nstderr:\n%s", ws.Signal(), stderr.String())
	}
	if ee.ExitCode() != 1 {
		t.Errorf("exit status %d, want 1", ee.ExitCode())
	}
	if !strings.Contains(stderr.String(), "broken pipe") {
		t.Errorf("the failure is not logged:\n%s", stderr.String())
	}
}
