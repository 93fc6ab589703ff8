//go:build unix

package code_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/protocol"
)

// The test binary is also a fake language server: run as
// "TESTBINARY fake-lsp MODE [FIFO]" it serves LSP on stdin and stdout.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "fake-lsp" {
		fakeLSP(os.Args[2], os.Args[3:])
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeLSP is a language server that knows one symbol, calc_total in
// shop/calc.py of its root. Modes: "cold" answers initialize only once the
// FIFO args[0] is opened for writing (a server slower to start than any
// request); "busy" never answers a workspace/symbol request for the name
// hang_me (a server still analysing).
func fakeLSP(mode string, args []string) {
	r := bufio.NewReader(os.Stdin)
	var mu sync.Mutex
	send := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		fmt.Fprintf(os.Stdout, "Content-Length: %d\r\n\r\n%s", len(b), b)
		mu.Unlock()
	}
	root := ""
	for {
		h, err := textproto.NewReader(r).ReadMIMEHeader()
		if err != nil {
			return
		}
		n, _ := strconv.Atoi(h.Get("Content-Length"))
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RootURI string `json:"rootUri"`
				Query   string `json:"query"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		reply := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result}) }
		switch m.Method {
		case "initialize":
			if mode == "cold" && len(args) > 0 {
				if f, err := os.Open(args[0]); err == nil { // blocks until released
					f.Close()
				}
			}
			root = m.Params.RootURI
			reply(map[string]any{"capabilities": map[string]any{"workspaceSymbolProvider": true, "referencesProvider": true}})
		case "workspace/symbol":
			if mode == "busy" && m.Params.Query == "hang_me" {
				continue
			}
			var out []any
			if strings.Contains("calc_total", m.Params.Query) {
				out = append(out, map[string]any{"name": "calc_total", "kind": 12, "location": map[string]any{
					"uri": root + "/shop/calc.py", "range": map[string]any{"start": map[string]any{"line": 0, "character": 4}, "end": map[string]any{"line": 0, "character": 14}}}})
			}
			reply(out)
		case "textDocument/references":
			reply([]any{map[string]any{"uri": root + "/shop/calc.py", "range": map[string]any{"start": map[string]any{"line": 0, "character": 4}, "end": map[string]any{"line": 0, "character": 14}}}})
		case "shutdown":
			reply(nil)
		case "exit":
			return
		default:
			if m.Method != "" && len(m.ID) > 0 {
				reply(nil)
			}
		}
	}
}

// patienceClock is a clock for the requests' patience that the test
// drives: every wait is queued, and ends only when the test fires it.
type patienceClock struct{ waits chan chan time.Time }

func newPatienceClock(t *testing.T, c *code.Code) *patienceClock {
	pc := &patienceClock{waits: make(chan chan time.Time, 256)}
	code.SetPatienceClock(c, func(time.Duration) <-chan time.Time {
		ch := make(chan time.Time, 1)
		pc.waits <- ch
		return ch
	})
	return pc
}

// fireNext ends the next wait that begins (or began and was not fired).
func (pc *patienceClock) fireNext() { (<-pc.waits) <- time.Time{} }

// drop forgets the waits queued so far (never fired: they end with their
// requests).
func (pc *patienceClock) drop() {
	for len(pc.waits) > 0 {
		<-pc.waits
	}
}

func fakeServerFixture(t *testing.T, args ...string) (*fixture, *patienceClock) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	domaintest.WriteTree(t, root, map[string]string{"shop/calc.py": "def calc_total(items):\n    return sum(items)\n"})
	srv := code.Server{Name: "fake", Command: append([]string{exe, "fake-lsp"}, args...)}
	f := newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangPython: srv}})
	return f, newPatienceClock(t, f.code)
}

type callResult struct {
	resp *protocol.InvokeResponse
	err  *client.Error
}

// findSymbolAsync invokes find_symbol in the background.
func (f *fixture) findSymbolAsync(name string) <-chan callResult {
	tools := f.Eval("symbols")
	m, ok := tools["find_symbol"]
	if !ok {
		f.t.Fatalf("symbols offers %s", domaintest.Names(tools))
	}
	ch := make(chan callResult, 1)
	go func() {
		resp, err := f.Invoke(m, map[string]any{"name": name}, false)
		ch <- callResult{resp, err}
	}()
	return ch
}

// checkRetryable checks that err is x-language_server_unavailable, as
// registered (recoverable), with retry_after_ms and the reason.
func (f *fixture) checkRetryable(err *client.Error, reason string) {
	f.t.Helper()
	if err == nil {
		f.t.Fatal("the call succeeded; want x-language_server_unavailable")
	}
	if err.Code() != code.CodeServerUnavailable || !err.Payload.Recoverable || err.Payload.RetryAfterMS == nil || *err.Payload.RetryAfterMS <= 0 {
		f.t.Fatalf("error %s (recoverable %v, retry_after_ms %v): %s", err.Code(), err.Payload.Recoverable, err.Payload.RetryAfterMS, err.Payload.Message)
	}
	if d := err.Payload.Details; d == nil || d.Data["reason"] != reason {
		f.t.Errorf("details %+v, want reason %s", d, reason)
	}
}

// TestColdServerIsRetryable: a language server slower to start than a
// request can wait (pyright on a loaded machine) gets the request a
// retryable x-language_server_unavailable with retry_after_ms, not
// execution_failed; the server goes on starting, and the next request
// gets its answer from that same server. No clock is waited on: the
// request's patience ends when the test says, the server starts when the
// test releases it.
func TestColdServerIsRetryable(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	f, clock := fakeServerFixture(t, "cold", fifo)
	first := f.findSymbolAsync("calc_total")
	clock.fireNext() // the wait for the start
	f.checkRetryable((<-first).err, "starting")
	// The server was not stopped with the request: releasing it completes
	// its start, and the next request (which no clock ends) uses it.
	release, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the server waits on it
	if err != nil {
		t.Fatal(err)
	}
	release.Close()
	clock.drop()
	second := <-f.findSymbolAsync("calc_total")
	if second.err != nil {
		t.Fatalf("after the start: %v (%+v)", second.err, second.err.Payload.Details)
	}
	if defs := strs(second.resp.Result["definitions"]); len(defs) != 1 || !strings.HasPrefix(defs[0], "shop/calc.py:1 function calc_total") {
		t.Errorf("definitions %q", defs)
	}
	if st, starts := code.ServerState(f.code, code.LangPython); st != "running" || starts != 1 {
		t.Errorf("python server %s, started %d times; want running, once", st, starts)
	}
}

// TestBusyServerIsRetryable: a request a running server does not answer
// within the request's patience (still analysing) is answered with a
// retryable x-language_server_unavailable (reason busy), not
// execution_failed, and the server keeps serving.
func TestBusyServerIsRetryable(t *testing.T) {
	f, clock := fakeServerFixture(t, "busy")
	if r := <-f.findSymbolAsync("calc_total"); r.err != nil {
		t.Fatalf("find_symbol: %v", r.err)
	}
	clock.drop()
	hung := f.findSymbolAsync("hang_me")
	clock.fireNext() // the wait for workspace/symbol
	f.checkRetryable((<-hung).err, "busy")
	clock.drop()
	if r := <-f.findSymbolAsync("calc_total"); r.err != nil {
		t.Fatalf("find_symbol after a busy answer: %v", r.err)
	}
}
