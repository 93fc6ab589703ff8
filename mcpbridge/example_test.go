package mcpbridge_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/transport"
)

// Example bridges a MangleCP server (here a scripted one, served over an
// in-memory pair) to an MCP client: the client sees one tool per intent
// and invoke_macro_tool, a list that never changes; calling an intent
// tool answers with the macro-tools the server selected, which the client
// then calls through invoke_macro_tool.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server := newFake() // any transport.Handler, e.g. a *manglecp.Server
	server.setEvaluate(selects(tool("trace_request", false)))

	// The bridge dials the server through package client.
	b, err := mcpbridge.New(ctx, func(ctx context.Context) (*client.Session, error) {
		c, s := transport.NewMemoryPair()
		go func() { _ = transport.ServeSession(ctx, server, s, nil) }()
		return client.NewSession(ctx, c, nil)
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	// An MCP host connects (here the Go SDK's client, in memory).
	hostSide, bridgeSide := mcp.NewInMemoryTransports()
	go func() { _ = b.Run(ctx, bridgeSide) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, hostSide, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	printTools := func() {
		res, _ := cs.ListTools(ctx, nil)
		var names []string
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		fmt.Println(strings.Join(names, " "))
	}
	printText := func(res *mcp.CallToolResult) { fmt.Println(res.Content[0].(*mcp.TextContent).Text) }
	printTools()
	res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "diagnose", Arguments: map[string]any{
		"facts": []any{[]any{"url", "https://app.example.com"}},
	}})
	printText(res)
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpbridge.MetaToolName, Arguments: map[string]any{
		"tool": "trace_request", "arguments": map[string]any{"target": "r1"},
	}})
	printText(res)
	printTools()
	// Output:
	// diagnose invoke_macro_tool observe
	// diagnose: the rules selected 1 tool.
	// - trace_request(target*: string): The trace_request tool.
	// Call one with invoke_macro_tool.
	// trace_request: done
	// {"ok":true}
	// diagnose invoke_macro_tool observe
}
