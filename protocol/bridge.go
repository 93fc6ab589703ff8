package protocol

import "net/http"

// The codes of the MCP bridge (package mcpbridge): custom codes (Spec 09
// section 3.2) for failures that happen between an MCP host and a MangleCP
// server rather than inside the server. They are registered beside the
// standard codes, so [Lookup], [Code.HTTPStatus] and [Code.Recoverable]
// know them, and docs/errors.md lists them; [Codes] keeps returning only
// the standard codes of Spec 09.
const (
	// CodeBridgeServerUnreachable: the MangleCP server could not be
	// reached, or the connection to it broke.
	CodeBridgeServerUnreachable Code = "x-bridge_server_unreachable"
	// CodeBridgeProtocolMismatch: the server does not speak this MangleCP
	// version, or answered with something that is not MangleCP.
	CodeBridgeProtocolMismatch Code = "x-bridge_protocol_mismatch"
	// CodeBridgeInvalidArguments: the MCP tool arguments do not have the
	// shape the bridge's tool declares (for example facts that are not a
	// list of fact objects).
	CodeBridgeInvalidArguments Code = "x-bridge_invalid_arguments"
	// CodeBridgeUnknownTool: invoke_macro_tool named a macro-tool that no
	// evaluation of this session selected, or one that was superseded.
	CodeBridgeUnknownTool Code = "x-bridge_unknown_tool"
	// CodeBridgeConfirmationDeclined: the user declined (or dismissed) the
	// confirmation the bridge asked for through MCP elicitation.
	CodeBridgeConfirmationDeclined Code = "x-bridge_confirmation_declined"
	// CodeBridgeConfirmationUnavailable: the macro-tool requires user
	// confirmation and the bridge cannot ask for it: the host does not
	// support elicitation, or the bridge holds no confirmation key.
	CodeBridgeConfirmationUnavailable Code = "x-bridge_confirmation_unavailable"
	// CodeBridgeSchemaRefused: the server's input schema of the macro-tool
	// is not accepted: it refers to a document outside itself (a file, a
	// network address), or it is too large or too costly to check
	// arguments against. The bridge invokes nothing.
	CodeBridgeSchemaRefused Code = "x-bridge_schema_refused"
)

// bridgeRegistry holds the codes of the MCP bridge, in the order
// docs/errors.md lists them.
var bridgeRegistry = []CodeInfo{
	{CodeBridgeServerUnreachable, "bridge", http.StatusBadGateway, true, "The MangleCP server cannot be reached or the connection broke; the bridge reconnects on the next call"},
	{CodeBridgeProtocolMismatch, "bridge", http.StatusBadGateway, false, "The server does not speak this MangleCP version or answered with something that is not MangleCP"},
	{CodeBridgeInvalidArguments, "bridge", http.StatusBadRequest, true, "The MCP tool arguments do not have the shape the tool declares"},
	{CodeBridgeUnknownTool, "bridge", http.StatusNotFound, true, "No evaluation of this session selected the named macro-tool, or a later one superseded it"},
	{CodeBridgeConfirmationDeclined, "bridge", http.StatusForbidden, false, "The user declined the confirmation asked through MCP elicitation"},
	{CodeBridgeConfirmationUnavailable, "bridge", http.StatusForbidden, false, "The macro-tool requires user confirmation and the host cannot be asked (no elicitation support or no confirmation key)"},
	{CodeBridgeSchemaRefused, "bridge", http.StatusBadGateway, false, "The server's input schema of the macro-tool is not accepted: it refers outside itself, or is too large or too costly to check"},
}

// BridgeCodes returns a copy of the registry entries of the MCP bridge's
// custom codes, in documentation order.
func BridgeCodes() []CodeInfo {
	out := make([]CodeInfo, len(bridgeRegistry))
	copy(out, bridgeRegistry)
	return out
}

// MCPMapping describes how the MCP bridge hands an error of code c to an
// MCP host: as a tool result with isError (one text item, the fields in
// _meta), unless
// the code is handled otherwise (confirmation through elicitation, a
// cancelled call). It is the MCP column of docs/errors.md.
func MCPMapping(c Code) string {
	switch c {
	case CodeCancelled:
		return "no result: the host's `notifications/cancelled` ended the call (MangleCP `cancel` sent)"
	case CodeConfirmationRequired:
		return "never shown: the bridge asks the user through elicitation and signs a token; `isError` only if the token is refused"
	case CodeServerNotReady, CodeRateLimited:
		return "`isError` tool result after the bridge's retries (up to 5, honoring `retry_after_ms`)"
	case CodeBridgeServerUnreachable, CodeBridgeProtocolMismatch:
		return "`isError` tool result; at start-up `manglecp mcp` exits 3 with the message on stderr"
	case CodeBridgeConfirmationDeclined, CodeBridgeConfirmationUnavailable, CodeBridgeSchemaRefused:
		return "`isError` tool result; the macro-tool was not invoked"
	}
	return "`isError` tool result"
}
