// Package domaintest serves a domain for its tests over the HTTP binding
// and calls it through the client library, so every answer has passed
// real dispatch, the registry and the transport's status mapping. The
// workspace, code and gateway domains' tests share it.
package domaintest

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// Session is a served domain and a client session to it.
type Session struct {
	T   *testing.T
	Srv *manglecp.Server
	// Client is the session every call goes through.
	Client *client.Session
	// Key signs the confirmation of confirmed calls: the server's
	// ConfirmationKey.
	Key []byte
	// EvalAt, when set, is the eval_time of every request.
	EvalAt time.Time
	// Root, when set, is the directory whose files File and Exists read,
	// and a server path no error answer may contain.
	Root string
	// MaxTools, when set, is every evaluation's max_tools_returned.
	MaxTools *int64
	// URL is the server's base URL.
	URL string
}

// Serve serves d with opts over HTTP on a loopback listener and dials it
// with one attempt per call. When t ends the session, the listener and
// the server close, in that order. The confirmation key is opts's.
func Serve(t *testing.T, d manglecp.Domain, opts *manglecp.Options) *Session {
	t.Helper()
	return ServeAs(t, d, opts, "")
}

// ServeAs is Serve with the session dialled with token.
func ServeAs(t *testing.T, d manglecp.Domain, opts *manglecp.Options, token string) *Session {
	t.Helper()
	srv, err := manglecp.NewServer(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	s := &Session{T: t, Srv: srv, URL: hs.URL}
	if opts != nil {
		s.Key = opts.ConfirmationKey
	}
	return s.Dial(token)
}

// Dial returns a copy of s with a session of its own to the same server,
// dialled with token (closed when s's test ends).
func (s *Session) Dial(token string) *Session {
	s.T.Helper()
	sess, err := client.Dial(context.Background(), s.URL, &client.Options{MaxAttempts: 1, Token: token})
	if err != nil {
		s.T.Fatal(err)
	}
	s.T.Cleanup(func() { sess.Close() })
	c := *s
	c.Client = sess
	return &c
}

// With returns a copy of s that reports to t (a subtest).
func (s *Session) With(t *testing.T) *Session {
	c := *s
	c.T = t
	return &c
}

// Evaluate evaluates an intent on facts at full disclosure and returns
// the macro-tools by name and the answer.
func (s *Session) Evaluate(intent string, facts ...protocol.Fact) (map[string]protocol.MacroTool, *protocol.IntentResponse) {
	s.T.Helper()
	req := &protocol.IntentRequest{
		Intent: protocol.Intent{Name: intent}, Facts: facts,
		Options: &protocol.Options{DisclosurePreference: protocol.DisclosureFull},
	}
	if !s.EvalAt.IsZero() {
		req.EvalTime = protocol.NewTime(s.EvalAt)
	}
	if s.MaxTools != nil {
		req.Constraints = &protocol.Constraints{MaxToolsReturned: s.MaxTools}
	}
	resp, err := s.Client.Evaluate(context.Background(), req)
	if err != nil {
		s.T.Fatalf("evaluate %s: %v", intent, err)
	}
	out := map[string]protocol.MacroTool{}
	for _, m := range resp.MacroTools {
		out[m.Name] = m
	}
	return out, resp
}

// Eval is Evaluate's macro-tools by name.
func (s *Session) Eval(intent string, facts ...protocol.Fact) map[string]protocol.MacroTool {
	s.T.Helper()
	tools, _ := s.Evaluate(intent, facts...)
	return tools
}

// Invoke invokes an evaluated macro-tool with args (nil: none), confirmed
// when confirm is set, and returns the answer or the error answer, which
// must be registered as it came (Check).
func (s *Session) Invoke(m protocol.MacroTool, args map[string]any, confirm bool) (*protocol.InvokeResponse, *client.Error) {
	s.T.Helper()
	var opts []client.CallOption
	if confirm {
		opts = append(opts, client.WithConfirmation(s.Key, time.Minute))
	}
	if args == nil {
		args = map[string]any{}
	}
	req := &protocol.InvokeRequest{MacroID: m.MacroID, Args: args}
	if !s.EvalAt.IsZero() {
		req.EvalTime = protocol.NewTime(s.EvalAt)
	}
	resp, err := s.Client.Invoke(context.Background(), req, opts...)
	if err != nil {
		ce, ok := err.(*client.Error)
		if !ok {
			s.T.Fatalf("invoke %s: %v", m.Name, err)
		}
		s.registered(ce)
		return nil, ce
	}
	return resp, nil
}

// Call evaluates intent on facts and invokes tool with args, which the
// answer must offer.
func (s *Session) Call(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool) (*protocol.InvokeResponse, *client.Error) {
	s.T.Helper()
	tools := s.Eval(intent, facts...)
	m, ok := tools[tool]
	if !ok {
		s.T.Fatalf("%s with %v offers %s, not %s", intent, facts, Names(tools), tool)
	}
	return s.Invoke(m, args, confirm)
}

// OK is Call that must succeed.
func (s *Session) OK(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool) *protocol.InvokeResponse {
	s.T.Helper()
	resp, err := s.Call(intent, facts, tool, args, confirm)
	if err != nil {
		s.T.Fatalf("%s: %v (details %+v)", tool, err, err.Payload.Details)
	}
	return resp
}

// Fails is Call that must fail with code, as registered (Check).
func (s *Session) Fails(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool, code protocol.Code) *protocol.Error {
	s.T.Helper()
	_, err := s.Call(intent, facts, tool, args, confirm)
	if err == nil {
		s.T.Fatalf("%s %v succeeded, want %s", tool, args, code)
	}
	if err.Code() != code {
		s.T.Fatalf("%s %v: %s (%s), want %s", tool, args, err.Code(), err.Payload.Message, code)
	}
	s.Check(err)
	return err.Payload
}

// Check checks an error answer against the server's registry (code,
// HTTP status, recoverability) and that it holds no Root path.
func (s *Session) Check(err *client.Error) {
	s.T.Helper()
	s.registered(err)
	if s.Root == "" {
		return
	}
	raw, _ := json.Marshal(err.Payload)
	if strings.Contains(string(raw), s.Root) {
		s.T.Errorf("%s leaks a server path: %s", err.Code(), raw)
	}
}

func (s *Session) registered(err *client.Error) {
	s.T.Helper()
	info, ok := s.Srv.Registry().Lookup(err.Code())
	if !ok {
		s.T.Fatalf("%s is not registered", err.Code())
	}
	if err.Status != info.HTTPStatus || err.Payload.Recoverable != info.Recoverable {
		s.T.Errorf("%s: status %d recoverable %v, registered %d %v", err.Code(), err.Status, err.Payload.Recoverable, info.HTTPStatus, info.Recoverable)
	}
}

// File is the content of a file below Root (a slash path).
func (s *Session) File(name string) string {
	s.T.Helper()
	b, err := os.ReadFile(filepath.Join(s.Root, filepath.FromSlash(name)))
	if err != nil {
		s.T.Fatal(err)
	}
	return string(b)
}

// Exists reports whether a path below Root names something (a final
// symbolic link not followed).
func (s *Session) Exists(name string) bool {
	_, err := os.Lstat(filepath.Join(s.Root, filepath.FromSlash(name)))
	return err == nil
}

// Names are the names of tools, sorted and joined with commas.
func Names(tools map[string]protocol.MacroTool) string {
	var n []string
	for k := range tools {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ",")
}

// EnumOf is the enum of a macro-tool's parameter.
func EnumOf(m protocol.MacroTool, param string) []any {
	p, _ := m.InputSchema["properties"].(map[string]any)[param].(map[string]any)
	e, _ := p["enum"].([]any)
	return e
}

// WriteTree writes files (slash paths to contents) below dir, creating
// the directories they need.
func WriteTree(t testing.TB, dir string, files map[string]string) {
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

// BrowserServer is a server of the browser domain (its reports in a
// temporary directory) with confirmation key key and the options changed
// by mut (when not nil): the default domain of the client and
// conformance tests.
func BrowserServer(t testing.TB, key []byte, mut func(*manglecp.Options)) *manglecp.Server {
	t.Helper()
	opts := &manglecp.Options{ConfirmationKey: key}
	if mut != nil {
		mut(opts)
	}
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
