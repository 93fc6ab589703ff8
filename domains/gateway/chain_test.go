package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/upstream"
)

// TestMangleCPServerAsUpstream: a MangleCP server is an upstream too,
// through its MCP bridge (manglecp mcp): the workspace domain's
// evaluate_intent and invoke_macro_tool become ws_evaluate_intent and
// ws_invoke_macro_tool of the gateway, and a file is read through both.
func TestMangleCPServerAsUpstream(t *testing.T) {
	bin := builds.Manglecp(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("chained through two servers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pack := fstest.MapFS{"domain/ws.mg": {Data: []byte(`
decl_intent("use_workspace", "Use the workspace server.").
mandatory_for_intent("use_workspace", T) :- upstream_tool("ws", T, _).
`)}}
	up := gateway.Upstream{Config: upstream.Config{Name: "ws", Command: []string{bin, "mcp", "--domain", "workspace", "--root", root}}}
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{up}, Rules: pack})
	tools := f.Eval("use_workspace")
	for _, name := range []string{"ws_evaluate_intent", "ws_invoke_macro_tool"} {
		if _, ok := tools[name]; !ok {
			t.Fatalf("use_workspace does not offer %s (offers %v)", name, keys(tools))
		}
	}
	r := f.OK("use_workspace", nil, "ws_evaluate_intent", map[string]any{"intent": "read", "facts": []any{[]any{"mentioned", "notes.txt"}}}, true)
	if !strings.Contains(answer(r), "read_file") {
		t.Fatalf("evaluate_intent answered %q", answer(r))
	}
	r = f.OK("use_workspace", nil, "ws_invoke_macro_tool", map[string]any{"tool": "read_file", "arguments": map[string]any{"path": "notes.txt"}}, true)
	if !strings.Contains(answer(r), "chained through two servers") {
		t.Fatalf("invoke_macro_tool answered %q", answer(r))
	}
}
