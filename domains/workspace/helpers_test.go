package workspace_test

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

var confirmKey = []byte("workspace-test-confirmation-key!")

// fixture is a served workspace over a temporary tree: requests go through
// the HTTP binding and the client library, so every answer has passed
// real dispatch, the registry and the transport's status mapping.
type fixture struct {
	*domaintest.Session
	t      *testing.T
	root   string // the (only, or first) root directory
	ws     *workspace.Workspace
	sess   *client.Session
	logs   *bytes.Buffer
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

func newFixture(t *testing.T, cfg workspace.Config) *fixture {
	t.Helper()
	return newFixtureAs(t, cfg, nil, "")
}

// newFixtureAs is newFixture with the server's options changed by opt and
// the session dialled with token.
func newFixtureAs(t *testing.T, cfg workspace.Config, opt func(*manglecp.Options), token string) *fixture {
	t.Helper()
	if len(cfg.Roots) == 0 {
		dir := filepath.Join(t.TempDir(), "project")
		domaintest.WriteTree(t, dir, tree)
		cfg.Roots = []string{dir}
	}
	ws, err := workspace.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	logs := &bytes.Buffer{}
	opts := &manglecp.Options{ConfirmationKey: confirmKey, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if opt != nil {
		opt(opts)
	}
	s := domaintest.ServeAs(t, ws.Domain(), opts, token)
	s.Root, s.EvalAt = cfg.Roots[0], time.Now().UTC()
	return &fixture{Session: s, t: t, root: s.Root, ws: ws, sess: s.Client, logs: logs, evalAt: s.EvalAt}
}

// as is f with a session of its own, dialled with token.
func (f *fixture) as(token string) *fixture {
	g := *f
	g.Session = f.Dial(token)
	g.sess = g.Client
	return &g
}

func focus(p string) protocol.Fact     { return protocol.NewFact("focus", p) }
func mentioned(p string) protocol.Fact { return protocol.NewFact("mentioned", p) }
func change(k string) protocol.Fact    { return protocol.NewFact("change", k) }

// with returns f reporting to t (a subtest).
func (f *fixture) with(t *testing.T) *fixture {
	g := *f
	g.t = t
	g.Session = f.Session.With(t)
	return &g
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
