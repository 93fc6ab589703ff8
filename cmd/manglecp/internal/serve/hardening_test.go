package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/manglecp/manglecp/cmd/internal/attack"
)

// hardenedBinary builds cmd/manglecp once for the tests of this package
// (builds, closed by TestMain), or returns $MANGLECP_ATTACK_BIN (to measure
// another build, e.g. an older one, against the same bounds).
func hardenedBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("MANGLECP_ATTACK_BIN"); bin != "" {
		return bin
	}
	return builds.Manglecp(t)
}

// RSSBoundKB is the peak resident memory the server may reach under the
// hostile-client attacks of TestHostileClientsRSSBound (docs/RELIABILITY.md
// states it). Before the fixes of issue 9 the HTTP attack alone reached
// about 640 MB and the WebSocket one 2 GB.
const RSSBoundKB = 128 << 10

// TestHostileClientsRSSBound starts the real server with --auth-token and
// runs, at once and for 5 s, the attacks of issue 9 item 1: 20 HTTP
// connections each sending requests with a 4 MB version string without
// credentials, 4 WebSocket sessions that never read sending such frames,
// and 4 authenticated sessions that never read sending small requests. The
// server's peak RSS (VmHWM) must stay under RSSBoundKB and the server must
// still answer afterwards.
func TestHostileClientsRSSBound(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads the peak RSS from /proc (Linux)")
	}
	bin := hardenedBinary(t)
	const token = "attack-token-0123456789"
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--auth-token", token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := ""
	addrRE := regexp.MustCompile(`addr=(127\.0\.0\.1:[0-9]+)`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
			base = "http://" + m[1]
			break
		}
	}
	if base == "" {
		t.Fatal("the server did not log its address")
	}
	go func() { // keep draining the log
		for sc.Scan() {
		}
	}()
	ws := "ws" + strings.TrimPrefix(base, "http") + "/manglecp/ws"
	huge := attack.HugeVersionRequest(4 << 20)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var flood, noRead, noReadAuth attack.Counts
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); attack.HTTPFlood(ctx, base, 20, huge, "", &flood) }()
	go func() { defer wg.Done(); attack.WSNoRead(ctx, ws, 4, "", func(int) []byte { return huge }, &noRead) }()
	go func() {
		defer wg.Done()
		attack.WSNoRead(ctx, ws, 4, token, func(i int) []byte { return attack.ValidRequest("n" + strconv.Itoa(i)) }, &noReadAuth)
	}()
	wg.Wait()
	peak := procStatusKB(t, cmd.Process.Pid, "VmHWM")
	t.Logf("peak RSS %d kB (bound %d kB)\nHTTP: %s\nWebSocket: %s\nWebSocket authenticated: %s",
		peak, RSSBoundKB, flood.String(), noRead.String(), noReadAuth.String())
	if flood.Sent.Load() < 20 || noRead.Sent.Load() < 4 || noReadAuth.Sent.Load() < 100 {
		t.Fatal("the attacks did not run")
	}
	if peak > RSSBoundKB {
		t.Errorf("peak RSS %d kB exceeds the bound of %d kB", peak, RSSBoundKB)
	}
	// The server still serves.
	var after attack.Counts
	actx, acancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer acancel()
	attack.Steady(actx, base, ws, token, 1, 0, &after)
	if codes := after.Codes(); codes["intent_response"] == 0 {
		t.Errorf("after the attack: %s", after.String())
	}
}

func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestStdioReaderClosesStdout: when the reader of stdout goes away, the
// stdio server is not killed by SIGPIPE: it logs that its answers cannot
// be delivered and exits with status 1, even while stdin stays open
// (issue 9 item 9).
func TestStdioReaderClosesStdout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := hardenedBinary(t)
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
