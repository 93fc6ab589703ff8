// Package mcpbridge makes any MangleCP server an MCP server for hosts
// (Claude Desktop, Cursor, the MCP Inspector, any client of the MCP SDKs)
// in as few model tokens as a whole job allows. Hosts see one small tool
// per intent of the server's manifest (or, past MaxPerIntentTools
// intents, one evaluate_intent tool whose intent argument names them:
// [Options.IntentTools]) and invoke_macro_tool, a tool list that never
// changes as a side effect of a call, for every host and MCP version. A
// model calls an intent tool with facts about its situation; the answer
// describes the few macro-tools the server's rules selected, once, as
// short signatures; the model calls one through invoke_macro_tool, which
// the bridge checks against the tool's full input schema and invokes on
// the server. Answers are one text item without bookkeeping; the bridge
// keeps the macro_ids and the working state (the state deltas, resource
// manglecp://state) and sends it with later evaluations. A macro-tool's
// answer carries the selection of the intents it suggests next (and the
// one tool the rules decided for one of them follows at once: it runs, or
// the user is asked whether it may), a tool the selection lacks is reached
// in the same call, and a tool the rules fully decided runs at once. [ModeDynamic] (opt-in, refused on MCP 2026-07-28)
// registers the selected macro-tools as MCP tools instead.
// docs/mcp.md describes the mapping; docs/TOKENS.md what a job costs.
//
// Binary results (a screenshot: an object with "encoding": "base64", a
// "data" string and a "media_type") never reach the model as base64: the
// bridge keeps the bytes as a resource of the MCP session,
// manglecp://results/<n>.<ext> ([ResultURIPrefix]; at most [MaxResults] of
// at most [MaxResultBytes] in all, the oldest evicted first), and the answer
// shows the object with "uri" in place of "data", followed by a
// resource_link item on MCP 2025-06-18 and later.
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
// elicitation, asked with the tool, its side effects and its arguments,
// and the bridge signs the confirmation token only then. A host without
// elicitation gets an error result; the bridge never confirms on its own.
//
// # One tools/call, from request to answer
//
// The files follow the path of a call. bridge.go holds the one MangleCP
// connection, dialled on demand; session.go an MCP session's lifecycle
// (its tools and resources, the start intent, expired tools dropped
// before each tools/list and tools/call); call.go the path of one
// tools/call:
//
//   - An intent tool: the intent is evaluated with the working state
//     (evaluate.go: the answer's tools become the session's selection),
//     the answer renders them (render.go, as compact signatures:
//     compact.go, their full definitions fetched when the server condensed
//     them: disclose.go), and the autoRun step (steps.go) runs the one
//     tool the rules fully decided, if it needs no one's consent.
//   - invoke_macro_tool goes through five stages, each of which may give
//     the answer: resume (the call brings the user's answer to a question
//     a following tool asked), resolve (the tool of the selection, or
//     reached by evaluating the intent that selects it: the reach step),
//     check (the fixed arguments filled in, the schema checked), consent
//     (consent.go: the user asked through elicitation, or the answer
//     checked and a confirmation token signed) and run (the server runs
//     it; the state delta joins the working state; the withNext step
//     evaluates the intents it suggests and lets the one tool the rules
//     decided follow at once).
//
// What the bridge does on its own is explicit: an evaluation says whether
// its tools replace or join the selection (selection), a call says who made
// it (caller: only the model's own call has a tool follow it), the
// consent stage where the call stands (consentState), and the rules'
// answer what may run without the model (decide, autonomy).
//
// Errors: every failure reaches the host as a tool result with isError and
// one text item ("error CODE: message", the details that change the call),
// with {code, message, recoverable, retry_after_ms, details} from the one
// registry (package protocol) in _meta under ErrorMetaKey for programs,
// including the bridge's own codes (x-bridge_...). No Go error text
// reaches the host.
package mcpbridge
