// Package upstreamtest is a fake upstream MCP server for the tests of
// package upstream and the gateway domain: well-behaved tools (echo, add,
// write, slow, crash, huge answers, failures with stack traces and paths)
// and hostile modes (a huge tool list, a message over any bound, invalid
// schemas, a stderr flood). It runs in process ([Server]) or as a command
// over stdio: a test binary re-executes itself with [EnvMode] set and
// calls [MainIfFake] from TestMain.
package upstreamtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvMode is the environment variable that makes a test binary a fake
// upstream: its value is the mode ("normal", "hugelist", "hugeline",
// "badschema", "stderrflood").
const EnvMode = "MANGLECP_FAKE_UPSTREAM"

// MainIfFake serves the fake upstream over stdio and exits when EnvMode is
// set; otherwise it returns.
func MainIfFake() {
	mode := os.Getenv(EnvMode)
	if mode == "" {
		return
	}
	if mode == "stderrflood" {
		go func() {
			for i := 0; ; i++ {
				fmt.Fprintf(os.Stderr, "flood line %d %s\n", i, strings.Repeat("x", 4000))
			}
		}()
	}
	fmt.Fprintln(os.Stderr, "fake upstream running in /secret/dir/server.js")
	if mode == "listflood" {
		if err := listFlood(os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if err := server(mode, os.Stderr).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

func obj(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object"}
	if props != nil {
		s["properties"] = props
	}
	if len(required) > 0 {
		r := make([]any, len(required))
		for i, x := range required {
			r[i] = x
		}
		s["required"] = r
	}
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func args(req *mcp.CallToolRequest) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	return m
}

// SlowStarted is the line the fake writes to its stderr when a call of
// its slow tool starts, when it runs as a command (MainIfFake): a test
// waits for it in the upstream's log instead of sleeping.
const SlowStarted = "slow call started"

// Server returns the fake upstream in mode.
func Server(mode string) *mcp.Server { return server(mode, nil) }

// server is the fake upstream in mode; announce, when set, gets a line
// when a slow call starts.
func server(mode string, announce io.Writer) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake-upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the text back. Second sentence.", InputSchema: obj(map[string]any{
		"text": map[string]any{"type": "string", "description": "What to echo.", "maxLength": 1000}}, "text"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprint(args(req)["text"])), nil
		})
	s.AddTool(&mcp.Tool{Name: "add", Description: "Add two integers.", InputSchema: obj(map[string]any{
		"a": map[string]any{"type": "integer"}, "b": map[string]any{"type": "integer"},
		"tags": map[string]any{"type": "array", "items": obj(map[string]any{"k": map[string]any{"type": "string"}}, "k")}}, "a", "b"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := args(req)
			return text(fmt.Sprint(a["a"].(float64) + a["b"].(float64))), nil
		})
	s.AddTool(&mcp.Tool{Name: "delete-everything", Description: "Delete all records.", InputSchema: obj(nil),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: yes(), OpenWorldHint: no()}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("deleted"), nil })
	s.AddTool(&mcp.Tool{Name: "fetch_url", Description: "Fetch a URL.", InputSchema: obj(map[string]any{"url": map[string]any{"type": "string"}}, "url"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("<html></html>"), nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Sleep ms milliseconds.", InputSchema: obj(map[string]any{"ms": map[string]any{"type": "integer"}}, "ms"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if announce != nil {
				fmt.Fprintln(announce, SlowStarted)
			}
			select {
			case <-time.After(time.Duration(args(req)["ms"].(float64)) * time.Millisecond):
				return text("slept"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exit the process during the call.", InputSchema: obj(nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(50 * time.Millisecond)
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "huge", Description: "Answer n bytes.", InputSchema: obj(map[string]any{"n": map[string]any{"type": "integer"}}, "n"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(strings.Repeat("y", int(args(req)["n"].(float64)))), nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Fail with a stack trace.", InputSchema: obj(nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
				Text: "ENOENT: no such file /home/alice/secret/notes.txt\n    at Object.openSync (node:fs:573:3)\n    at /srv/app/index.js:10:5\u0007"}}}, nil
		})
	switch mode {
	case "notes":
		addNotes(s)
	case "bigint":
		s.AddTool(&mcp.Tool{Name: "count", Description: "Count from n.", InputSchema: obj(map[string]any{
			"n": map[string]any{"type": "integer", "default": float64(math.MinInt64)},
			"m": map[string]any{"type": "number", "default": 1e300}})},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	case "hugelist":
		for i := 0; i < 600; i++ {
			s.AddTool(&mcp.Tool{Name: fmt.Sprintf("extra_%03d", i), Description: strings.Repeat("d", 2000), InputSchema: obj(nil)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
		}
	case "hugeline":
		s.AddTool(&mcp.Tool{Name: "bloated", Description: strings.Repeat("z", 6<<20), InputSchema: obj(nil)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	case "badschema":
		s.AddTool(&mcp.Tool{Name: "broken", Description: "Its schema is invalid.", InputSchema: obj(map[string]any{
			"x": map[string]any{"type": "nope", "minimum": "ten"}})},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
		s.AddTool(&mcp.Tool{Name: "weird-param", Description: "A parameter name that is no name.", InputSchema: obj(map[string]any{
			"a b\"); evil(": map[string]any{"type": "string"}})},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
		s.AddTool(&mcp.Tool{Name: "escapes", Description: "Backslashes a\\b \\\" \\u0041 and \u00e9\u4e2d\U0001F600 and a tab\there.", InputSchema: obj(nil)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
		s.AddTool(&mcp.Tool{Name: "injection\"). tool(\"x", Description: "A name that tries to write rules: \"). prohibited(\"a\", \"b\").",
			InputSchema: obj(nil)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	}
	return s
}

// Recorded returns a server that lists the tools of a recorded tools/list
// answer (a JSON file with a "tools" array, as the MCP Inspector CLI
// prints it) under serverInfo name, every tool answering "ok".
func Recorded(file, name string) (*mcp.Server, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var list struct{ Tools []*mcp.Tool }
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	for _, tool := range list.Tools {
		s.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("ok"), nil
		})
	}
	return s, nil
}

// addNotes adds a stateful notes tool set (state per server, so per
// process or per in-process session) and a tool answering the names and
// values of its environment.
func addNotes(s *mcp.Server) {
	var (
		mu    sync.Mutex
		notes []string
	)
	s.AddTool(&mcp.Tool{Name: "note_add", Description: "Keep a note.", InputSchema: obj(map[string]any{"text": map[string]any{"type": "string"}}, "text"),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: no(), OpenWorldHint: no()}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, fmt.Sprint(args(req)["text"]))
			return text(fmt.Sprintf("kept (%d notes)", len(notes))), nil
		})
	s.AddTool(&mcp.Tool{Name: "note_list", Description: "List the notes.", InputSchema: obj(nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return text("notes: [" + strings.Join(notes, "|") + "]\npid " + fmt.Sprint(os.Getpid())), nil
		})
	s.AddTool(&mcp.Tool{Name: "env", Description: "Answer the environment.", InputSchema: obj(nil),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: no()}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			env := os.Environ()
			sort.Strings(env)
			return text(strings.Join(env, "\n")), nil
		})
}

// FloodNotifications is how many notifications/tools/list_changed the
// "listflood" upstream sends before it answers each call.
const FloodNotifications = 3000

// listFlood is a hand-written MCP server over stdio (mode "listflood"):
// one tool, echo, and before every answer FloodNotifications
// notifications/tools/list_changed.
func listFlood(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	out := bufio.NewWriter(w)
	send := func(v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out.Write(raw)
		out.WriteByte('\n')
		return out.Flush()
	}
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": req.Params.ProtocolVersion, "serverInfo": map[string]any{"name": "listflood", "version": "1"},
				"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}}}
		case "tools/list":
			result = map[string]any{"tools": []any{map[string]any{"name": "echo", "description": "Echo.", "inputSchema": map[string]any{"type": "object"},
				"annotations": map[string]any{"readOnlyHint": true}}}}
		case "tools/call":
			for i := 0; i < FloodNotifications; i++ {
				if err := send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}); err != nil {
					return err
				}
			}
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "echoed"}}}
		default:
			result = map[string]any{}
		}
		if err := send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result}); err != nil {
			return err
		}
	}
	return sc.Err()
}
