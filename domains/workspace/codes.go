package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"syscall"

	"github.com/manglecp/manglecp/internal/rootfile"
	"github.com/manglecp/manglecp/protocol"
)

// The workspace domain's error codes (Spec 09 section 3.2). Their details
// carry "suggestion" and "data"; data.path is always relative to its root.
const (
	CodePathOutsideRoots  protocol.Code = "x-path_outside_roots"
	CodeInvalidPath       protocol.Code = "x-invalid_path"
	CodeFileNotFound      protocol.Code = "x-file_not_found"
	CodeNotADirectory     protocol.Code = "x-not_a_directory"
	CodeIsADirectory      protocol.Code = "x-is_a_directory"
	CodeNotText           protocol.Code = "x-not_text"
	CodeFileTooLarge      protocol.Code = "x-file_too_large"
	CodeAnchorNotFound    protocol.Code = "x-anchor_not_found"
	CodeAnchorAmbiguous   protocol.Code = "x-anchor_ambiguous"
	CodeFileChanged       protocol.Code = "x-file_changed"
	CodeFileExists        protocol.Code = "x-file_exists"
	CodeDestinationExists protocol.Code = "x-destination_exists"
	CodeMoveIntoItself    protocol.Code = "x-move_into_itself"
	CodeCrossRootMove     protocol.Code = "x-cross_root_move"
	CodePermissionDenied  protocol.Code = "x-permission_denied"
	CodeInvalidPattern    protocol.Code = "x-invalid_pattern"
	CodeFileLinked        protocol.Code = "x-file_linked"
	CodeEditInvalid       protocol.Code = "x-edit_invalid"
	CodeEditExpired       protocol.Code = "x-edit_expired"
	CodeEditConflict      protocol.Code = "x-edit_conflict"
)

// Codes returns the domain's error codes with their HTTP status,
// recoverability and description, as the domain registers them.
func Codes() []protocol.CodeInfo {
	return []protocol.CodeInfo{
		{Code: CodePathOutsideRoots, HTTPStatus: http.StatusForbidden, Recoverable: true,
			Description: "The path is absolute, climbs out with .., follows a symbolic link out of its root, or names no root; data: path, roots"},
		{Code: CodeInvalidPath, HTTPStatus: http.StatusBadRequest, Recoverable: true,
			Description: "The path is empty, holds a NUL byte, or is too long (a name over 255 bytes, a path over 4096); data: reason"},
		{Code: CodeFileNotFound, HTTPStatus: http.StatusNotFound, Recoverable: true,
			Description: "No file or directory at the path (or at a parent of it); data: path"},
		{Code: CodeNotADirectory, HTTPStatus: http.StatusBadRequest, Recoverable: true,
			Description: "The operation needs a directory and the path (or a parent) is a file; data: path"},
		{Code: CodeIsADirectory, HTTPStatus: http.StatusBadRequest, Recoverable: true,
			Description: "The operation needs a file and the path is a directory; data: path"},
		{Code: CodeNotText, HTTPStatus: http.StatusUnsupportedMediaType, Recoverable: true,
			Description: "The file is not UTF-8 text; read it as media or inspect it with file_info; data: path, media_type"},
		{Code: CodeFileTooLarge, HTTPStatus: http.StatusRequestEntityTooLarge, Recoverable: true,
			Description: "The file or content exceeds the server's size limit for the operation; data: path, size, limit"},
		{Code: CodeAnchorNotFound, HTTPStatus: http.StatusUnprocessableEntity, Recoverable: true,
			Description: "The text to replace does not occur in the file; data: path, digest"},
		{Code: CodeAnchorAmbiguous, HTTPStatus: http.StatusUnprocessableEntity, Recoverable: true,
			Description: "The text to replace occurs more than once; data: path, count, lines"},
		{Code: CodeFileChanged, HTTPStatus: http.StatusConflict, Recoverable: true,
			Description: "The file changed since the client saw it: its digest differs from the one sent; data: path, expected_digest, actual_digest"},
		{Code: CodeEditInvalid, HTTPStatus: http.StatusForbidden, Recoverable: true,
			Description: "The edit id is not one this server issued to this identity for this file, change and diff (or the diff argument is not the previewed one); preview the edit again; data: edit"},
		{Code: CodeEditExpired, HTTPStatus: http.StatusGone, Recoverable: true,
			Description: "The edit id expired (ten minutes after the preview by default); preview the edit again; data: edit, expired_at"},
		{Code: CodeEditConflict, HTTPStatus: http.StatusUnprocessableEntity, Recoverable: true,
			Description: "An edit plan cannot be built: it holds no edit or changes nothing, two ranges of an edit overlap, or a range lies outside the file; data: path"},
		{Code: CodeFileExists, HTTPStatus: http.StatusConflict, Recoverable: true,
			Description: "A write would replace an existing file whose digest the client did not send; data: path, digest"},
		{Code: CodeDestinationExists, HTTPStatus: http.StatusConflict, Recoverable: true,
			Description: "The destination of a move exists; a move never overwrites; data: path"},
		{Code: CodeMoveIntoItself, HTTPStatus: http.StatusBadRequest, Recoverable: true,
			Description: "A directory cannot be moved into itself or below itself; data: from, to"},
		{Code: CodeCrossRootMove, HTTPStatus: http.StatusBadRequest, Recoverable: true,
			Description: "Source and destination of a move are in different roots; data: from, to"},
		{Code: CodeInvalidPattern, HTTPStatus: http.StatusBadRequest, Recoverable: true,
			Description: "The glob pattern cannot be used (an unclosed [ or {, or over 1000 bytes); data: pattern"},
		{Code: CodeFileLinked, HTTPStatus: http.StatusConflict, Recoverable: true,
			Description: "A write through a symbolic link would change a file that has other hard links (one may lie outside every root); data: path, links"},
		{Code: CodePermissionDenied, HTTPStatus: http.StatusForbidden, Recoverable: false,
			Description: "The operating system refused access to the path; data: path"},
	}
}

// maxDataString bounds the strings of error data: they can echo client
// input (a path of up to 4096 bytes).
const maxDataString = 512

// fail returns a domain error with a suggestion and data.
func fail(code protocol.Code, suggestion string, data map[string]any, format string, args ...any) *protocol.Error {
	for k, v := range data {
		if s, ok := v.(string); ok {
			data[k] = protocol.ClipN(s, maxDataString)
		}
	}
	return protocol.Errorf(code, format, args...).WithDetails(&protocol.ErrorDetails{Suggestion: suggestion, Data: data})
}

// fsError turns an error of an os.Root operation on shown (the client's
// form of the path) into a domain error. Errors without a domain code are
// returned wrapped, to become a masked execution_failed.
func (w *Workspace) fsError(shown string, err error) error {
	data := map[string]any{"path": shown}
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(CodeFileNotFound, "check the path with list_dir or find_files", data, "%s does not exist", quote(shown))
	case rootfile.IsEscape(err):
		data["roots"] = w.RootNames()
		return fail(CodePathOutsideRoots, "use a path inside a root; symbolic links may not leave it", data, "%s leads outside its root", quote(shown))
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		return fail(CodeNotADirectory, "a parent of the path is a file", data, "%s: a component is not a directory", quote(shown))
	case errors.As(err, &errno) && errno == syscall.EISDIR:
		return fail(CodeIsADirectory, "name a file", data, "%s is a directory", quote(shown))
	case errors.As(err, &errno) && errno == syscall.ENAMETOOLONG:
		return fail(CodeInvalidPath, "use shorter names", map[string]any{"reason": "too long"}, "the path is too long")
	case errors.Is(err, fs.ErrPermission):
		return fail(CodePermissionDenied, "ask the user to fix the permissions", data, "access to %s is denied", quote(shown))
	}
	return fmt.Errorf("%s: %w", shown, err)
}

// quote bounds and escapes client input echoed in a message.
func quote(s string) string {
	return fmt.Sprintf("%q", protocol.ClipN(s, 200))
}
