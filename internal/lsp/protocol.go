package lsp

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// The subset of the Language Server Protocol 3.17 the client uses.

// Position is a zero-based line and character offset (UTF-16 code units,
// the protocol's default encoding).
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is a half-open range of positions.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Location is a range in a document.
type Location struct {
	URI   string `json:"uri"`
	Range Range  `json:"range"`
}

// TextEdit replaces a range with new text.
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// TextDocumentIdentifier names a document.
type TextDocumentIdentifier struct {
	URI string `json:"uri"`
}

// TextDocumentPositionParams is a position in a document.
type TextDocumentPositionParams struct {
	TextDocument TextDocumentIdentifier `json:"textDocument"`
	Position     Position               `json:"position"`
}

// SymbolInformation is one answer of workspace/symbol (both the older
// SymbolInformation and WorkspaceSymbol shapes decode into it; a
// WorkspaceSymbol without a range has a zero range).
type SymbolInformation struct {
	Name          string   `json:"name"`
	Kind          int      `json:"kind"`
	Location      Location `json:"location"`
	ContainerName string   `json:"containerName,omitempty"`
}

// Diagnostic is a problem a server reports in a document.
type Diagnostic struct {
	Range    Range           `json:"range"`
	Severity int             `json:"severity,omitempty"`
	Code     json.RawMessage `json:"code,omitempty"`
	Source   string          `json:"source,omitempty"`
	Message  string          `json:"message"`
}

// PublishDiagnosticsParams is textDocument/publishDiagnostics.
type PublishDiagnosticsParams struct {
	URI         string       `json:"uri"`
	Version     *int         `json:"version,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// WorkspaceEdit is a change to several documents. Servers send either
// Changes or DocumentChanges.
type WorkspaceEdit struct {
	Changes         map[string][]TextEdit `json:"changes,omitempty"`
	DocumentChanges []DocumentChange      `json:"documentChanges,omitempty"`
}

// DocumentChange is one entry of WorkspaceEdit.documentChanges: a
// TextDocumentEdit, or a create, rename or delete of a file (Kind set).
type DocumentChange struct {
	// TextDocumentEdit
	TextDocument *struct {
		URI     string `json:"uri"`
		Version *int   `json:"version"`
	} `json:"textDocument,omitempty"`
	Edits []TextEdit `json:"edits,omitempty"`
	// CreateFile, RenameFile, DeleteFile
	Kind   string `json:"kind,omitempty"`
	URI    string `json:"uri,omitempty"`
	OldURI string `json:"oldUri,omitempty"`
	NewURI string `json:"newUri,omitempty"`
}

// CodeAction is an answer of textDocument/codeAction (a Command alone
// decodes with Edit nil and Command set).
type CodeAction struct {
	Title   string          `json:"title"`
	Kind    string          `json:"kind,omitempty"`
	Edit    *WorkspaceEdit  `json:"edit,omitempty"`
	Command json.RawMessage `json:"command,omitempty"`
}

// Command is a command a server can execute (workspace/executeCommand).
type Command struct {
	Title     string            `json:"title"`
	Command   string            `json:"command"`
	Arguments []json.RawMessage `json:"arguments,omitempty"`
}

// Symbol kinds (LSP SymbolKind) by number, for answers.
var symbolKinds = []string{"", "file", "module", "namespace", "package", "class", "method", "property",
	"field", "constructor", "enum", "interface", "function", "variable", "constant", "string", "number",
	"boolean", "array", "object", "key", "null", "enum_member", "struct", "event", "operator", "type_parameter"}

// SymbolKindName is the lower-case name of an LSP SymbolKind.
func SymbolKindName(k int) string {
	if k > 0 && k < len(symbolKinds) {
		return symbolKinds[k]
	}
	return "symbol"
}

// SeverityName is the name of a diagnostic severity (1 error ... 4 hint).
func SeverityName(s int) string {
	switch s {
	case 1:
		return "error"
	case 2:
		return "warning"
	case 3:
		return "information"
	case 4:
		return "hint"
	}
	return "error" // the protocol's default when a server omits it
}

// FileURI is the file: URI of an absolute path.
func FileURI(abs string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return u.String()
}

// URIPath is the absolute path of a file: URI.
func URIPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	if u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return "", fmt.Errorf("lsp: not a local file URI: %.200q", uri)
	}
	if !strings.HasPrefix(u.Path, "/") {
		return "", fmt.Errorf("lsp: not an absolute file URI: %.200q", uri)
	}
	return filepath.FromSlash(u.Path), nil
}
