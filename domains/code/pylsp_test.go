package code_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/protocol"
)

// python-lsp-server (pylsp 1.7, Debian's python3-pylsp with rope and
// pyflakes, from scripts/deps/lsp.sh) as the only Python server. It has no
// workspace/symbol and no prepareRename: find_symbol asks
// textDocument/documentSymbol of the files that hold the name.

func pylspServer(t testing.TB) code.Server {
	t.Helper()
	p := "/usr/bin/pylsp" // Debian's, on Debian's python3 with its plugins
	if !isExec(p) {
		p = findProgram(t, "", "pylsp")
	}
	return code.Server{Name: "pylsp", Command: []string{p}}
}

func pylspFixture(t *testing.T) *fixture {
	t.Helper()
	srv := pylspServer(t)
	findProgram(t, "", "python3")
	root := copyFixture(t, "pyproj")
	return newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangPython: srv}})
}

// TestPylspFindSymbol: find_symbol on pylsp finds the one definition of
// calc_total (not the names the tests import, not the near misses) and
// its references.
func TestPylspFindSymbol(t *testing.T) {
	f := pylspFixture(t)
	resp := f.ok("symbols", nil, "find_symbol", map[string]any{"name": "calc_total"}, false)
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
	f.fails("symbols", nil, "find_symbol", map[string]any{"name": "calc_totalx"}, code.CodeSymbolNotFound)
}

// TestPylspRename: the rename on pylsp is one preview applied once;
// near misses, strings, a docstring and a comment stay; the project's
// tests pass after.
func TestPylspRename(t *testing.T) {
	f := pylspFixture(t)
	preview := f.ok("refactor", []protocol.Fact{symbol("calc_total")}, "rename_symbol", map[string]any{"name": "calc_total", "new_name": "invoice_total"}, false)
	diff, _ := preview.Result["diff"].(string)
	for _, file := range []string{"shop/invoice.py", "shop/render.py", "tests/test_shop.py"} {
		if !strings.Contains(diff, "--- a/"+file) {
			t.Errorf("the diff misses %s:\n%s", file, diff)
		}
	}
	f.applyPreview(preview)
	inv := f.file("shop/invoice.py")
	for _, keep := range []string{"def invoice_total(items):", "def calc_total_weight(items):", "def calc_totals_row(items):",
		"# The label names calc_total on purpose", `"calc_total: %s, weight: %d" % (fmt_money(invoice_total(items)), calc_total_weight(items))`} {
		if !strings.Contains(inv, keep) {
			t.Errorf("shop/invoice.py lacks %q:\n%s", keep, inv)
		}
	}
	render := f.file("shop/render.py")
	if !strings.Contains(render, "from shop.invoice import invoice_total, calc_totals_row") || !strings.Contains(render, "Say calc_total to get the total.") {
		t.Errorf("shop/render.py:\n%s", render)
	}
	f.run("python3", "-m", "unittest", "discover", "-s", "tests", "-t", ".")
}

// TestPythonOrganizeImports: organize_imports on pyright (no code action:
// its pyright.organizeimports command, which its capabilities do not
// list, on the open file) and on pylsp (rope's code action, among the
// refactorings pylsp lists whatever kind was asked, run as a command whose
// edit comes back through workspace/applyEdit) previews one diff, applied
// once; the module still imports.
// pylsp reports pyflakes' diagnostics (unused import, undefined name).
func TestPythonOrganizeImports(t *testing.T) {
	for _, c := range []struct {
		name   string
		server func(testing.TB) code.Server
		diff   []string // the preview's diff holds these
		after  string   // the file after
	}{
		{"pyright", pyrightServer, []string{"+import os\n import sys\n-import os\n"}, "import os\nimport sys\n"},
		{"pylsp", pylspServer, []string{"-import sys\n"}, "import os\n\n\ndef where"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := c.server(t)
			findProgram(t, "", "python3")
			root := copyFixture(t, "pyproj")
			writeFile(t, root, "shop/messy.py", "import sys\nimport os\n\n\ndef where():\n    return os.getcwd()\n")
			f := newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangPython: srv}})
			preview := f.ok("refactor", []protocol.Fact{mentioned("shop/messy.py"), change("imports")}, "organize_imports", map[string]any{"path": "shop/messy.py"}, false)
			diff, _ := preview.Result["diff"].(string)
			for _, w := range c.diff {
				if !strings.Contains(diff, w) {
					t.Errorf("diff lacks %q:\n%s", w, diff)
				}
			}
			f.applyPreview(preview)
			if got := f.file("shop/messy.py"); !strings.Contains(got, c.after) {
				t.Errorf("shop/messy.py:\n%s", got)
			}
			f.run("python3", "-c", "import shop.messy")
			if c.name != "pylsp" {
				return
			}
			writeFile(t, root, "shop/broken.py", "import json\n\n\ndef broken():\n    return undefined_thing\n")
			resp := f.ok("diagnose", []protocol.Fact{mentioned("shop/broken.py")}, "diagnostics", map[string]any{"path": "shop/broken.py"}, false)
			d := strings.Join(strs(resp.Result["diagnostics"]), "\n")
			for _, w := range []string{"shop/broken.py:1:1: warning: 'json' imported but unused (pyflakes)", "shop/broken.py:5:", "undefined name 'undefined_thing'"} {
				if !strings.Contains(d, w) {
					t.Errorf("diagnostics lack %q:\n%s", w, d)
				}
			}
		})
	}
}
