package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/manglecp/manglecp/internal/schema"
	"github.com/manglecp/manglecp/internal/schemaerr"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/upstream"
)

// The gateway's error codes (Spec 09 section 3.2).
const (
	CodeUnreachable      protocol.Code = "x-upstream_unreachable"
	CodeTimeout          protocol.Code = "x-upstream_timeout"
	CodeToolFailed       protocol.Code = "x-upstream_tool_failed"
	CodeProtocolMismatch protocol.Code = "x-upstream_protocol_mismatch"
	CodeInvalidArguments protocol.Code = "x-upstream_invalid_arguments"
	CodeBusy             protocol.Code = "x-upstream_busy"
	CodeAnswerTooLarge   protocol.Code = "x-upstream_answer_too_large"
	// Codes of the composed tools (a replace previewed, then applied).
	CodeEditUnknown    protocol.Code = "x-upstream_edit_unknown"
	CodeFileChanged    protocol.Code = "x-upstream_file_changed"
	CodeEditIncomplete protocol.Code = "x-upstream_edit_incomplete"
)

// Codes returns the gateway's error codes as it registers them.
func Codes() []protocol.CodeInfo {
	return []protocol.CodeInfo{
		{Code: CodeUnreachable, HTTPStatus: http.StatusServiceUnavailable, Recoverable: true,
			Description: "The upstream MCP server could not be started or reached, or it stopped during the call; it is restarted with backoff; data: upstream"},
		{Code: CodeTimeout, HTTPStatus: http.StatusGatewayTimeout, Recoverable: true,
			Description: "The upstream MCP server did not answer within the call timeout; the call was cancelled; data: upstream"},
		{Code: CodeToolFailed, HTTPStatus: http.StatusBadGateway, Recoverable: true,
			Description: "The upstream tool answered with an error (its message bounded, without stack traces or paths); data: upstream, tool"},
		{Code: CodeProtocolMismatch, HTTPStatus: http.StatusBadGateway, Recoverable: false,
			Description: "The upstream does not speak a supported MCP version or sent a message over the gateway's bounds; data: upstream"},
		{Code: CodeInvalidArguments, HTTPStatus: http.StatusBadRequest, Recoverable: true,
			Description: "The arguments do not match the upstream tool's own input schema (checked before the call); details: schema_errors"},
		{Code: CodeBusy, HTTPStatus: http.StatusServiceUnavailable, Recoverable: true,
			Description: "The upstream serves as many identities as the server allows, each with a session of its own; retry after retry_after_ms; data: upstream"},
		{Code: CodeAnswerTooLarge, HTTPStatus: http.StatusBadGateway, Recoverable: true,
			Description: "The upstream's answer was over the gateway's bound for one message and was discarded (the upstream session goes on); ask for less; data: upstream"},
		{Code: CodeEditUnknown, HTTPStatus: http.StatusGone, Recoverable: true,
			Description: "No previewed edit with this diff is held for the caller (applied already, expired, or never previewed); nothing was written; preview it again"},
		{Code: CodeFileChanged, HTTPStatus: http.StatusConflict, Recoverable: true,
			Description: "A file of a previewed edit changed upstream since the preview; nothing was written; preview it again; data: path"},
		{Code: CodeEditIncomplete, HTTPStatus: http.StatusBadGateway, Recoverable: true,
			Description: "A previewed edit did not apply upstream (a file's edit failed or did not read back as previewed); the files already written were put back; data: upstream, failed, restored, not_restored (the files that could not be)"},
	}
}

// fail returns a domain error with a suggestion and data.
func fail(code protocol.Code, suggestion string, data map[string]any, format string, args ...any) *protocol.Error {
	return protocol.Errorf(code, format, args...).WithDetails(&protocol.ErrorDetails{Suggestion: suggestion, Data: data})
}

// upstreamError turns a failed call into a domain error; a cancelled
// call's context error is returned as is.
func upstreamError(err error) error {
	var e *upstream.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("upstream call: %w", err)
	}
	data := map[string]any{"upstream": e.Upstream}
	var pe *protocol.Error
	switch e.Kind {
	case upstream.Timeout:
		pe = fail(CodeTimeout, "try again, or with less to do", data, "%s", e.Message)
	case upstream.ToolFailed:
		pe = fail(CodeToolFailed, "read the message, fix the arguments or the situation, and call again", data, "%s", e.Message)
	case upstream.ProtocolMismatch:
		pe = fail(CodeProtocolMismatch, "the upstream cannot be used as configured; tell the user", data, "%s", e.Message)
	case upstream.Busy:
		pe = fail(CodeBusy, "retry after retry_after_ms", data, "%s", e.Message)
	case upstream.AnswerTooLarge:
		pe = fail(CodeAnswerTooLarge, "ask for less: a narrower query, a smaller range, fewer items", data, "%s", e.Message)
	default:
		pe = fail(CodeUnreachable, "try again later", data, "%s", e.Message)
	}
	if e.RetryAfter > 0 {
		pe = pe.WithRetryAfter(e.RetryAfter.Milliseconds())
	}
	return pe
}

// validate checks args against the upstream tool's input schema; the
// errors are bounded and worded as the server's (internal/schemaerr).
func validate(sch *schema.Schema, args map[string]any) []protocol.SchemaError {
	if args == nil {
		args = map[string]any{}
	}
	err := sch.Validate(map[string]any(args))
	if err == nil {
		return nil
	}
	return schemaerr.Errors(err)
}

func invalidArguments(e *entry, errs []protocol.SchemaError) *protocol.Error {
	pe := protocol.Errorf(CodeInvalidArguments, "the arguments of %s do not match its input schema", e.name)
	pe.Details = &protocol.ErrorDetails{SchemaErrors: errs, Suggestion: "fix the arguments named in schema_errors and call again"}
	return pe
}
