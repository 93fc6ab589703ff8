package gateway_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
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
	*domaintest.Session
	t    *testing.T
	gw   *gateway.Gateway
	srv  *manglecp.Server
	sess *client.Session
	logs *testenv.Buffer
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
	// Starting an upstream (a node server, Playwright and Chromium) and its
	// answers take as long as the machine makes them take: the upstreams'
	// start and call bounds and the server's invoke bound are budgets here,
	// stretched by the machine's measured speed. A test about one of them
	// sets its own.
	cfg.Upstreams = slices.Clone(cfg.Upstreams)
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		if u.ConnectTimeout == 0 {
			u.ConnectTimeout = testenv.Budget(upstream.DefaultConnectTimeout)
		}
		if u.CallTimeout == 0 {
			u.CallTimeout = testenv.Budget(upstream.DefaultCallTimeout)
		}
	}
	gw, err := gateway.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := &manglecp.Options{ConfirmationKey: confirmKey, Logger: cfg.Logger, InvokeTimeout: testenv.Budget(time.Minute)}
	if opt != nil {
		opt(opts)
	}
	s := domaintest.Serve(t, gw.Domain(), opts)
	s.MaxTools = &maxTools
	return &fixture{Session: s, t: t, gw: gw, srv: s.Srv, sess: s.Client, logs: logs}
}

// as is a session of the fixture's server with token.
func (f *fixture) as(token string) *fixture {
	f.t.Helper()
	g := *f
	g.Session = f.Dial(token)
	g.sess = g.Client
	return &g
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
