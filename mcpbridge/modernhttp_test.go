package mcpbridge_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// TestModernMCPOverHTTP: one --http endpoint serves MCP 2026-07-28
// (server/discover, stateless requests, multi round-trip elicitation
// whose answer comes in a new request, cache hints) beside 2025-11-25
// (initialize, Mcp-Session-Id).
func TestModernMCPOverHTTP(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(selects(tool("trace_request", false), tool("write_report", true)))
	var mu sync.Mutex
	ran := 0
	fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		if req.MacroID == "write_report-0001" {
			if _, err := protocol.VerifyConfirmationToken([]byte("0123456789abcdef"), req.ConfirmationToken, req.MacroID); err != nil {
				return nil, protocol.Errorf(protocol.CodeConfirmationRequired, "write_report requires user confirmation")
			}
		}
		mu.Lock()
		ran++
		mu.Unlock()
		return &protocol.InvokeResponse{Result: map[string]any{"ok": true}, Observability: protocol.Observability{Summary: "ran " + req.MacroID}}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, err := mcpbridge.New(ctx, func(ctx context.Context) (*client.Session, error) { return dialFake(ctx, t, fake) }, &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := httptest.NewServer(b.HTTPHandler(nil))
	defer srv.Close()

	for _, v := range hostVersions {
		t.Run(v, func(t *testing.T) {
			asked := 0
			cl := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return accept(ctx, r)
				},
			})
			cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
			defer ccancel()
			cs, err := cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			list, err := cs.ListTools(cctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v >= "2026-07-28" && (list.TTLMs != 300000 || list.CacheScope != "public") {
				t.Errorf("tools/list cache hints ttlMs %d cacheScope %q", list.TTLMs, list.CacheScope)
			}
			call := func(name string, args map[string]any) string {
				res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if res.IsError {
					t.Fatalf("%s: %s", name, text(res))
				}
				return text(res)
			}
			if got := call("diagnose", diagnoseArgs); !strings.Contains(got, "trace_request(target*: string)") {
				t.Errorf("diagnose: %s", got)
			}
			if got := call(mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": "r1"}}); !strings.HasPrefix(got, "ran trace_request-0001") {
				t.Errorf("trace_request: %s", got)
			}
			mu.Lock()
			before := ran
			mu.Unlock()
			if got := call(mcpbridge.MetaToolName, map[string]any{"tool": "write_report", "arguments": map[string]any{"target": "r1"}}); !strings.HasPrefix(got, "ran write_report-0001") {
				t.Errorf("write_report: %s", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if asked != 1 || ran != before+1 {
				t.Errorf("asked %d times, ran %d times; want 1 and 1", asked, ran-before)
			}
		})
	}
}
