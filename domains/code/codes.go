package code

import (
	"net/http"

	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

// The code domain's own error codes (Spec 09 section 3.2), beside the
// workspace domain's, which it registers too (its file jobs are the
// workspace domain's). Details carry "suggestion" and "data".
const (
	CodeServerUnavailable protocol.Code = "x-language_server_unavailable"
	CodeServerFailed      protocol.Code = "x-language_server_failed"
	CodeSymbolNotFound    protocol.Code = "x-symbol_not_found"
	CodeSymbolAmbiguous   protocol.Code = "x-symbol_ambiguous"
	CodeRenameRefused     protocol.Code = "x-rename_refused"
	CodeEditOutsideRoot   protocol.Code = "x-edit_outside_root"
	CodeNotMovable        protocol.Code = "x-not_movable"
	CodeNothingToChange   protocol.Code = "x-nothing_to_change"
	CodeTooManyFiles      protocol.Code = "x-too_many_files"
)

// Codes returns the domain's error codes: the workspace domain's and its
// own, as the domain registers them.
func Codes() []protocol.CodeInfo {
	return append(workspace.Codes(), OwnCodes()...)
}

func OwnCodes() []protocol.CodeInfo {
	return []protocol.CodeInfo{
		{Code: CodeServerUnavailable, HTTPStatus: http.StatusServiceUnavailable, Recoverable: true,
			Description: "No language server answers for the language: none is installed, the root has too many files, it failed and waits before starting again, or it is still starting or busy and the request could not wait longer (retry after retry_after_ms); text search still works; data: language, reason"},
		{Code: CodeServerFailed, HTTPStatus: http.StatusBadGateway, Recoverable: true,
			Description: "The language server did not answer in time, exited, or answered with an error; data: language, method"},
		{Code: CodeSymbolNotFound, HTTPStatus: http.StatusNotFound, Recoverable: true,
			Description: "No symbol of that exact name is defined inside the root; data: name"},
		{Code: CodeSymbolAmbiguous, HTTPStatus: http.StatusUnprocessableEntity, Recoverable: true,
			Description: "Several symbols have that name; pass path (and line) to choose one; data: name, candidates"},
		{Code: CodeRenameRefused, HTTPStatus: http.StatusUnprocessableEntity, Recoverable: true,
			Description: "The language server refused the rename (not a valid identifier, a conflict, a name it cannot rename); data: name, new_name, reason"},
		{Code: CodeEditOutsideRoot, HTTPStatus: http.StatusUnprocessableEntity, Recoverable: false,
			Description: "The change would touch files outside the root (the standard library, a dependency); nothing was changed; data: count"},
		{Code: CodeNotMovable, HTTPStatus: http.StatusBadRequest, Recoverable: true,
			Description: "move_code moves a Go package directory or a Python module or package; data: path, reason"},
		{Code: CodeNothingToChange, HTTPStatus: http.StatusUnprocessableEntity, Recoverable: true,
			Description: "The change changes nothing (the imports are already organised, the new name is the old one); data: path"},
		{Code: CodeTooManyFiles, HTTPStatus: http.StatusRequestEntityTooLarge, Recoverable: false,
			Description: "The change or the project exceeds the server's bound on files; data: limit"},
	}
}

// fail returns a domain error with a suggestion and data.
func fail(code protocol.Code, suggestion string, data map[string]any, format string, args ...any) *protocol.Error {
	for k, v := range data {
		if s, ok := v.(string); ok {
			data[k] = protocol.ClipN(s, 512)
		}
	}
	return protocol.Errorf(code, format, args...).WithDetails(&protocol.ErrorDetails{Suggestion: suggestion, Data: data})
}
