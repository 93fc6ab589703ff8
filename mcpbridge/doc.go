// Package mcpbridge makes any MangleCP server an MCP server: MCP hosts
// (Claude Desktop, Cursor, the MCP Inspector, any client of the MCP SDKs)
// see one small tool per intent of the server's manifest (or, past
// MaxPerIntentTools intents, one evaluate_intent tool whose intent
// argument names them: [Options.IntentTools]), call it with facts about
// their situation, and get back the few macro-tools the
// server's rules selected, which the bridge then registers as MCP tools
// (notifications/tools/list_changed). Calling one invokes it on the
// server; the bridge keeps the working state (the state deltas) and sends
// it with later evaluations. docs/mcp.md describes the mapping.
//
// The bridge speaks MangleCP through package client only: it never links
// the Mangle engine, so it bridges to any MangleCP server, remote (HTTP,
// WebSocket, stdio) or in the same process over an in-memory transport:
//
//	b, err := mcpbridge.New(ctx, func(ctx context.Context) (*client.Session, error) {
//		return client.Dial(ctx, "http://127.0.0.1:8080", nil)
//	}, &mcpbridge.Options{ConfirmationKey: key})
//	if err != nil { ... }
//	defer b.Close()
//	err = b.Run(ctx, &mcp.StdioTransport{})
//
// Safety: macro-tool annotations come from the safety block; a macro-tool
// that requires confirmation runs only after the user accepted through MCP
// elicitation, and the bridge signs the confirmation token only then. A
// host without elicitation gets an error result; the bridge never
// confirms on its own.
//
// Errors: every failure reaches the host as a tool result with isError and
// structuredContent {code, message, recoverable, retry_after_ms, details}
// from the one registry (package protocol), including the bridge's own
// codes (x-bridge_...). No Go error text reaches the host.
package mcpbridge
