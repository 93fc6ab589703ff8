package code_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/domaintest"
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
			domaintest.WriteTree(t, root, map[string]string{"shop/messy.py": "import sys\nimport os\n\n\ndef where():\n    return os.getcwd()\n"})
			f := newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangPython: srv}})
			preview := f.OK("refactor", []protocol.Fact{mentioned("shop/messy.py"), change("imports")}, "organize_imports", map[string]any{"path": "shop/messy.py"}, false)
			diff, _ := preview.Result["diff"].(string)
			for _, w := range c.diff {
				if !strings.Contains(diff, w) {
					t.Errorf("diff lacks %q:\n%s", w, diff)
				}
			}
			f.applyPreview(preview)
			if got := f.File("shop/messy.py"); !strings.Contains(got, c.after) {
				t.Errorf("shop/messy.py:\n%s", got)
			}
			f.run("python3", "-c", "import shop.messy")
			if c.name != "pylsp" {
				return
			}
			domaintest.WriteTree(t, root, map[string]string{"shop/broken.py": "import json\n\n\ndef broken():\n    return undefined_thing\n"})
			resp := f.OK("diagnose", []protocol.Fact{mentioned("shop/broken.py")}, "diagnostics", map[string]any{"path": "shop/broken.py"}, false)
			d := strings.Join(strs(resp.Result["diagnostics"]), "\n")
			for _, w := range []string{"shop/broken.py:1:1: warning: 'json' imported but unused (pyflakes)", "shop/broken.py:5:", "undefined name 'undefined_thing'"} {
				if !strings.Contains(d, w) {
					t.Errorf("diagnostics lack %q:\n%s", w, d)
				}
			}
		})
	}
}
