// Command oddfs is a small MCP server with the MCP filesystem server's
// tool shapes (read_text_file, search_files, edit_file, create_directory,
// move_file) over one directory, that answers oddly or fails on purpose,
// for the tests of the gateway's composed tools (compose_test.go): the
// gateway must never leave a file half edited without saying so.
//
//	oddfs ROOT
//
// ODDFS_MODE chooses how it misbehaves:
//
//	chunks    read_text_file answers a file in several text items (no
//	          structured content), and search_files answers relative paths
//	          and paths outside ROOT among the real ones
//	numbered  read_text_file answers "N\tline" lines (as cat -n)
//	failmid   edit_file of the second file it edits writes its first edit,
//	          then fails
//	liar      edit_file of the second file it edits says it succeeded and
//	          writes nothing
//	crlf      as chunks, and edit_file writes "\n" line endings whatever
//	          the file had (as the MCP filesystem server does)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: oddfs ROOT")
		os.Exit(2)
	}
	root, err := filepath.Abs(os.Args[1])
	if err != nil {
		os.Exit(2)
	}
	o := &odd{root: root, mode: os.Getenv("ODDFS_MODE")}
	if err := o.server().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

type odd struct {
	root, mode string
	mu         sync.Mutex
	edits      int // edit_file calls so far
}

func obj(props map[string]any, required ...string) map[string]any {
	r := make([]any, len(required))
	for i, x := range required {
		r[i] = x
	}
	return map[string]any{"type": "object", "properties": props, "required": r}
}

var str = map[string]any{"type": "string"}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func failed(format string, args ...any) *mcp.CallToolResult {
	r := text(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

func args(req *mcp.CallToolRequest) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	return m
}

// inside is p if it lies in the root.
func (o *odd) inside(p string) (string, bool) {
	p = filepath.Clean(p)
	return p, p == o.root || strings.HasPrefix(p, o.root+string(filepath.Separator))
}

func (o *odd) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "odd-filesystem", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	s.AddTool(&mcp.Tool{Name: "read_text_file", Description: "Read a file.", InputSchema: obj(map[string]any{"path": str}, "path"), Annotations: ro}, o.read)
	s.AddTool(&mcp.Tool{Name: "search_files", Description: "Find paths matching a glob.", InputSchema: obj(map[string]any{"path": str, "pattern": str}, "path", "pattern"), Annotations: ro}, o.search)
	s.AddTool(&mcp.Tool{Name: "edit_file", Description: "Replace texts in a file.", InputSchema: obj(map[string]any{"path": str, "edits": map[string]any{
		"type": "array", "items": obj(map[string]any{"oldText": str, "newText": str}, "oldText", "newText")}}, "path", "edits")}, o.edit)
	s.AddTool(&mcp.Tool{Name: "create_directory", Description: "Make a directory.", InputSchema: obj(map[string]any{"path": str}, "path")}, o.mkdir)
	s.AddTool(&mcp.Tool{Name: "move_file", Description: "Move a file.", InputSchema: obj(map[string]any{"source": str, "destination": str}, "source", "destination")}, o.move)
	return s
}

func (o *odd) read(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, ok := o.inside(fmt.Sprint(args(req)["path"]))
	if !ok {
		return failed("access denied"), nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return failed("cannot read: %v", err), nil
	}
	content := string(b)
	switch o.mode {
	case "numbered":
		lines := strings.Split(content, "\n")
		for i := range lines {
			lines[i] = strconv.Itoa(i+1) + "\t" + lines[i]
		}
		return text(strings.Join(lines, "\n")), nil
	case "chunks", "crlf":
		res := &mcp.CallToolResult{}
		for len(content) > 0 {
			n := min(7, len(content))
			res.Content = append(res.Content, &mcp.TextContent{Text: content[:n]})
			content = content[n:]
		}
		return res, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: content}}, StructuredContent: map[string]any{"content": content}}, nil
}

func (o *odd) search(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a := args(req)
	dir, ok := o.inside(fmt.Sprint(a["path"]))
	if !ok {
		return failed("access denied"), nil
	}
	pattern := fmt.Sprint(a["pattern"])
	var found []string
	_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if m, _ := doublestar.Match(pattern, filepath.ToSlash(rel)); m {
			if o.mode == "chunks" || o.mode == "crlf" {
				found = append(found, filepath.ToSlash(rel)) // relative, unlike the real server
			} else {
				found = append(found, p)
			}
		}
		return nil
	})
	if o.mode == "chunks" || o.mode == "crlf" {
		found = append(found, "/etc/passwd", "../outside.py", "No matches found here")
	}
	return text(strings.Join(found, "\n")), nil
}

func (o *odd) edit(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a := args(req)
	p, ok := o.inside(fmt.Sprint(a["path"]))
	if !ok {
		return failed("access denied"), nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return failed("cannot read: %v", err), nil
	}
	o.mu.Lock()
	o.edits++
	n := o.edits
	o.mu.Unlock()
	content := string(b)
	if o.mode == "crlf" {
		content = strings.ReplaceAll(content, "\r\n", "\n")
	}
	items, _ := a["edits"].([]any)
	for i, it := range items {
		m, _ := it.(map[string]any)
		old, _ := m["oldText"].(string)
		repl, _ := m["newText"].(string)
		if o.mode == "crlf" {
			old, repl = strings.ReplaceAll(old, "\r\n", "\n"), strings.ReplaceAll(repl, "\r\n", "\n")
		}
		if !strings.Contains(content, old) {
			return failed("no match for edit %d", i), nil
		}
		content = strings.Replace(content, old, repl, 1)
		if o.mode == "failmid" && n == 2 && i == 0 {
			_ = os.WriteFile(p, []byte(content), 0o644)
			return failed("disk full after the first edit"), nil
		}
	}
	if o.mode == "liar" && n == 2 {
		return text("edited"), nil
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		return failed("cannot write"), nil
	}
	return text("edited " + path.Base(p)), nil
}

func (o *odd) mkdir(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p, ok := o.inside(fmt.Sprint(args(req)["path"]))
	if !ok {
		return failed("access denied"), nil
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return failed("cannot make it"), nil
	}
	return text("made " + path.Base(p)), nil
}

func (o *odd) move(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a := args(req)
	src, ok1 := o.inside(fmt.Sprint(a["source"]))
	dst, ok2 := o.inside(fmt.Sprint(a["destination"]))
	if !ok1 || !ok2 {
		return failed("access denied"), nil
	}
	if err := os.Rename(src, dst); err != nil {
		return failed("cannot move"), nil
	}
	return text("moved " + path.Base(src)), nil
}
