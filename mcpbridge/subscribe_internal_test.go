package mcpbridge

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/manglecp/manglecp/protocol"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSubscribeRegistersEarlierSelection: a macro-tool selected before the
// host's subscription to tool list changes arrived (reachable then only
// through the meta-tool) becomes an MCP tool when it arrives, before the
// meta-tool leaves; one that expired meanwhile does not.
func TestSubscribeRegistersEarlierSelection(t *testing.T) {
	b := &Bridge{opts: Options{Mode: ModeAuto, Logger: slog.New(slog.DiscardHandler)}, manifest: &protocol.Manifest{}}
	ss := b.newSession()
	schema := map[string]any{"type": "object"}
	ss.tools = map[string]*macroEntry{
		"early":   {name: "early", tool: protocol.MacroTool{Name: "early", MacroID: "early-1", InputSchema: schema}},
		"expired": {name: "expired", tool: protocol.MacroTool{Name: "expired", MacroID: "expired-1", InputSchema: schema}, expires: time.Now().Add(-time.Minute)},
	}
	ss.setSubscribed()

	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = ss.srv.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, tl := range res.Tools {
		listed[tl.Name] = true
	}
	if !listed["early"] || listed["expired"] || listed[MetaToolName] {
		t.Errorf("listed %v: want early, neither expired nor %s", listed, MetaToolName)
	}
}
