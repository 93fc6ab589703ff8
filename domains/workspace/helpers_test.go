package workspace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

var confirmKey = []byte("workspace-test-confirmation-key!")

// fixture is a served workspace over a temporary tree: requests go through
// the HTTP binding and the client library, so every answer has passed
// real dispatch, the registry and the transport's status mapping.
type fixture struct {
	t      *testing.T
	root   string // the (only, or first) root directory
	ws     *workspace.Workspace
	srv    *manglecp.Server
	sess   *client.Session
	logs   *bytes.Buffer
	facts  []protocol.Fact
	evalAt time.Time
}

// tree is the standard temporary tree of the tests.
var tree = map[string]string{
	"README.md":        "# Demo\n\nThe widget parses config.\n",
	"notes.txt":        "hello\nworld\n",
	"src/main.go":      "package main\n\nfunc main() {\n\tprintln(\"widget\")\n}\n",
	"src/util.go":      "package main\n\n// widget helper\nfunc helper() {}\n\nfunc helper2() {}\n",
	"src/deep/a/b.txt": "deep\n",
	"assets/logo.png":  "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
	"assets/blob.bin":  "\x00\x01\x02\x03binary",
	"docs/dup.txt":     "same\nother\nsame\n",
	"docs/empty/.keep": "",
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newFixture(t *testing.T, cfg workspace.Config) *fixture {
	t.Helper()
	if len(cfg.Roots) == 0 {
		dir := filepath.Join(t.TempDir(), "project")
		writeTree(t, dir, tree)
		cfg.Roots = []string{dir}
	}
	ws, err := workspace.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	logs := &bytes.Buffer{}
	srv, err := manglecp.NewServer(ws.Domain(), &manglecp.Options{
		ConfirmationKey: confirmKey,
		Logger:          slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	sess, err := client.Dial(context.Background(), hs.URL, &client.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &fixture{t: t, root: cfg.Roots[0], ws: ws, srv: srv, sess: sess, logs: logs, evalAt: time.Now().UTC()}
}

func focus(p string) protocol.Fact     { return protocol.NewFact("focus", p) }
func mentioned(p string) protocol.Fact { return protocol.NewFact("mentioned", p) }
func change(k string) protocol.Fact    { return protocol.NewFact("change", k) }

// eval evaluates an intent and returns the macro-tools by name.
func (f *fixture) eval(intent string, facts ...protocol.Fact) map[string]protocol.MacroTool {
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
	return out
}

func names(tools map[string]protocol.MacroTool) string {
	var n []string
	for k := range tools {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ",")
}

// call evaluates intent with facts, invokes tool with args (confirmed
// when confirm is set) and returns the response or the error answer.
func (f *fixture) call(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool) (*protocol.InvokeResponse, *client.Error) {
	f.t.Helper()
	tools := f.eval(intent, facts...)
	m, ok := tools[tool]
	if !ok {
		f.t.Fatalf("%s with %v offers %s, not %s", intent, facts, names(tools), tool)
	}
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
			f.t.Fatalf("invoke %s: %v", tool, err)
		}
		return nil, ce
	}
	return resp, nil
}

// ok is call that must succeed.
func (f *fixture) ok(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool) *protocol.InvokeResponse {
	f.t.Helper()
	resp, err := f.call(intent, facts, tool, args, confirm)
	if err != nil {
		f.t.Fatalf("%s: %v (details %+v)", tool, err, err.Payload.Details)
	}
	return resp
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

// fails is call that must fail with code; it checks the HTTP status and
// the recoverable flag against the domain's registration and that no
// absolute server path leaks.
func (f *fixture) fails(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool, code protocol.Code) *protocol.Error {
	f.t.Helper()
	_, err := f.call(intent, facts, tool, args, confirm)
	if err == nil {
		f.t.Fatalf("%s %v succeeded, want %s", tool, args, code)
	}
	if err.Code() != code {
		f.t.Fatalf("%s %v: %s (%s), want %s", tool, args, err.Code(), err.Payload.Message, code)
	}
	f.checkRegistered(err)
	return err.Payload
}

// checkRegistered checks an error answer against the registry.
func (f *fixture) checkRegistered(err *client.Error) {
	f.t.Helper()
	info, ok := f.srv.Registry().Lookup(err.Code())
	if !ok {
		f.t.Fatalf("%s is not registered", err.Code())
	}
	if err.Status != info.HTTPStatus || err.Payload.Recoverable != info.Recoverable {
		f.t.Errorf("%s: status %d recoverable %v, registered %d %v", err.Code(), err.Status, err.Payload.Recoverable, info.HTTPStatus, info.Recoverable)
	}
	raw, _ := json.Marshal(err.Payload)
	if strings.Contains(string(raw), f.root) {
		f.t.Errorf("%s leaks a server path: %s", err.Code(), raw)
	}
}

// invoke invokes an already selected macro-tool.
func (f *fixture) invoke(m protocol.MacroTool, args map[string]any, confirm bool) (*protocol.InvokeResponse, *client.Error) {
	f.t.Helper()
	var opts []client.CallOption
	if confirm {
		opts = append(opts, client.WithConfirmation(confirmKey, time.Minute))
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

// with returns f reporting to t (a subtest).
func (f *fixture) with(t *testing.T) *fixture {
	g := *f
	g.t = t
	return &g
}

// enumOf is the enum of a macro-tool's parameter.
func enumOf(m protocol.MacroTool, param string) []any {
	p, _ := m.InputSchema["properties"].(map[string]any)[param].(map[string]any)
	e, _ := p["enum"].([]any)
	return e
}

// editOf is the edit id of a preview's previewed fact, which the server
// keeps out of the result the model reads.
func editOf(t *testing.T, pre *protocol.InvokeResponse) string {
	t.Helper()
	for _, f := range pre.Next.ContinuationFacts {
		if f.Pred == "previewed" {
			return f.Args[1].(string)
		}
	}
	t.Fatal("the preview returned no previewed fact")
	return ""
}
