package gateway_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
	"github.com/manglecp/manglecp/upstream"
	"github.com/manglecp/manglecp/upstream/upstreamtest"
)

// builds builds manglecp for the tests that run it as an upstream.
var builds testenv.Builds

func TestMain(m *testing.M) {
	upstreamtest.MainIfFake()
	code := m.Run()
	builds.Close()
	os.Exit(code)
}

var maxTools int64 = 30

var confirmKey = []byte("gateway-test-confirmation-key!!!")

// fakePack offers every tool of upstream "fake" for one intent.
var fakePack = fstest.MapFS{"domain/fake.mg": {Data: []byte(`
decl_intent("use_fake", "Use the fake upstream.").
mandatory_for_intent("use_fake", T) :- upstream_tool("fake", T, _).
`)}}

// inMemory is an upstream named name served in process in mode.
func inMemory(name, mode string) gateway.Upstream {
	return gateway.Upstream{Config: upstream.Config{Name: name, Dial: func(ctx context.Context) (mcp.Transport, func(), error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := upstreamtest.Server(mode).Connect(ctx, st, nil)
		if err != nil {
			return nil, nil, err
		}
		return ct, func() { _ = ss.Close() }, nil
	}}}
}

// command is an upstream named name: the test binary as a fake over stdio.
func command(t *testing.T, name, mode string) gateway.Upstream {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return gateway.Upstream{Config: upstream.Config{Name: name, Command: []string{exe}, Env: []string{upstreamtest.EnvMode + "=" + mode},
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}}
}

type fixture struct {
	t    *testing.T
	gw   *gateway.Gateway
	srv  *manglecp.Server
	sess *client.Session
	logs *testenv.Buffer
	hs   *httptest.Server
}

func newFixture(t *testing.T, cfg gateway.Config) *fixture {
	t.Helper()
	return newFixtureWith(t, cfg, nil)
}

// newFixtureWith is newFixture with the server's options changed by opt.
func newFixtureWith(t *testing.T, cfg gateway.Config, opt func(*manglecp.Options)) *fixture {
	t.Helper()
	logs := &testenv.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	gw, err := gateway.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := &manglecp.Options{ConfirmationKey: confirmKey, Logger: cfg.Logger}
	if opt != nil {
		opt(opts)
	}
	srv, err := manglecp.NewServer(gw.Domain(), opts)
	if err != nil {
		_ = gw.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	sess, err := client.Dial(context.Background(), hs.URL, &client.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &fixture{t: t, gw: gw, srv: srv, sess: sess, logs: logs, hs: hs}
}

// evalFacts is eval with facts.
func (f *fixture) evalFacts(intent string, facts ...protocol.Fact) map[string]protocol.MacroTool {
	f.t.Helper()
	return f.eval(intent, facts...)
}

func (f *fixture) eval(intent string, facts ...protocol.Fact) map[string]protocol.MacroTool {
	f.t.Helper()
	resp, err := f.sess.Evaluate(context.Background(), &protocol.IntentRequest{
		Intent: protocol.Intent{Name: intent}, Facts: facts,
		Constraints: &protocol.Constraints{MaxToolsReturned: &maxTools},
		Options:     &protocol.Options{DisclosurePreference: protocol.DisclosureFull},
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

// call evaluates intent, invokes tool with args and returns the answer or
// the error.
func (f *fixture) call(intent, tool string, args map[string]any, confirm bool) (*protocol.InvokeResponse, *client.Error) {
	f.t.Helper()
	return f.callFacts(intent, nil, tool, args, confirm)
}

// callFacts is call with the intent evaluated on facts.
func (f *fixture) callFacts(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool) (*protocol.InvokeResponse, *client.Error) {
	f.t.Helper()
	tools := f.eval(intent, facts...)
	m, ok := tools[tool]
	if !ok {
		f.t.Fatalf("%s does not offer %s (offers %v)", intent, tool, keys(tools))
	}
	var opts []client.CallOption
	if confirm {
		opts = append(opts, client.WithConfirmation(confirmKey, time.Minute))
	}
	if args == nil {
		args = map[string]any{}
	}
	resp, err := f.sess.Invoke(context.Background(), &protocol.InvokeRequest{MacroID: m.MacroID, Args: args}, opts...)
	if err != nil {
		ce, ok := err.(*client.Error)
		if !ok {
			f.t.Fatalf("invoke %s: %v", tool, err)
		}
		info, ok := f.srv.Registry().Lookup(ce.Code())
		if !ok {
			f.t.Fatalf("%s is not registered", ce.Code())
		}
		if ce.Status != info.HTTPStatus || ce.Payload.Recoverable != info.Recoverable {
			f.t.Errorf("%s: status %d recoverable %v, registered %d %v", ce.Code(), ce.Status, ce.Payload.Recoverable, info.HTTPStatus, info.Recoverable)
		}
		return nil, ce
	}
	return resp, nil
}

func (f *fixture) ok(intent, tool string, args map[string]any, confirm bool) *protocol.InvokeResponse {
	f.t.Helper()
	resp, err := f.call(intent, tool, args, confirm)
	if err != nil {
		f.t.Fatalf("%s: %v (details %+v)", tool, err, err.Payload.Details)
	}
	return resp
}

func (f *fixture) fails(intent, tool string, args map[string]any, confirm bool, code protocol.Code) *protocol.Error {
	f.t.Helper()
	return f.failsFacts(intent, nil, tool, args, confirm, code)
}

// okFacts is ok with the intent evaluated on facts.
func (f *fixture) okFacts(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool) *protocol.InvokeResponse {
	f.t.Helper()
	resp, err := f.callFacts(intent, facts, tool, args, confirm)
	if err != nil {
		f.t.Fatalf("%s: %v (details %+v)", tool, err, err.Payload.Details)
	}
	return resp
}

// failsFacts is fails with the intent evaluated on facts.
func (f *fixture) failsFacts(intent string, facts []protocol.Fact, tool string, args map[string]any, confirm bool, code protocol.Code) *protocol.Error {
	f.t.Helper()
	_, err := f.callFacts(intent, facts, tool, args, confirm)
	if err == nil {
		f.t.Fatalf("%s %v succeeded, want %s", tool, args, code)
	}
	if err.Code() != code {
		f.t.Fatalf("%s %v: %s (%s), want %s", tool, args, err.Code(), err.Payload.Message, code)
	}
	return err.Payload
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// answer is what a call answered: the result's text, or the quoted text
// of the summary (`tool: "text"`) when the text was one short line.
func answer(r *protocol.InvokeResponse) string {
	if t, ok := r.Result["text"].(string); ok {
		return t
	}
	s := r.Observability.Summary
	if _, q, ok := strings.Cut(s, ": "); ok {
		if u, err := strconv.Unquote(q); err == nil {
			return u
		}
	}
	return s
}
