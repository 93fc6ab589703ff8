package code_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/protocol"
)

// TestNoLanguageServer: with no language server installed the manifest
// says so (x-code, a warning per language), symbols falls back to text
// search with instructions saying why, move_code still moves (imports are
// found by parsing), and a symbol tool invoked anyway answers
// x-language_server_unavailable.
func TestNoLanguageServer(t *testing.T) {
	root := copyFixture(t, "pyproj")
	f := newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{}})
	ext, _ := f.sess.Manifest().Extensions["x-code"].(map[string]any)
	langs, _ := ext["languages"].(map[string]any)
	py, _ := langs["python"].(map[string]any)
	if py["state"] != "missing" || !strings.Contains(py["warning"].(string), "no python language server is installed") {
		t.Errorf("x-code %v", ext)
	}
	if w := strs(ext["warnings"]); len(w) != 1 {
		t.Errorf("warnings %q", w)
	}
	tools := f.Eval("symbols", symbol("calc_total"))
	s, ok := tools["search"]
	if !ok || len(tools) != 1 {
		t.Fatalf("symbols without a server offers %s", domaintest.Names(tools))
	}
	if s.ContextInjection == nil || !strings.Contains(s.ContextInjection.Instructions, "No language server") {
		t.Errorf("search context %+v", s.ContextInjection)
	}
	found := f.OK("symbols", []protocol.Fact{symbol("calc_total")}, "search", map[string]any{"text": "def calc_total("}, false)
	if !strings.Contains(strings.Join(strs(found.Result["files"]), ","), "shop/invoice.py") {
		t.Errorf("search: %v", found.Result)
	}
	tools = f.Eval("refactor", mentioned("shop/money.py"), change("move"))
	if _, ok := tools["move_code"]; !ok {
		t.Fatalf("refactor without a server offers %s", domaintest.Names(tools))
	}
	if _, ok := tools["rename_symbol"]; ok {
		t.Error("rename_symbol offered without a server")
	}
	preview := f.OK("refactor", []protocol.Fact{mentioned("shop/money.py"), change("move")}, "move_code", map[string]any{"from": "shop/money.py", "to": "shop/util/money.py"}, false)
	applied := f.applyPreview(preview)
	if note, _ := applied.Result["diagnostics_note"].(string); !strings.Contains(note, "no python language server") {
		t.Errorf("diagnostics note %q", note)
	}
	f.run("python3", "-m", "unittest", "discover", "-s", "tests", "-t", ".")
}

// TestConfinement: paths outside the root are refused before any server
// runs, and a move cannot leave the root.
func TestConfinement(t *testing.T) {
	root := copyFixture(t, "pyproj")
	f := newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{}})
	for _, p := range []string{"../x.py", "/etc/passwd", "shop/../../x.py"} {
		f.Fails("refactor", nil, "move_code", map[string]any{"from": p, "to": "shop/y.py"}, false, "x-path_outside_roots")
		f.Fails("refactor", nil, "move_code", map[string]any{"from": "shop/money.py", "to": p}, false, "x-path_outside_roots")
	}
	f.Fails("refactor", nil, "move_code", map[string]any{"from": "shop/money.py", "to": "shop/invoice.py"}, false, "x-destination_exists")
	f.Fails("refactor", nil, "move_code", map[string]any{"from": "shop", "to": "shop/inner"}, false, "x-move_into_itself")
}
