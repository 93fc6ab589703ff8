package code_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

var confirmKey = []byte("code-domain-test-confirmation-k!")

// moduleRoot is the directory of the project's go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// findProgram finds a program scripts/deps/lsp.sh installs under .cache
// (or on PATH); a missing one skips t, or fails it under
// MANGLECP_TEST_REQUIRE=1.
func findProgram(t testing.TB, cached string, names ...string) string {
	t.Helper()
	if p := filepath.Join(moduleRoot(t), ".cache", cached); isExec(p) {
		return p
	}
	return testenv.LookPath(t, names...)
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func goplsServer(t testing.TB) code.Server {
	return code.Server{Name: "gopls", Command: []string{findProgram(t, "lsp/bin/gopls", "gopls")}}
}

func pyrightServer(t testing.TB) code.Server {
	testenv.LookPath(t, "node")
	return code.Server{Name: "pyright", Command: []string{findProgram(t, "npm-lsp/node_modules/.bin/pyright-langserver", "pyright-langserver"), "--stdio"}}
}

// copyFixture copies testdata/NAME into a new temporary directory and
// returns it.
func copyFixture(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	src := filepath.Join("testdata", name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// fixture is a served code domain: requests go through the HTTP binding
// and the client library.
type fixture struct {
	t      *testing.T
	root   string
	code   *code.Code
	srv    *manglecp.Server
	sess   *client.Session
	logs   *testenv.Buffer
	evalAt time.Time
}

func newFixture(t *testing.T, cfg code.Config) *fixture {
	t.Helper()
	before := testenv.ChildPIDs(t)
	// A language server's answers follow the machine's speed: pyright's
	// code action took over 30 s at load 40 on 2 cores. Tests that are
	// about a timeout set their own.
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = testenv.Budget(code.DefaultRequestTimeout)
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = testenv.Budget(code.DefaultStartTimeout)
	}
	if cfg.DiagnosticsWait == 0 {
		cfg.DiagnosticsWait = testenv.Budget(code.DefaultDiagnosticsWait)
	}
	c, err := code.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.Buffer{}
	srv, err := manglecp.NewServer(c.Domain(), &manglecp.Options{
		ConfirmationKey: confirmKey,
		Logger:          slog.New(slog.NewTextHandler(logs, nil)),
		// A language server's first answer includes its start and its
		// analysis of the project: pyright's took over 30 s on a loaded
		// 2-core machine.
		InvokeTimeout: testenv.Budget(2 * time.Minute),
	})
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	sess, err := client.Dial(context.Background(), hs.URL, &client.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sess.Close()
		hs.Close()
		// Closing the server closes the domain: every language server it
		// started is gone with its process group.
		srv.Close()
		after := testenv.ChildPIDs(t)
		var started []string
		for _, p := range after {
			if !contains(before, p) {
				started = append(started, p)
			}
		}
		testenv.WaitGone(t, started)
	})
	return &fixture{t: t, root: cfg.Roots[0], code: c, srv: srv, sess: sess, logs: logs, evalAt: time.Now().UTC()}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mentioned(p string) protocol.Fact { return protocol.NewFact("mentioned", p) }
func change(k string) protocol.Fact    { return protocol.NewFact("change", k) }
func symbol(n string) protocol.Fact    { return protocol.NewFact("symbol", n) }

func (f *fixture) eval(intent string, facts ...protocol.Fact) (map[string]protocol.MacroTool, *protocol.IntentResponse) {
	f.t.Helper()
	resp, err := f.sess.Evaluate(context.Background(), &protocol.IntentRequest{
		Intent: protocol.Intent{Name: intent}, Facts: facts, EvalTime: protocol.NewTime(f.evalAt),
		Options: &protocol.Options{DisclosurePreference: protocol.DisclosureFull},
	})
	if err != nil {
		f.t.Fatalf("evaluate %s: %v", intent, err)
	}
	out := map[string]protocol.MacroTool{}
	for _, m := range resp.MacroTools {
		out[m.Name] = m
	}
	return out, resp
}

func names(tools map[string]protocol.MacroTool) string {
	var n []string
	for k := range tools {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ",")
}

func (f *fixture) invoke(m protocol.MacroTool, args map[string]any, confirm bool) (*protocol.InvokeResponse, *client.Error) {
	f.t.Helper()
	var opts []client.CallOption
	if confirm {
		opts = append(opts, client.WithConfirmation(confirmKey, time.Minute))
	}
	if args == nil {
		args = map[string]any{}
	}
	resp, err := f.sess.Invoke(context.Background(), &protocol.InvokeRequest{MacroID: m.MacroID, Args: args, EvalTime: protocol.NewTime(f.evalAt)}, opts...)
	if err != nil {
		ce, ok := err.(*client.Error)
		if !ok {
			f.t.Fatalf("invoke %s: %v", m.Name, err)
		}
		return nil, ce
	}
	return resp, nil
}

// call evaluates intent with facts and invokes tool with args.
func (f *fixture) call(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool) (*protocol.InvokeResponse, *client.Error) {
	f.t.Helper()
	tools, _ := f.eval(intent, facts...)
	m, ok := tools[tool]
	if !ok {
		f.t.Fatalf("%s with %v offers %s, not %s", intent, facts, names(tools), tool)
	}
	return f.invoke(m, args, confirm)
}

func (f *fixture) ok(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool) *protocol.InvokeResponse {
	f.t.Helper()
	resp, err := f.call(intent, facts, tool, args, confirm)
	if err != nil {
		f.t.Fatalf("%s: %v (details %+v)", tool, err, err.Payload.Details)
	}
	return resp
}

// fails is call that must fail with code, as registered, leaking no
// server path.
func (f *fixture) fails(intent string, facts []protocol.Fact, tool string, args map[string]any, code protocol.Code) *protocol.Error {
	f.t.Helper()
	_, err := f.call(intent, facts, tool, args, false)
	if err == nil {
		f.t.Fatalf("%s %v succeeded, want %s", tool, args, code)
	}
	if err.Code() != code {
		f.t.Fatalf("%s %v: %s (%s), want %s", tool, args, err.Code(), err.Payload.Message, code)
	}
	info, ok := f.srv.Registry().Lookup(err.Code())
	if !ok || err.Status != info.HTTPStatus || err.Payload.Recoverable != info.Recoverable {
		f.t.Errorf("%s: status %d recoverable %v, registered %+v", err.Code(), err.Status, err.Payload.Recoverable, info)
	}
	raw, _ := json.Marshal(err.Payload)
	if strings.Contains(string(raw), f.root) {
		f.t.Errorf("%s leaks a server path: %s", err.Code(), raw)
	}
	return err.Payload
}

// applyPreview evaluates refactor with a preview's continuation facts and
// applies the one previewed change, confirmed: the one mandatory tool.
func (f *fixture) applyPreview(preview *protocol.InvokeResponse) *protocol.InvokeResponse {
	f.t.Helper()
	tools, resp := f.eval("refactor", preview.Next.ContinuationFacts...)
	m, ok := tools["apply_code_edit"]
	if !ok {
		f.t.Fatalf("refactor after the preview offers %s", names(tools))
	}
	if len(resp.MacroTools) != 1 || !m.Safety.RequiresUserConfirmation {
		f.t.Errorf("after a preview: tools %s, confirmation %v; want apply_code_edit alone, confirmed", names(tools), m.Safety.RequiresUserConfirmation)
	}
	enum := enumOf(m, "diff")
	if len(enum) != 1 {
		f.t.Fatalf("apply_code_edit diff enum %v", enum)
	}
	if _, err := f.invoke(m, map[string]any{"diff": enum[0]}, false); err == nil || err.Code() != protocol.CodeConfirmationRequired {
		f.t.Fatalf("apply without confirmation: %v", err)
	}
	out, err := f.invoke(m, map[string]any{"diff": enum[0]}, true)
	if err != nil {
		f.t.Fatalf("apply_code_edit: %v (%+v)", err, err.Payload.Details)
	}
	return out
}

func enumOf(m protocol.MacroTool, param string) []any {
	p, _ := m.InputSchema["properties"].(map[string]any)[param].(map[string]any)
	e, _ := p["enum"].([]any)
	return e
}

func (f *fixture) file(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(name)))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(f.root, filepath.FromSlash(name)))
	return err == nil
}

// run runs a program in the fixture's root and fails t with its output
// when it fails.
func (f *fixture) run(name string, args ...string) string {
	f.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = f.root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// strs is a result field that is a list of strings.
func strs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

var _ = bytes.NewBuffer

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t testing.TB, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
