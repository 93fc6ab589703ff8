package code_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/protocol"
)

// pythonServers are the Python language servers the find and rename
// tests run on: pyright, and pylsp (no workspace/symbol, no
// prepareRename: find_symbol asks textDocument/documentSymbol of the
// files that hold the name).
var pythonServers = []struct {
	name   string
	server func(testing.TB) code.Server
}{
	{"pyright", pyrightServer},
	{"pylsp", pylspServer},
}

// pyFixture serves a copy of testdata/pyproj with the Python server of
// server.
func pyFixture(t *testing.T, server func(testing.TB) code.Server) *fixture {
	t.Helper()
	srv := server(t)
	findProgram(t, "", "python3")
	root := copyFixture(t, "pyproj")
	return newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangPython: srv}})
}

// TestPythonFindSymbol: find_symbol on each Python server finds the one
// definition of calc_total (not the names the tests import, not
// calc_total_weight or calc_totals_row) and its references; a name
// nothing defines is x-symbol_not_found.
func TestPythonFindSymbol(t *testing.T) {
	for _, s := range pythonServers {
		t.Run(s.name, func(t *testing.T) {
			f := pyFixture(t, s.server)
			resp := f.OK("symbols", nil, "find_symbol", map[string]any{"name": "calc_total"}, false)
			defs := strs(resp.Result["definitions"])
			if len(defs) != 1 || !strings.HasPrefix(defs[0], "shop/invoice.py:6 function calc_total") {
				t.Fatalf("definitions %q", defs)
			}
			refs := strings.Join(strs(resp.Result["references"]), "\n")
			for _, w := range []string{"shop/invoice.py:6:", "shop/invoice.py:18:", "shop/render.py:5:", "shop/render.py:13:", "tests/test_shop.py:4:", "tests/test_shop.py:12:"} {
				if !strings.Contains(refs, w) {
					t.Errorf("references lack %s:\n%s", w, refs)
				}
			}
			if strings.Contains(refs, "HELP") || strings.Contains(refs, "calc_total_weight(self.items)") {
				t.Errorf("references hold text or a near miss:\n%s", refs)
			}
			f.Fails("symbols", nil, "find_symbol", map[string]any{"name": "calc_totalx"}, false, code.CodeSymbolNotFound)
		})
	}
}

// TestPythonRename: renaming calc_total to invoice_total on each Python
// server changes every reference in one diff applied once;
// calc_total_weight, calc_totals_row, the name in strings, a docstring
// and a comment stay; the project's tests pass after.
func TestPythonRename(t *testing.T) {
	for _, s := range pythonServers {
		t.Run(s.name, func(t *testing.T) {
			f := pyFixture(t, s.server)
			preview := f.OK("refactor", []protocol.Fact{symbol("calc_total")}, "rename_symbol", map[string]any{"name": "calc_total", "new_name": "invoice_total"}, false)
			diff, _ := preview.Result["diff"].(string)
			for _, file := range []string{"shop/invoice.py", "shop/render.py", "tests/test_shop.py"} {
				if !strings.Contains(diff, "--- a/"+file) {
					t.Errorf("the diff misses %s:\n%s", file, diff)
				}
			}
			f.applyPreview(preview)
			inv := f.File("shop/invoice.py")
			for _, keep := range []string{"def invoice_total(items):", "def calc_total_weight(items):", "def calc_totals_row(items):",
				"# The label names calc_total on purpose", `"calc_total: %s, weight: %d" % (fmt_money(invoice_total(items)), calc_total_weight(items))`} {
				if !strings.Contains(inv, keep) {
					t.Errorf("shop/invoice.py lacks %q:\n%s", keep, inv)
				}
			}
			render := f.File("shop/render.py")
			if !strings.Contains(render, "from shop.invoice import invoice_total, calc_totals_row") || !strings.Contains(render, "Say calc_total to get the total.") {
				t.Errorf("shop/render.py:\n%s", render)
			}
			f.run("python3", "-m", "unittest", "discover", "-s", "tests", "-t", ".")
		})
	}
}

// TestPythonMoveModule: move_code moves shop/money.py into a new package
// directory and rewrites from-imports, a qualified import and a
// package-relative import; the import text in a docstring stays; the
// tests pass after. The one-off script moves into scripts/archive/, whose
// parent is created.
func TestPythonMoveModule(t *testing.T) {
	f := pyFixture(t, pyrightServer)
	tools := f.Eval("refactor", mentioned("shop/money.py"), change("move"))
	m, ok := tools["move_code"]
	if !ok {
		t.Fatalf("refactor offers %s", domaintest.Names(tools))
	}
	preview, err := f.Invoke(m, map[string]any{"from": "shop/money.py", "to": "shop/util/money.py"}, false)
	if err != nil {
		t.Fatalf("move_code: %v %+v", err, err.Payload.Details)
	}
	applied := f.applyPreview(preview)
	if d := strs(applied.Result["diagnostics"]); len(d) != 0 {
		t.Errorf("diagnostics after the move: %q", d)
	}
	render := f.File("shop/render.py")
	for _, w := range []string{"import shop.util.money\n", "shop.util.money.fmt_money(", "import shop.money is how this module formats amounts."} {
		if !strings.Contains(render, w) {
			t.Errorf("shop/render.py lacks %q:\n%s", w, render)
		}
	}
	if !strings.Contains(f.File("shop/invoice.py"), "from shop.util.money import fmt_money") || !strings.Contains(f.File("tests/test_shop.py"), "from shop.util import money") {
		t.Errorf("importers not rewritten")
	}
	f.run("python3", "-m", "unittest", "discover", "-s", "tests", "-t", ".")

	preview2 := f.OK("refactor", []protocol.Fact{mentioned("scripts/oneoff.py"), change("move")}, "move_code", map[string]any{"from": "scripts/oneoff.py", "to": "scripts/archive/oneoff.py"}, false)
	f.applyPreview(preview2)
	if !f.Exists("scripts/archive/oneoff.py") || f.Exists("scripts/oneoff.py") {
		t.Error("the script was not moved")
	}
	f.run("python3", "-m", "scripts.archive.oneoff")
}
