package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/upstream"
)

// syntheticPack offers five tools of upstream "syn" by their upstream
// names for intent use_syn, whatever the size of the catalogue: the
// selection is fixed while the catalogue grows.
var syntheticPack = fstest.MapFS{"domain/syn.mg": {Data: []byte(`
decl_intent("use_syn", "Use the synthetic upstream.").
Decl chosen(Name) descr [doc("A tool name the intent offers.")].
chosen("tool_0001"). chosen("tool_0002"). chosen("tool_0003"). chosen("tool_0004"). chosen("tool_0005").
mandatory_for_intent("use_syn", T) :- upstream_tool("syn", T, N), chosen(N).
`)}}

// syntheticUpstream serves n read-only tools, each with one string
// parameter, in process.
func syntheticUpstream(n int) gateway.Upstream {
	return gateway.Upstream{Config: upstream.Config{Name: "syn", MaxTools: n, Dial: func(ctx context.Context) (mcp.Transport, func(), error) {
		s := mcp.NewServer(&mcp.Implementation{Name: "synthetic", Version: "1"}, nil)
		for i := range n {
			s.AddTool(&mcp.Tool{
				Name:        fmt.Sprintf("tool_%04d", i),
				Description: fmt.Sprintf("Synthetic tool number %d. It does nothing.", i),
				InputSchema: map[string]any{"type": "object", "properties": map[string]any{
					"text": map[string]any{"type": "string", "description": "Any text."}}},
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			return nil, nil, err
		}
		return ct, func() { _ = ss.Close() }, nil
	}}}
}

// BenchmarkCatalogueSize evaluates one intent that selects five tools of a
// gateway whose upstream lists 10 to 5,000 tools: the work for an intent
// should follow what it can select, not the size of the catalogue
// (docs/BENCHMARKS.md, issue 40's target: 1,000 tools within 1.2x of 22).
func BenchmarkCatalogueSize(b *testing.B) {
	for _, n := range []int{10, 22, 100, 1000, 5000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			gw, err := gateway.Open(context.Background(), gateway.Config{
				Upstreams: []gateway.Upstream{syntheticUpstream(n)}, Rules: syntheticPack, RulesName: "synthetic pack"})
			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			// The result cache would answer the identical requests: off, so
			// each one is evaluated.
			srv, err := manglecp.NewServer(gw.Domain(), &manglecp.Options{ResultCacheBytes: -1, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			data, err := json.Marshal(map[string]any{"type": protocol.TypeIntentRequest, "id": "bench", "manglecp": protocol.Version,
				"payload": map[string]any{"intent": map[string]any{"name": "use_syn"}, "eval_time": "2026-02-19T14:30:05Z"}})
			if err != nil {
				b.Fatal(err)
			}
			in := &protocol.Inbound{Data: data}
			env := srv.Handle(context.Background(), in)
			var resp protocol.IntentResponse
			if env.Type != protocol.TypeIntentResponse {
				b.Fatalf("%s", env.Payload)
			}
			if err := json.Unmarshal(env.Payload, &resp); err != nil {
				b.Fatal(err)
			}
			if len(resp.MacroTools) != 5 {
				b.Fatalf("selected %d tools, want 5", len(resp.MacroTools))
			}
			b.ReportAllocs()
			start := testenv.ProcessCPU()
			for b.Loop() {
				if env := srv.Handle(context.Background(), in); env.Type != protocol.TypeIntentResponse {
					b.Fatalf("%s", env.Payload)
				}
			}
			b.ReportMetric(float64(testenv.ProcessCPU()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
