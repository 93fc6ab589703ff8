package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/testenv"
)

// The test binary is also a fake language server: run with
// LSP_FAKE_SERVER=MODE it serves LSP on stdin/stdout and exits.
func TestMain(m *testing.M) {
	if mode := os.Getenv("LSP_FAKE_SERVER"); mode != "" {
		fakeServer(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeServer answers initialize, shutdown and workspace/symbol; it asks
// the client for configuration and publishes diagnostics when told.
// Modes: "ok"; "crash" (exits once initialized); "child" (starts a child
// process in its group first); "hang" (never answers workspace/symbol);
// "slow" (answers initialize only once released, see slowSpec).
func fakeServer(mode string) {
	if mode == "child" {
		cmd := exec.Command("sleep", "300")
		_ = cmd.Start()
		fmt.Fprintf(os.Stderr, "child %d\n", cmd.Process.Pid)
	}
	br := bufio.NewReader(os.Stdin)
	var wmu sync.Mutex
	send := func(v any) {
		b, _ := json.Marshal(v)
		wmu.Lock()
		fmt.Fprintf(os.Stdout, "Content-Length: %d\r\n\r\n%s", len(b), b)
		wmu.Unlock()
	}
	for {
		m, err := readMessage(br)
		if err != nil {
			return
		}
		id := m.ID
		switch m.Method {
		case "initialize":
			if mode == "slow" {
				// A cold server: initialize waits until the test opens
				// the FIFO LSP_FAKE_RELEASE for writing.
				if f, err := os.Open(os.Getenv("LSP_FAKE_RELEASE")); err == nil {
					f.Close()
				}
			}
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"capabilities": map[string]any{"renameProvider": true}}})
		case "initialized":
			if mode == "crash" {
				os.Exit(3)
			}
			send(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "workspace/configuration", "params": map[string]any{"items": []any{map[string]any{"section": "fake"}}}})
			send(map[string]any{"jsonrpc": "2.0", "method": "window/logMessage", "params": map[string]any{"type": 3, "message": "Found 3 source files"}})
		case "workspace/symbol":
			if mode == "hang" {
				continue
			}
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": []any{map[string]any{"name": "F", "kind": 12,
				"location": map[string]any{"uri": "file:///x/a.go", "range": map[string]any{}}}}})
		case "publish":
			send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": map[string]any{"uri": "file:///x/a.go",
				"diagnostics": []any{map[string]any{"message": "boom", "severity": 1, "range": map[string]any{}}}}})
		case "shutdown":
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": nil})
		case "exit":
			return
		case "":
			// A response (to workspace/configuration): echo what the
			// client answered as a log message the test can check.
			send(map[string]any{"jsonrpc": "2.0", "method": "echo", "params": json.RawMessage(m.Result)})
		}
	}
}

func fakeSpec(t *testing.T, mode string) Spec {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Name: "fake", Command: []string{exe, "-test.run=^$"}, Env: []string{"LSP_FAKE_SERVER=" + mode},
		Settings: map[string]any{"fake": map[string]any{"on": true}}, ReadyMessage: "source files",
		StartTimeout: testenv.Budget(30 * time.Second), RequestTimeout: testenv.Budget(30 * time.Second)}
}

// TestServerRequests: a call is answered, the server's configuration
// request is answered from Spec.Settings, the ready message marks the
// server ready, published diagnostics are kept and waited for.
func TestServerRequests(t *testing.T) {
	s, err := Start(context.Background(), fakeSpec(t, "ok"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-s.Ready()
	var syms []SymbolInformation
	if err := s.Call(context.Background(), "workspace/symbol", map[string]any{"query": "F"}, &syms); err != nil || len(syms) != 1 || syms[0].Name != "F" {
		t.Fatalf("workspace/symbol: %v %v", syms, err)
	}
	if !s.HasCapability("renameProvider") || s.HasCapability("diagnosticProvider") {
		t.Errorf("capabilities %s", s.Capabilities())
	}
	mark := s.Mark()
	if err := s.Notify("publish", nil); err != nil {
		t.Fatal(err)
	}
	if !s.WaitDiagnostics(context.Background(), mark, []string{"file:///x/a.go"}) {
		t.Fatal("diagnostics not published")
	}
	if d := s.Diagnostics()["file:///x/a.go"]; len(d) != 1 || d[0].Message != "boom" {
		t.Errorf("diagnostics %v", d)
	}
}

// TestRequestTimeout: a request the server never answers ends at the
// spec's request timeout with a cancellation sent.
func TestRequestTimeout(t *testing.T) {
	spec := fakeSpec(t, "hang")
	spec.RequestTimeout = 50 * time.Millisecond
	s, err := Start(context.Background(), spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Call(context.Background(), "workspace/symbol", map[string]any{"query": "F"}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer within") {
		t.Fatalf("err = %v", err)
	}
}

// TestMemoryBound: a server over its memory bound is killed, and says
// why.
func TestMemoryBound(t *testing.T) {
	spec := fakeSpec(t, "ok")
	spec.MaxMemory = 1 // any process is over it
	spec.MemoryPoll = time.Millisecond
	s, err := Start(context.Background(), spec, t.TempDir())
	if err != nil {
		// Killed during initialize: the error says so.
		if !strings.Contains(err.Error(), "initialize") {
			t.Fatal(err)
		}
		return
	}
	defer s.Close()
	<-s.Done()
	if gone, why := s.Exited(); !gone || !strings.Contains(why, "memory") {
		t.Fatalf("exited %v: %q", gone, why)
	}
}

// TestCloseKillsGroup: Close ends the server and every process it
// started, and leaves no goroutine of the server behind.
func TestCloseKillsGroup(t *testing.T) {
	s, err := Start(context.Background(), fakeSpec(t, "child"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var child string
	testenv.Eventually(t, 10*time.Second, "the server's child's pid on its stderr", func() bool {
		if f := strings.Fields(s.proc.Tail()); len(f) == 2 {
			child = f[1]
		}
		return child != ""
	})
	if _, err := strconv.Atoi(child); err != nil {
		t.Fatal(child)
	}
	s.Close()
	testenv.WaitGone(t, []string{strconv.Itoa(s.proc.Pid()), child})
}

// TestPoolBackoff: a server that dies is started again only after its
// backoff (by the pool's clock), and a healthy answer resets the count.
func TestPoolBackoff(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	p := &Pool{Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}
	defer p.Close()
	dir := t.TempDir()
	spec := fakeSpec(t, "crash")
	s, err := p.Get(context.Background(), "k", spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	<-s.Done() // it exits once initialized
	_, err = p.Get(context.Background(), "k", spec, dir)
	var be *BackoffError
	if !errors.As(err, &be) || !be.Until.Equal(now.Add(BackoffBase)) {
		t.Fatalf("after a crash: %v", err)
	}
	if st, starts := p.State("k"); st != "failed" || starts != 1 {
		t.Errorf("state %s %d", st, starts)
	}
	mu.Lock()
	now = now.Add(BackoffBase)
	mu.Unlock()
	ok := fakeSpec(t, "ok")
	s2, err := p.Get(context.Background(), "k", ok, dir)
	if err != nil {
		t.Fatalf("after the backoff: %v", err)
	}
	if s2 == s {
		t.Fatal("the dead server was returned")
	}
	if st, starts := p.State("k"); st != "running" || starts != 2 {
		t.Errorf("state %s %d", st, starts)
	}
	if got := backoff(3); got != 4*BackoffBase {
		t.Errorf("backoff(3) = %s", got)
	}
	if got := backoff(30); got != BackoffMax {
		t.Errorf("backoff(30) = %s", got)
	}
}

// TestConnRefusesHugeMessage: a Content-Length over the bound ends the
// connection before anything is allocated, and pending calls fail.
func TestConnRefusesHugeMessage(t *testing.T) {
	sr, cw := io.Pipe() // client writes, "server" reads
	cr, sw := io.Pipe() // "server" writes, client reads
	c := NewConn(cr, cw, nil, nil)
	defer c.Close()
	go io.Copy(io.Discard, sr)
	go fmt.Fprintf(sw, "Content-Length: %d\r\n\r\n", maxMessageBytes+1)
	err := c.Call(context.Background(), "x", nil, nil)
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v", err)
	}
	sw.Close()
}

func TestURIs(t *testing.T) {
	u := FileURI("/tmp/a b/c#d.go")
	p, err := URIPath(u)
	if err != nil || p != "/tmp/a b/c#d.go" {
		t.Fatalf("%s -> %s %v", u, p, err)
	}
	for _, bad := range []string{"http://x/a", "file://host/a", "file:rel"} {
		if _, err := URIPath(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
