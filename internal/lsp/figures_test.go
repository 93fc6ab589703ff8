package lsp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServerFigures measures each language server on the code domain's
// test projects (the fixtures of domains/code/testdata and the projects
// of the rename jobs, tools/tokens/testdata): the time from its start to
// its answer to initialize, to its first answer about a symbol
// (workspace/symbol; textDocument/references for pylsp, which has no
// workspace/symbol), and its resident memory (process tree) then. It runs
// only with MANGLECP_LSP_FIGURES=1 (docs/code.md quotes its output):
//
//	MANGLECP_LSP_FIGURES=1 go test -run TestServerFigures -v ./internal/lsp
func TestServerFigures(t *testing.T) {
	if os.Getenv("MANGLECP_LSP_FIGURES") != "1" {
		t.Skip("set MANGLECP_LSP_FIGURES=1 to measure the language servers")
	}
	gopls := []string{"../../.cache/lsp/bin/gopls"}
	pyright := []string{"../../.cache/npm-lsp/node_modules/.bin/pyright-langserver", "--stdio"}
	pylsp := []string{"/usr/bin/pylsp"}
	for _, c := range []struct {
		server, project, query, def, ready string
		cmd                                []string
	}{
		{"gopls", "goproj", "CalcTotal", "", "", gopls},
		{"gopls", "goshop", "CalcTotal", "", "", gopls},
		{"pyright", "pyproj", "calc_total", "", "source file", pyright},
		{"pyright", "pyshop", "calc_total", "", "source file", pyright},
		{"pylsp", "pyproj", "calc_total", "shop/invoice.py", "", pylsp},
		{"pylsp", "pyshop", "calc_total", "tallyho/calc.py", "", pylsp},
	} {
		t.Run(c.server+"/"+c.project, func(t *testing.T) {
			dir := t.TempDir()
			project(t, c.project, dir)
			bin, _ := filepath.Abs(c.cmd[0])
			t0 := time.Now()
			s, err := Start(context.Background(), Spec{Command: append([]string{bin}, c.cmd[1:]...), ReadyMessage: c.ready,
				InitializationOptions: map[string]any{"symbolScope": "workspace"}}, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			<-s.Ready()
			if c.def == "" {
				var syms []json.RawMessage
				for len(syms) == 0 {
					if err := s.Call(context.Background(), "workspace/symbol", map[string]any{"query": c.query}, &syms); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				b, err := os.ReadFile(filepath.Join(dir, c.def))
				if err != nil {
					t.Fatal(err)
				}
				before, _, _ := strings.Cut(string(b), "def "+c.query+"(")
				line := strings.Count(before, "\n")
				var refs []json.RawMessage
				if err := s.Call(context.Background(), "textDocument/references", map[string]any{
					"textDocument": map[string]any{"uri": FileURI(filepath.Join(dir, c.def))},
					"position":     Position{Line: line, Character: 4}, "context": map[string]any{"includeDeclaration": true}}, &refs); err != nil || len(refs) == 0 {
					t.Fatalf("references: %v %d", err, len(refs))
				}
			}
			first := time.Since(t0)
			t.Logf("%s on %s: initialize %s, first symbol answer %s after start, RSS %d MiB", c.server, c.project,
				s.StartTime().Round(time.Millisecond), first.Round(time.Millisecond), s.RSS()>>20)
		})
	}
}

// project writes a test project into dir: a fixture directory of
// domains/code/testdata, or a job's tree (tools/tokens/testdata/NAME.json).
func project(t *testing.T, name, dir string) {
	t.Helper()
	if _, err := os.Stat("../../domains/code/testdata/" + name); err == nil {
		if out, err := exec.Command("cp", "-r", "../../domains/code/testdata/"+name+"/.", dir).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		return
	}
	raw, err := os.ReadFile("../../tools/tokens/testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var tree struct {
		Tree map[string]string `json:"tree"`
	}
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	for rel, content := range tree.Tree {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
