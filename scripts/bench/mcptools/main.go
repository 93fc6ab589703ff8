// Command mcptools is the comparison server of scripts/bench-compare.sh: a
// minimal MCP server built with the official Go SDK that lists 14 tools
// shaped like those of the reference MCP filesystem server (same names and
// parameters, descriptions of similar length), over streamable HTTP in
// stateless JSON mode, so every POST of tools/list stands alone as a
// MangleCP evaluate does.
//
//	mcptools -addr 127.0.0.1:9090 -schemas typed   # schemas inferred from Go types (mcp.AddTool)
//	mcptools -addr 127.0.0.1:9090 -schemas raw     # schemas given as JSON (Server.AddTool)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type pathIn struct {
	Path string `json:"path"`
}

type readIn struct {
	Path string   `json:"path"`
	Tail *float64 `json:"tail,omitempty" jsonschema:"If provided, returns only the last N lines of the file"`
	Head *float64 `json:"head,omitempty" jsonschema:"If provided, returns only the first N lines of the file"`
}

type readManyIn struct {
	Paths []string `json:"paths" jsonschema:"Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories."`
}

type writeIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type edit struct {
	OldText string `json:"oldText" jsonschema:"Text to search for - must match exactly"`
	NewText string `json:"newText" jsonschema:"Text to replace with"`
}

type editIn struct {
	Path   string `json:"path"`
	Edits  []edit `json:"edits"`
	DryRun bool   `json:"dryRun,omitempty" jsonschema:"Preview changes using git-style diff format"`
}

type listSizesIn struct {
	Path   string `json:"path"`
	SortBy string `json:"sortBy,omitempty" jsonschema:"Sort entries by name or size"`
}

type treeIn struct {
	Path            string   `json:"path"`
	ExcludePatterns []string `json:"excludePatterns,omitempty"`
}

type moveIn struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

type searchIn struct {
	Path            string   `json:"path"`
	Pattern         string   `json:"pattern"`
	ExcludePatterns []string `json:"excludePatterns,omitempty"`
}

type noIn struct{}

// contentOut is every tool's structured output, as the filesystem
// server's outputSchema says.
type contentOut struct {
	Content string `json:"content"`
}

// describe makes a description of about n characters: the benchmark
// depends on the size of the list, not on the words.
func describe(what string, n int) string {
	s := what
	for len(s) < n {
		s += " Only works within allowed directories; paths outside them are refused."
	}
	return s[:n]
}

func add[In any](s *mcp.Server, raw bool, name string, descLen int, readOnly bool) {
	title := strings.ToUpper(name[:1]) + strings.ReplaceAll(name[1:], "_", " ")
	tool := &mcp.Tool{
		Name: name, Title: title,
		Description: describe(strings.ReplaceAll(name, "_", " ")+".", descLen),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, IdempotentHint: readOnly,
			DestructiveHint: ptr(!readOnly), OpenWorldHint: ptr(false)},
	}
	if !raw {
		mcp.AddTool(s, tool, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, contentOut, error) {
			return nil, contentOut{Content: "ok"}, nil
		})
		return
	}
	tool.InputSchema = rawSchema[In]()
	tool.OutputSchema = rawSchema[contentOut]()
	s.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
}

// rawSchema is T's schema as JSON, computed once.
func rawSchema[T any]() json.RawMessage {
	schema, err := jsonschema.For[T](nil)
	if err != nil {
		log.Fatal(err)
	}
	data, _ := json.Marshal(schema)
	return data
}

func ptr[T any](v T) *T { return &v }

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "listen address")
	schemas := flag.String("schemas", "typed", "typed (inferred from Go types) or raw (JSON given once)")
	flag.Parse()
	raw := *schemas == "raw"
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-filesystem", Version: "1"}, nil)
	add[readIn](s, raw, "read_file", 85, true)
	add[readIn](s, raw, "read_text_file", 457, true)
	add[pathIn](s, raw, "read_media_file", 234, true)
	add[readManyIn](s, raw, "read_multiple_files", 324, true)
	add[writeIn](s, raw, "write_file", 228, false)
	add[editIn](s, raw, "edit_file", 185, false)
	add[pathIn](s, raw, "create_directory", 310, false)
	add[pathIn](s, raw, "list_directory", 309, true)
	add[listSizesIn](s, raw, "list_directory_with_sizes", 323, true)
	add[treeIn](s, raw, "directory_tree", 360, true)
	add[moveIn](s, raw, "move_file", 325, false)
	add[searchIn](s, raw, "search_files", 424, true)
	add[pathIn](s, raw, "get_file_info", 296, true)
	add[noIn](s, raw, "list_allowed_directories", 248, true)

	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	hs := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	log.Printf("MCP tools/list server (%s schemas) on %s", *schemas, *addr)
	if err := hs.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
