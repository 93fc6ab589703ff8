package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// ErrorOf maps any error of a bridge call to a registry error: a server's
// error answer is passed on as it came (message bounded); a broken or
// unreachable connection is x-bridge_server_unreachable; a reply that is
// not MangleCP is x-bridge_protocol_mismatch; a call that ended with its
// context is cancelled; anything else is internal_error. The message never
// carries Go error text, a stack or a path: callers log err itself.
func ErrorOf(err error) *protocol.Error {
	var ce *client.Error
	var te *client.TransportError
	var pe *protocol.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce) && ce.Payload != nil:
		out := *ce.Payload
		out.Message = bounded(out.Message, 2000)
		return &out
	case errors.As(err, &te):
		if te.Op == "decode" || te.Op == "manifest" {
			return protocol.Errorf(CodeProtocolMismatch, "the server answered with something that is not a MangleCP %s message", protocol.Version)
		}
		return protocol.Errorf(CodeUnreachable, "the MangleCP server cannot be reached (%s failed); the bridge reconnects on the next call", te.Op)
	case errors.Is(err, client.ErrClosed):
		return protocol.Errorf(CodeUnreachable, "the connection to the MangleCP server was closed; the bridge reconnects on the next call")
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, context.Canceled):
		return protocol.Errorf(protocol.CodeCancelled, "the call was cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return protocol.Errorf(protocol.CodeCancelled, "the call ran out of time")
	}
	return protocol.Errorf(protocol.CodeInternalError, "the bridge failed; the details are in its log")
}

// transportFailure reports whether err means the MangleCP connection is
// gone (so the bridge should dial again).
func transportFailure(err error) bool {
	var te *client.TransportError
	return errors.As(err, &te) || errors.Is(err, client.ErrClosed)
}

// ErrorMetaKey is the _meta key of an error result that holds the
// registry's fields for programs (errorContent). Hosts do not pass _meta
// to the model, which reads the one text item.
const ErrorMetaKey = "manglecp/error"

// errorContent is the _meta entry of an error result: the fields of a
// MangleCP error payload, always all present.
type errorContent struct {
	Code         protocol.Code          `json:"code"`
	Message      string                 `json:"message"`
	Recoverable  bool                   `json:"recoverable"`
	RetryAfterMS *int64                 `json:"retry_after_ms"`
	Details      *protocol.ErrorDetails `json:"details"`
}

// errorResult turns a registry error into an MCP tool result with
// isError and one text item for the model, like every other answer (no
// structuredContent copy: hosts pass both to the model, so a copy is paid
// twice); the error's fields are in _meta under ErrorMetaKey for
// programs. recoverable always comes from the registry for registered
// codes.
func errorResult(e *protocol.Error) *mcp.CallToolResult {
	rec := e.Recoverable
	if _, ok := protocol.Lookup(e.Code); ok {
		rec = e.Code.Recoverable()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "error %s: %s", e.Code, e.Message)
	if d := e.Details; d != nil {
		for i, v := range d.Violations {
			if i == 10 {
				fmt.Fprintf(&b, "\n(%d more)", len(d.Violations)-i)
				break
			}
			fmt.Fprintf(&b, "\nfact %d (%s): %s", v.FactIndex, bounded(v.Predicate, 128), bounded(v.Message, 300))
			if v.Suggestion != "" {
				fmt.Fprintf(&b, " (%s)", bounded(v.Suggestion, 200))
			}
		}
		for i, s := range d.SchemaErrors {
			if i == 10 {
				fmt.Fprintf(&b, "\n(%d more)", len(d.SchemaErrors)-i)
				break
			}
			fmt.Fprintf(&b, "\n%s: %s", bounded(s.Path, 200), bounded(s.Message, 300))
		}
		if d.Suggestion != "" {
			fmt.Fprintf(&b, "\nsuggestion: %s", bounded(d.Suggestion, 500))
		}
	}
	if e.RetryAfterMS != nil {
		fmt.Fprintf(&b, "\n(retry after %d ms)", *e.RetryAfterMS)
	}
	if rec {
		b.WriteString("\n(recoverable: change the call and try again)")
	}
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: b.String()}},
		Meta:    mcp.Meta{ErrorMetaKey: errorContent{Code: e.Code, Message: e.Message, Recoverable: rec, RetryAfterMS: e.RetryAfterMS, Details: e.Details}},
	}
}
