// Package upstream supervises upstream MCP servers for the gateway domain
// (domains/gateway): it starts each one (a command over stdio, or a
// streamable-HTTP URL) with the MCP Go SDK client, lists its tools, calls
// them with a per-call timeout, and restarts a command that died with
// exponential backoff.
//
// Everything an upstream sends is bounded before it is buffered: one
// JSON-RPC message (a stdio line or an HTTP event) by
// [Config.MaxMessageBytes], the tool list by [Config.MaxTools], each line
// of its stderr (copied to the server's log, rate limited) by
// maxStderrLine. Failures are [*Error] values of four kinds (unreachable,
// timeout, tool failed, protocol mismatch) whose Message is bounded and
// free of the upstream's stack traces and file paths; the detail stays in
// the log.
//
// The package knows MCP and nothing of MangleCP rules: the gateway domain
// turns what it lists into server facts and its errors into registry
// codes.
package upstream
