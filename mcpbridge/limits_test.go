package mcpbridge_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// hostileHTTP is a MangleCP server over HTTP whose manifest and
// evaluation answers each test chooses, and which counts the bytes it
// managed to send.
type hostileHTTP struct {
	manifest func(w io.Writer) // writes the manifest envelope
	answer   func(w io.Writer, id string)
	sent     atomic.Int64
}

// countingWriter counts what reached the connection.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (h *hostileHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	cw := countingWriter{w: w, n: &h.sent}
	switch r.URL.Path {
	case transport.ManifestPath:
		h.manifest(cw)
	case "/eval":
		env, perr := protocol.DecodeEnvelope(mustRead(r.Body))
		if perr != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		h.answer(cw, env.IDString())
	default:
		http.NotFound(w, r)
	}
}

func mustRead(r io.Reader) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, 1<<20))
	return b
}

// hostileManifest is the fake's manifest with HTTP endpoints, changed
// by edit.
func hostileManifestEnvelope(edit func(*protocol.Manifest)) func(io.Writer) {
	m := newFake().manifest
	m.Endpoints = &protocol.Endpoints{IntentEval: "/eval", MacroInvoke: "/invoke"}
	if edit != nil {
		edit(&m)
	}
	env, err := protocol.NewEnvelope(protocol.TypeManifest, "", m)
	if err != nil {
		panic(err)
	}
	raw, err := env.Encode()
	if err != nil {
		panic(err)
	}
	return func(w io.Writer) { _, _ = w.Write(raw) }
}

// stream writes prefix and then n bytes of filler, stopping at the first
// failed write (the reader went away).
func stream(w io.Writer, prefix string, n int64) {
	if _, err := io.WriteString(w, prefix); err != nil {
		return
	}
	chunk := []byte(strings.Repeat("a", 64<<10))
	for sent := int64(0); sent < n; sent += int64(len(chunk)) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// answerWith encodes resp as the evaluation's answer.
func answerWith(resp *protocol.IntentResponse) func(io.Writer, string) {
	return func(w io.Writer, id string) {
		env, err := protocol.NewEnvelope(protocol.TypeIntentResponse, id, resp)
		if err != nil {
			panic(err)
		}
		raw, _ := env.Encode()
		_, _ = w.Write(raw)
	}
}

// dialHostile starts h and a bridge to it whose client reads with the
// limits' ReplyBytes, as manglecp mcp does.
func dialHostile(t *testing.T, h *hostileHTTP, lim mcpbridge.Limits) (*mcpbridge.Bridge, error) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	dial := func(ctx context.Context) (*client.Session, error) {
		return client.Dial(ctx, srv.URL, &client.Options{MaxReplyBytes: lim.ReplyBytes(), MaxAttempts: 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := mcpbridge.New(ctx, dial, &mcpbridge.Options{Limits: lim})
	if b != nil {
		t.Cleanup(func() { _ = b.Close() })
	}
	return b, err
}

// host connects an MCP client to b.
func host(t *testing.T, b *mcpbridge.Bridge) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = b.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// slack is what may sit in socket buffers and the client's reads beyond
// a byte bound when the client stops reading.
const slack = 24 << 20

// TestHostileServerManifest: a manifest over a bound of the bridge is
// refused at dial with message_too_large naming the bound; a 200 MB
// manifest is not read past the byte bound.
func TestHostileServerManifest(t *testing.T) {
	lim := mcpbridge.Limits{MaxManifestBytes: 1 << 20, MaxAnswerBytes: 1 << 20}
	tests := []struct {
		name     string
		manifest func(io.Writer)
		bound    string
	}{
		{"200 MB manifest", func(w io.Writer) {
			stream(w, `{"type":"manifest","manglecp":"`+protocol.Version+`","payload":{"server_name":"`, 200<<20)
		}, "MaxReplyBytes"},
		{"20,000 intents", hostileManifestEnvelope(func(m *protocol.Manifest) {
			for i := range 20000 {
				m.Intents = append(m.Intents, protocol.IntentDecl{Name: "i" + strings.Repeat("x", i%7), Description: "d"})
			}
		}), "MaxIntents"},
		{"5,000 predicates", hostileManifestEnvelope(func(m *protocol.Manifest) {
			for range 5000 {
				m.FactsProfile.Predicates = append(m.FactsProfile.Predicates, protocol.PredicateSchema{Predicate: "p", Arity: 1, ArgTypes: []string{"string"}})
			}
		}), "MaxPredicates"},
		{"a 100 KiB intent description", hostileManifestEnvelope(func(m *protocol.Manifest) {
			m.Intents[0].Description = strings.Repeat("d", 100<<10)
		}), "MaxDescriptionBytes"},
		{"a 100 KiB domain description", hostileManifestEnvelope(func(m *protocol.Manifest) {
			m.Domain.Description = strings.Repeat("d", 100<<10)
		}), "MaxDescriptionBytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &hostileHTTP{manifest: tc.manifest}
			_, err := dialHostile(t, h, lim)
			if err == nil {
				t.Fatal("the bridge accepted the manifest")
			}
			e := mcpbridge.ErrorOf(err)
			if e.Code != protocol.CodeMessageTooLarge || !strings.Contains(e.Message, tc.bound) || !strings.Contains(e.Message, "manifest") {
				t.Fatalf("error %s: %s, want message_too_large naming the manifest and %s", e.Code, e.Message, tc.bound)
			}
			if sent := h.sent.Load(); sent > lim.ReplyBytes()+slack {
				t.Errorf("the server sent %d bytes before the bridge stopped reading; the bound is %d", sent, lim.ReplyBytes())
			}
		})
	}
}

// TestHostileServerAnswers: evaluation answers over a bound (too many
// tools, a large description or schema, a 200 MB answer, an answer over
// MaxAnswerBytes below the read bound) give the host a tool error with
// message_too_large naming the bound, and install no tool.
func TestHostileServerAnswers(t *testing.T) {
	lim := mcpbridge.Limits{MaxManifestBytes: 4 << 20, MaxAnswerBytes: 1 << 20, MaxTools: 50}
	manyTools := &protocol.IntentResponse{}
	for range 5000 {
		manyTools.MacroTools = append(manyTools.MacroTools, tool("t", false))
	}
	longDesc := tool("long_description", false)
	longDesc.Description = strings.Repeat("d", 100<<10)
	bigSchema := tool("big_schema", false)
	bigSchema.InputSchema = map[string]any{"type": "object", "description": strings.Repeat("s", 200<<10)}
	tests := []struct {
		name   string
		answer func(io.Writer, string)
		bound  string
	}{
		{"5,000 tools", answerWith(manyTools), "MaxTools"},
		{"a 100 KiB tool description", answerWith(&protocol.IntentResponse{MacroTools: []protocol.MacroTool{longDesc}}), "MaxDescriptionBytes"},
		{"a 200 KiB schema", answerWith(&protocol.IntentResponse{MacroTools: []protocol.MacroTool{bigSchema}}), "MaxSchemaBytes"},
		{"a 2 MiB answer under the read bound", answerWith(&protocol.IntentResponse{Warnings: []protocol.Warning{{Code: "x", Message: strings.Repeat("w", 2<<20)}}}), "MaxAnswerBytes"},
		{"a 200 MB answer", func(w io.Writer, id string) {
			stream(w, `{"type":"intent_response","id":"`+id+`","manglecp":"`+protocol.Version+`","payload":{"x":"`, 200<<20)
		}, "MaxReplyBytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &hostileHTTP{manifest: hostileManifestEnvelope(nil), answer: tc.answer}
			b, err := dialHostile(t, h, lim)
			if err != nil {
				t.Fatal(err)
			}
			cs := host(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			before := h.sent.Load()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "diagnose", Arguments: map[string]any{"facts": []any{[]any{"url", "https://a.example"}}}})
			if err != nil {
				t.Fatal(err)
			}
			e := errorOf(t, res)
			if e.Code != protocol.CodeMessageTooLarge || !strings.Contains(e.Message, tc.bound) {
				t.Fatalf("error %s: %s, want message_too_large naming %s", e.Code, e.Message, tc.bound)
			}
			if sent := h.sent.Load() - before; sent > lim.ReplyBytes()+slack {
				t.Errorf("the server sent %d bytes of the answer before the bridge stopped reading; the bound is %d", sent, lim.ReplyBytes())
			}
			tl, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(tl)
			if len(raw) > 64<<10 {
				t.Errorf("the tool list is %d bytes after a refused answer", len(raw))
			}
		})
	}
}

// pushingServer is the fake whose manifest can change after the session
// opened; the session transport pushes it.
type pushingServer struct {
	*fakeServer
	mu       sync.Mutex
	manifest []byte
	notify   func()
}

func (p *pushingServer) ManifestJSON() ([]byte, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.manifest, `"p"`
}

func (p *pushingServer) OnManifestChange(fn func()) func() {
	p.mu.Lock()
	p.notify = fn
	p.mu.Unlock()
	return func() {}
}

func (p *pushingServer) push(m protocol.Manifest) {
	raw, _ := json.Marshal(m)
	p.mu.Lock()
	p.manifest = raw
	fn := p.notify
	p.mu.Unlock()
	fn()
}

// TestHostileServerPushedManifest: a manifest the server pushes later
// over a bound is ignored (the bridge keeps the last good one), one
// within the bounds replaces it.
func TestHostileServerPushedManifest(t *testing.T) {
	fake := newFake()
	raw, _ := json.Marshal(fake.manifest)
	p := &pushingServer{fakeServer: fake, manifest: raw}
	pushed := make(chan struct{}, 10)
	dial := func(ctx context.Context) (*client.Session, error) {
		c, s := transport.NewMemoryPair()
		go func() { _ = transport.ServeSession(context.Background(), p, s, nil) }()
		return client.NewSession(ctx, c, &client.Options{OnManifest: func(*protocol.Manifest) { pushed <- struct{}{} }})
	}
	b, err := mcpbridge.New(context.Background(), dial, &mcpbridge.Options{Limits: mcpbridge.Limits{MaxIntents: 5}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wait := func() {
		t.Helper()
		select {
		case <-pushed:
		case <-time.After(10 * time.Second):
			t.Fatal("no manifest pushed")
		}
	}
	hostile := fake.manifest
	hostile.ServerName = "hostile"
	for i := range 50 {
		hostile.Intents = append(hostile.Intents, protocol.IntentDecl{Name: "i" + strings.Repeat("x", i)})
	}
	p.push(hostile)
	wait()
	if got := b.Manifest(); got.ServerName != "fake" || len(got.Intents) != 2 {
		t.Fatalf("the bridge took a pushed manifest over MaxIntents: %s with %d intents", got.ServerName, len(got.Intents))
	}
	good := fake.manifest
	good.ServerName = "fake-2"
	p.push(good)
	wait()
	if got := b.Manifest(); got.ServerName != "fake-2" {
		t.Fatalf("the bridge kept %s after a good manifest was pushed", got.ServerName)
	}
}
