package code_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/protocol"
)

// Layouts the domain was not written for: a Go module with nested
// packages, an internal package and an external test package (package
// store_test), and a Python project in the src/ layout.

// TestGoNestedLayout: on gonested, find_symbol and rename_symbol reach the
// external test package and the internal test file; move_code moves a
// package with its internal package below it, renaming the package, its
// _test package and the qualified uses; the module's tests pass after
// each step.
func TestGoNestedLayout(t *testing.T) {
	srv := goplsServer(t)
	testGo(t)
	root := copyFixture(t, "gonested")
	f := newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangGo: srv}})
	found := f.OK("symbols", nil, "find_symbol", map[string]any{"name": "OpenStore"}, false)
	if defs := strs(found.Result["definitions"]); len(defs) != 1 || !strings.HasPrefix(defs[0], "pkg/store/store.go:10 function OpenStore") {
		t.Fatalf("definitions %q", defs)
	}
	refs := strings.Join(strs(found.Result["references"]), "\n")
	for _, w := range []string{"pkg/store/store_test.go:10:", "pkg/store/internal_test.go:6:", "cmd/app/main.go:11:"} {
		if !strings.Contains(refs, w) {
			t.Errorf("references lack %s:\n%s", w, refs)
		}
	}
	preview := f.OK("refactor", []protocol.Fact{symbol("OpenStore")}, "rename_symbol", map[string]any{"name": "OpenStore", "new_name": "Open"}, false)
	f.applyPreview(preview)
	main := f.File("cmd/app/main.go")
	for _, w := range []string{"store.Open() // \"OpenStore\" in a comment", `"OpenStore:"`} {
		if !strings.Contains(main, w) {
			t.Errorf("cmd/app/main.go lacks %q:\n%s", w, main)
		}
	}
	if !strings.Contains(f.File("pkg/store/store_test.go"), "s := store.Open()") {
		t.Error("the external test package was not renamed")
	}
	f.run("go", "vet", "./...")
	f.run("go", "test", "./...")

	moved := f.OK("refactor", []protocol.Fact{mentioned("pkg/store"), change("move")}, "move_code", map[string]any{"from": "pkg/store", "to": "pkg/kv"}, false)
	f.applyPreview(moved)
	for file, want := range map[string]string{
		"pkg/kv/store.go":                `import "example.com/nest/pkg/kv/internal/cache"`,
		"pkg/kv/store_test.go":           "package kv_test",
		"pkg/kv/internal_test.go":        "package kv\n",
		"cmd/app/main.go":                "s := kv.Open()",
		"pkg/kv/internal/cache/cache.go": "package cache",
	} {
		if got := f.File(file); !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", file, want, got)
		}
	}
	if !strings.Contains(f.File("pkg/kv/store_test.go"), `"example.com/nest/pkg/kv"`) || !strings.Contains(f.File("pkg/kv/store_test.go"), "kv.Open()") {
		t.Errorf("pkg/kv/store_test.go:\n%s", f.File("pkg/kv/store_test.go"))
	}
	f.run("go", "vet", "./...")
	f.run("go", "test", "./...")
}

// TestPythonSrcLayout: on pysrc (the package under src/, tests beside it),
// with pyright and with pylsp, find_symbol finds the one definition,
// rename_symbol renames every use (a qualified core.post_entry too) and
// leaves the near miss and the docstring; move_code moves a module into a
// new package and rewrites the imports as src/ is the import root; the
// tests pass after each step.
func TestPythonSrcLayout(t *testing.T) {
	for _, c := range []struct {
		name   string
		server func(testing.TB) code.Server
	}{{"pyright", pyrightServer}, {"pylsp", pylspServer}} {
		t.Run(c.name, func(t *testing.T) {
			srv := c.server(t)
			findProgram(t, "", "python3")
			root := copyFixture(t, "pysrc")
			f := newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangPython: srv}})
			unittest := []string{"PYTHONPATH=src", "python3", "-m", "unittest", "discover", "-s", "tests", "-t", "."}
			found := f.OK("symbols", nil, "find_symbol", map[string]any{"name": "post_entry"}, false)
			if defs := strs(found.Result["definitions"]); len(defs) != 1 || !strings.HasPrefix(defs[0], "src/ledger/core.py:4 function post_entry") {
				t.Fatalf("definitions %q", defs)
			}
			preview := f.OK("refactor", []protocol.Fact{symbol("post_entry")}, "rename_symbol", map[string]any{"name": "post_entry", "new_name": "record_entry"}, false)
			f.applyPreview(preview)
			core := f.File("src/ledger/core.py")
			for _, w := range []string{"def record_entry(book, amount):", `"post_entry" stays in this docstring`, "def post_entry_twice(", "return record_entry(book, amount)"} {
				if !strings.Contains(core, w) {
					t.Errorf("src/ledger/core.py lacks %q:\n%s", w, core)
				}
			}
			tests := f.File("tests/test_core.py")
			for _, w := range []string{"from ledger.core import record_entry, post_entry_twice", "core.record_entry([1], 1)"} {
				if !strings.Contains(tests, w) {
					t.Errorf("tests/test_core.py lacks %q:\n%s", w, tests)
				}
			}
			f.run("env", unittest...)

			moved := f.OK("refactor", []protocol.Fact{mentioned("src/ledger/io/reader.py"), change("move")}, "move_code",
				map[string]any{"from": "src/ledger/io/reader.py", "to": "src/ledger/readers/csv_reader.py"}, false)
			f.applyPreview(moved)
			if got := f.File("tests/test_core.py"); !strings.Contains(got, "from ledger.readers.csv_reader import read") {
				t.Errorf("tests/test_core.py:\n%s", got)
			}
			f.run("env", unittest...)
		})
	}
}

// TestGoModuleInSubdirectory: a root whose Go module lies in a
// subdirectory (a repository with backend/go.mod): gopls is told of the
// module's directory as a workspace folder (at the root alone it loads
// nothing), so find_symbol, rename_symbol and move_code work there and
// the module's tests pass after.
func TestGoModuleInSubdirectory(t *testing.T) {
	srv := goplsServer(t)
	testGo(t)
	src := copyFixture(t, "gonested")
	root := t.TempDir()
	if err := os.Rename(src, filepath.Join(root, "backend")); err != nil {
		t.Fatal(err)
	}
	domaintest.WriteTree(t, root, map[string]string{"README.md": "# a repository\n"})
	f := newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangGo: srv}})
	found := f.OK("symbols", nil, "find_symbol", map[string]any{"name": "OpenStore"}, false)
	if defs := strs(found.Result["definitions"]); len(defs) != 1 || !strings.HasPrefix(defs[0], "backend/pkg/store/store.go:10 function OpenStore") {
		t.Fatalf("definitions %q", defs)
	}
	f.applyPreview(f.OK("refactor", []protocol.Fact{symbol("OpenStore")}, "rename_symbol", map[string]any{"name": "OpenStore", "new_name": "Open"}, false))
	f.applyPreview(f.OK("refactor", []protocol.Fact{mentioned("backend/pkg/store"), change("move")}, "move_code", map[string]any{"from": "backend/pkg/store", "to": "backend/pkg/kv"}, false))
	if got := f.File("backend/cmd/app/main.go"); !strings.Contains(got, "s := kv.Open()") {
		t.Errorf("backend/cmd/app/main.go:\n%s", got)
	}
	f.root = filepath.Join(root, "backend")
	f.run("go", "vet", "./...")
	f.run("go", "test", "./...")
}
