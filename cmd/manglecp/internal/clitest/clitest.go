// Package clitest holds what the tests of the manglecp command's packages
// share: running a command line in an environment of its own, a free
// address, a browser-domain server to talk to, waiting for a server to be
// ready, and paths in the repository. Tests only.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// Env is the environment of a command in a test: none of the process's
// variables, a user config directory of its own (where the local
// confirmation key file goes). Tests that give a command variables pass
// their own cmdline.Env, so every test may run in parallel.
func Env(t testing.TB) cmdline.Env {
	return cmdline.MapEnv(map[string]string{"XDG_CONFIG_HOME": t.TempDir()})
}

// Commands are the commands a test runs, by name: the command line of the
// package under test (and of the packages its test needs).
type Commands map[string]cmdline.Command

// Main runs args as `manglecp args...` does for the commands of c.
func (c Commands) Main(ctx context.Context, env cmdline.Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || c[args[0]] == nil {
		panic("clitest: no command " + strings.Join(args[:min(len(args), 1)], ""))
	}
	return c[args[0]](ctx, env, args[1:], stdin, stdout, stderr)
}

// Run runs the command line args with stdin in an environment of its own
// (Env) and returns the exit code, stdout and stderr.
func (c Commands) Run(t testing.TB, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return c.RunEnv(t, Env(t), stdin, args...)
}

// RunEnv is Run in the environment env.
func (c Commands) RunEnv(t testing.TB, env cmdline.Env, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := c.Main(context.Background(), env, args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// FreeAddr returns a loopback HOST:PORT that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// FreePort is the port of FreeAddr.
func FreePort(t testing.TB) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(FreeAddr(t))
	n, _ := strconv.Atoi(p)
	return n
}

// Server serves the browser domain over HTTP for a test, with opts (nil:
// the defaults).
func Server(t testing.TB, opts *manglecp.Options) *httptest.Server {
	t.Helper()
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	return hs
}

// MacroIDFor runs `manglecp eval` (c's "eval") on url's diagnose_error
// intent with a failed request and returns the macro_id of the named tool.
func MacroIDFor(t testing.TB, c Commands, url, name string) string {
	t.Helper()
	facts := filepath.Join(t.TempDir(), "facts.json")
	_ = os.WriteFile(facts, []byte(`[{"pred":"current_url","args":["https://x"]},{"pred":"console_event","args":["s1","error","boom",5]},{"pred":"net_response","args":["s1","r1",500,1]}]`), 0o644)
	code, out, errOut := c.Run(t, "", "eval", url, "--intent", "diagnose_error", "--facts", facts, "--json", "--disclosure", "full")
	if code != cmdline.ExitOK {
		t.Fatalf("eval: %d %s", code, errOut)
	}
	var resp protocol.IntentResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.MacroTools {
		if m.Name == name {
			return m.MacroID
		}
	}
	t.Fatalf("no %s in %s", name, out)
	return ""
}

// WaitReady waits until url answers 200 (a server's /readyz), failing t
// with the server's stderr when it does not in time.
func WaitReady(t testing.TB, url string, stderr *testenv.Buffer) {
	t.Helper()
	for wait := testenv.NewWait(15 * time.Second); ; {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if !wait.Next() {
			t.Fatalf("%s never answered 200: %v\n%s", url, err, stderr.String())
		}
	}
}

// WriteFile writes body into dir/name and returns its path.
func WriteFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Repo is the path of elem in the repository, from the directory of a
// package of the command (cmd/manglecp/internal/NAME), where its tests run.
func Repo(elem ...string) string {
	return filepath.Join(append([]string{"..", "..", "..", ".."}, elem...)...)
}

// CopyFS writes the files of fsys (rules, such as browser.Rules()) into a
// new directory, plus the extra files by name, and returns its path.
func CopyFS(t testing.TB, fsys fs.FS, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, fsys); err != nil {
		t.Fatal(err)
	}
	for name, body := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Started is a command running in the background (Commands.Start).
type Started struct {
	// Ctx is the command's context: it ends at Stop.
	Ctx context.Context
	// Stderr is what the command wrote on stderr so far.
	Stderr *testenv.Buffer

	cancel context.CancelFunc
	done   chan int
	code   int
	ended  bool
}

// Start runs args in the background, in the environment env with stdin
// (nil: none), until Stop or the end of the test.
func (c Commands) Start(t testing.TB, env cmdline.Env, stdin io.Reader, args ...string) *Started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Started{Ctx: ctx, Stderr: &testenv.Buffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() { s.done <- c.Main(ctx, env, args, stdin, io.Discard, s.Stderr) }()
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Stop ends the command's context, as SIGINT or SIGTERM do, and returns
// its exit code; a command that does not exit within 20 s (on this
// machine's clock: testenv.Budget) fails t.
func (s *Started) Stop(t testing.TB) int {
	t.Helper()
	if s.ended {
		return s.code
	}
	s.cancel()
	select {
	case s.code = <-s.done:
		s.ended = true
	case <-time.After(testenv.Budget(20 * time.Second)):
		t.Fatalf("the command did not exit after its context ended\n%s", s.Stderr.String())
	}
	return s.code
}
