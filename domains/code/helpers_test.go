package code_test

import (
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
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
	*domaintest.Session
	t    *testing.T
	root string
	code *code.Code
	sess *client.Session
	logs *testenv.Buffer
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
	// Runs last, after the server closed, which closes the domain: every
	// language server it started is gone with its process group.
	t.Cleanup(func() {
		var started []string
		for _, p := range testenv.ChildPIDs(t) {
			if !slices.Contains(before, p) {
				started = append(started, p)
			}
		}
		testenv.WaitGone(t, started)
	})
	logs := &testenv.Buffer{}
	s := domaintest.Serve(t, c.Domain(), &manglecp.Options{
		ConfirmationKey: confirmKey,
		Logger:          slog.New(slog.NewTextHandler(logs, nil)),
		// A language server's first answer includes its start and its
		// analysis of the project: pyright's took over 30 s on a loaded
		// 2-core machine.
		InvokeTimeout: testenv.Budget(2 * time.Minute),
	})
	s.Root, s.EvalAt = cfg.Roots[0], time.Now().UTC()
	return &fixture{Session: s, t: t, root: s.Root, code: c, sess: s.Client, logs: logs}
}

func mentioned(p string) protocol.Fact { return protocol.NewFact("mentioned", p) }
func change(k string) protocol.Fact    { return protocol.NewFact("change", k) }
func symbol(n string) protocol.Fact    { return protocol.NewFact("symbol", n) }

// applyPreview evaluates refactor with a preview's continuation facts and
// applies the one previewed change, confirmed: the one mandatory tool.
func (f *fixture) applyPreview(preview *protocol.InvokeResponse) *protocol.InvokeResponse {
	f.t.Helper()
	tools, resp := f.Evaluate("refactor", preview.Next.ContinuationFacts...)
	m, ok := tools["apply_code_edit"]
	if !ok {
		f.t.Fatalf("refactor after the preview offers %s", domaintest.Names(tools))
	}
	if len(resp.MacroTools) != 1 || !m.Safety.RequiresUserConfirmation {
		f.t.Errorf("after a preview: tools %s, confirmation %v; want apply_code_edit alone, confirmed", domaintest.Names(tools), m.Safety.RequiresUserConfirmation)
	}
	enum := domaintest.EnumOf(m, "diff")
	if len(enum) != 1 {
		f.t.Fatalf("apply_code_edit diff enum %v", enum)
	}
	if _, err := f.Invoke(m, map[string]any{"diff": enum[0]}, false); err == nil || err.Code() != protocol.CodeConfirmationRequired {
		f.t.Fatalf("apply without confirmation: %v", err)
	}
	out, err := f.Invoke(m, map[string]any{"diff": enum[0]}, true)
	if err != nil {
		f.t.Fatalf("apply_code_edit: %v (%+v)", err, err.Payload.Details)
	}
	return out
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

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
