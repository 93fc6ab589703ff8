package mcpbridge_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// fakeServer is a scripted MangleCP server: a transport.Handler whose
// answers each test sets. It records every request it was sent.
type fakeServer struct {
	transport.HandlerDefaults
	manifest protocol.Manifest

	mu       sync.Mutex
	evals    []protocol.IntentRequest
	invokes  []protocol.InvokeRequest
	evaluate func(ctx context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error)
	invoke   func(ctx context.Context, req *protocol.InvokeRequest, progress func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error)
}

// newFake returns a fake of a small domain: intent "diagnose" reading
// url(u) (required) and status(code:number); output predicate seen(x).
func newFake() *fakeServer {
	return &fakeServer{manifest: protocol.Manifest{
		ServerName: "fake", ServerVersion: "1", Status: protocol.StatusReady,
		Protocol: protocol.ProtocolInfo{Manglecp: protocol.Version, ConformanceLevel: 3},
		Domain:   protocol.DomainInfo{ID: "fake", Description: "A scripted test domain."},
		Intents: []protocol.IntentDecl{
			{Name: "diagnose", Description: "Diagnose a page", RequiredFacts: []string{"url"}, OptionalFacts: []string{"status"}},
			{Name: "observe", Description: "Observe a page"},
		},
		FactsProfile: protocol.FactsProfile{TimeFormats: []string{"rfc3339"}, Predicates: []protocol.PredicateSchema{
			{Predicate: "url", Arity: 1, ArgTypes: []string{"string"}, ArgNames: []string{"u"}, Direction: protocol.DirectionInput},
			{Predicate: "status", Arity: 1, ArgTypes: []string{"number"}, ArgNames: []string{"code"}, Direction: protocol.DirectionInput},
			{Predicate: "seen", Arity: 1, ArgTypes: []string{"string"}, ArgNames: []string{"x"}, Direction: protocol.DirectionBoth},
		}},
		Limits: protocol.Limits{MaxMessageBytes: 16 << 20, MaxFactsPerRequest: 1000, MaxDerivedFacts: 10000},
		Auth:   protocol.AuthInfo{},
	}}
}

func (f *fakeServer) ManifestJSON() ([]byte, string) {
	raw, _ := json.Marshal(f.manifest)
	return raw, `"1"`
}

func (f *fakeServer) MaxMessageBytes() int64 { return 16 << 20 }

func (f *fakeServer) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	env, perr := protocol.DecodeEnvelope(in.Data)
	if perr != nil {
		return protocol.ErrorEnvelope("", perr)
	}
	switch env.Type {
	case protocol.TypeIntentRequest:
		return serve(f, env, &f.evals, protocol.TypeIntentResponse, func(req *protocol.IntentRequest) (any, *protocol.Error) {
			if fn := locked(f, &f.evaluate); fn != nil {
				return fn(ctx, req)
			}
			return &protocol.IntentResponse{MacroTools: []protocol.MacroTool{}}, nil
		})
	case protocol.TypeInvokeRequest:
		return serve(f, env, &f.invokes, protocol.TypeInvokeResponse, func(req *protocol.InvokeRequest) (any, *protocol.Error) {
			if fn := locked(f, &f.invoke); fn != nil {
				return fn(ctx, req, in.Progress)
			}
			return &protocol.InvokeResponse{Result: map[string]any{"ok": true}}, nil
		})
	}
	return protocol.ErrorEnvelope(env.IDString(), protocol.Errorf(protocol.CodeInvalidType, "unexpected %s", env.Type))
}

// locked reads one of f's fields under f.mu.
func locked[T any](f *fakeServer, v *T) T {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *v
}

// serve decodes env's payload as a request, adds it to the requests of
// its kind f records (log), and answers it with what answer returns, as a
// message of type typ.
func serve[T any](f *fakeServer, env *protocol.Envelope, log *[]T, typ protocol.MessageType, answer func(*T) (any, *protocol.Error)) *protocol.Envelope {
	id := env.IDString()
	var req T
	if err := json.Unmarshal(env.Payload, &req); err != nil {
		return protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeMalformedMessage, "payload"))
	}
	f.mu.Lock()
	*log = append(*log, req)
	f.mu.Unlock()
	v, e := answer(&req)
	if e != nil {
		return protocol.ErrorEnvelope(id, e)
	}
	out, err := protocol.NewEnvelope(typ, id, v)
	if err != nil {
		return protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeInternalError, "encode"))
	}
	return out
}

func (f *fakeServer) setEvaluate(fn func(ctx context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.evaluate = fn
}

func (f *fakeServer) setInvoke(fn func(ctx context.Context, req *protocol.InvokeRequest, progress func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.invoke = fn
}

// lastEval is the last intent request f received.
func (f *fakeServer) lastEval(t *testing.T) protocol.IntentRequest {
	t.Helper()
	return last(t, f, &f.evals, "intent")
}

func (f *fakeServer) invokeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.invokes)
}

// lastInvoke is the last invoke request f received.
func (f *fakeServer) lastInvoke(t *testing.T) protocol.InvokeRequest {
	t.Helper()
	return last(t, f, &f.invokes, "invoke")
}

// last is the last request of a kind (log) f recorded.
func last[T any](t *testing.T, f *fakeServer, log *[]T, kind string) T {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(*log) == 0 {
		t.Fatalf("the server received no %s request", kind)
	}
	return (*log)[len(*log)-1]
}

// tool is a full-disclosure macro-tool for the fake's answers.
func tool(name string, confirm bool) protocol.MacroTool {
	effects := []string{"none"}
	if confirm {
		effects = []string{"filesystem"}
	}
	return protocol.MacroTool{
		MacroID: name + "-0001", Name: name, Description: "The " + name + " tool.", DisclosureLevel: protocol.DisclosureFull,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"target": map[string]any{"type": "string"}}, "required": []any{"target"}},
		Safety:      &protocol.Safety{RequiresUserConfirmation: confirm, SideEffects: effects, Reversible: !confirm, Idempotent: !confirm},
	}
}

// selects answers every evaluation with tools.
func selects(tools ...protocol.MacroTool) func(context.Context, *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
	return func(context.Context, *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		return &protocol.IntentResponse{EvalTimeUsed: protocol.Time{Time: time.Unix(1771510205, 0).UTC()}, MacroTools: tools}, nil
	}
}

// perIntent answers an evaluation of an intent byIntent names with its
// tools, and any other with others.
func perIntent(byIntent map[string][]protocol.MacroTool, others ...protocol.MacroTool) func(context.Context, *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
	return func(_ context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		if tools, ok := byIntent[req.Intent.Name]; ok {
			return &protocol.IntentResponse{MacroTools: tools}, nil
		}
		return &protocol.IntentResponse{MacroTools: others}, nil
	}
}

// harness is a bridge to a fake server and an MCP client connected to it,
// both over in-memory transports.
type harness struct {
	fake    *fakeServer
	bridge  *mcpbridge.Bridge
	cs      *mcp.ClientSession
	changed chan struct{} // one value per tools/list_changed received
	dials   int
	mu      sync.Mutex
	conns   []transport.Conn // server halves, to break the connection
	host    hostOptions
}

// hostOptions describe the MCP host of a test.
type hostOptions struct {
	// protocolVersion is the MCP version the client asks for ("" latest).
	protocolVersion string
	// noListChanged leaves out the tools/list_changed handler (a host that
	// does not follow list changes).
	noListChanged bool
	// elicit answers elicitation; nil means the host does not support it.
	elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// progress receives progress notifications.
	progress func(*mcp.ProgressNotificationClientRequest)
	// holdSubscription, if not nil, holds the host's subscriptions/listen
	// back until it is closed: the bridge sees the host's calls first.
	holdSubscription chan struct{}
}

// holdTransport is a host's transport that holds its subscriptions/listen
// request back until release is closed.
type holdTransport struct {
	mcp.Transport
	release <-chan struct{}
}

// Connect connects the inner transport.
func (t holdTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return holdConn{Connection: c, release: t.release}, nil
}

type holdConn struct {
	mcp.Connection
	release <-chan struct{}
}

// Write writes msg, or for subscriptions/listen, writes it once release is
// closed.
func (c holdConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "subscriptions/listen" {
		go func() {
			<-c.release
			_ = c.Connection.Write(context.Background(), msg)
		}()
		return nil
	}
	return c.Connection.Write(ctx, msg)
}

func newHarness(t *testing.T, fake *fakeServer, opts *mcpbridge.Options, host hostOptions) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &harness{fake: fake, changed: make(chan struct{}, 100), host: host}
	dial := func(dctx context.Context) (*client.Session, error) {
		c, s := transport.NewMemoryPair()
		h.mu.Lock()
		h.dials++
		h.conns = append(h.conns, s)
		h.mu.Unlock()
		go func() { _ = transport.ServeSession(ctx, fake, s, nil) }()
		return client.NewSession(dctx, c, &client.Options{Sleep: func(context.Context, time.Duration) error { return nil }})
	}
	if opts == nil {
		opts = &mcpbridge.Options{}
	}
	b, err := mcpbridge.New(ctx, dial, opts)
	if err != nil {
		t.Fatalf("mcpbridge.New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	h.bridge = b
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = b.Run(ctx, st) }()
	copts := &mcp.ClientOptions{ElicitationHandler: host.elicit}
	if !host.noListChanged {
		copts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case h.changed <- struct{}{}:
			default:
			}
		}
	}
	if host.progress != nil {
		copts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { host.progress(r) }
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, copts)
	var hostSide mcp.Transport = ct
	if host.holdSubscription != nil {
		hostSide = holdTransport{Transport: ct, release: host.holdSubscription}
	}
	cs, err := cl.Connect(ctx, hostSide, &mcp.ClientSessionOptions{ProtocolVersion: host.protocolVersion})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	h.cs = cs
	return h
}

// call calls an MCP tool and fails the test on a protocol error.
func (h *harness) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

// listTools is the host's tools/list.
func (h *harness) listTools(t *testing.T) []*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := h.cs.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	return res.Tools
}

// toolNames lists the host's tools by name.
func (h *harness) toolNames(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for _, tl := range h.listTools(t) {
		out[tl.Name] = tl
	}
	return out
}

// waitChanged waits for one tools/list_changed notification.
func (h *harness) waitChanged(t *testing.T) {
	t.Helper()
	select {
	case <-h.changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
}

// structured decodes a result's structuredContent into v.
func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("structuredContent %s: %v", raw, err)
	}
}

// text is the text content of a result.
func text(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}

// errorOf checks that res is an error result of one text item, without
// structuredContent, and returns the fields its _meta holds (every field
// of a MangleCP error payload).
func errorOf(t *testing.T, res *mcp.CallToolResult) protocol.Error {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want an error result, got %s", text(res))
	}
	if res.StructuredContent != nil || len(res.Content) != 1 {
		t.Errorf("an error result has %d content items and structuredContent %v; want one text item", len(res.Content), res.StructuredContent)
	}
	raw, _ := json.Marshal(res.Meta[mcpbridge.ErrorMetaKey])
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("_meta %s: %s: %v", mcpbridge.ErrorMetaKey, raw, err)
	}
	for _, k := range []string{"code", "message", "recoverable", "retry_after_ms", "details"} {
		if _, ok := m[k]; !ok {
			t.Errorf("_meta %s lacks %q", raw, k)
		}
	}
	var e protocol.Error
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// dialFake opens a MangleCP session to fake over an in-memory pair.
func dialFake(ctx context.Context, t *testing.T, fake *fakeServer) (*client.Session, error) {
	c, s := transport.NewMemoryPair()
	sctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = transport.ServeSession(sctx, fake, s, nil) }()
	return client.NewSession(ctx, c, nil)
}
