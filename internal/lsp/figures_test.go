package lsp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestServerFigures measures each language server on the code domain's
// fixtures: the time from its start to its answer to initialize, to its
// first workspace/symbol answer, and its resident memory then. It runs
// only with MANGLECP_LSP_FIGURES=1 (docs/code.md quotes its output):
//
//	MANGLECP_LSP_FIGURES=1 go test -run TestServerFigures -v ./internal/lsp
func TestServerFigures(t *testing.T) {
	if os.Getenv("MANGLECP_LSP_FIGURES") != "1" {
		t.Skip("set MANGLECP_LSP_FIGURES=1 to measure the language servers")
	}
	for _, c := range []struct {
		name, fixture, query, ready string
		cmd                         []string
	}{
		{"gopls", "goproj", "CalcTotal", "", []string{"../../.cache/lsp/bin/gopls"}},
		{"pyright", "pyproj", "calc_total", "source file", []string{"../../.cache/npm-lsp/node_modules/.bin/pyright-langserver", "--stdio"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-r", "../../domains/code/testdata/"+c.fixture+"/.", dir).CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			bin, _ := filepath.Abs(c.cmd[0])
			t0 := time.Now()
			s, err := Start(context.Background(), Spec{Command: append([]string{bin}, c.cmd[1:]...), ReadyMessage: c.ready,
				InitializationOptions: map[string]any{"symbolScope": "workspace"}}, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			<-s.Ready()
			var syms []json.RawMessage
			for len(syms) == 0 {
				if err := s.Call(context.Background(), "workspace/symbol", map[string]any{"query": c.query}, &syms); err != nil {
					t.Fatal(err)
				}
			}
			first := time.Since(t0)
			t.Logf("%s: initialize %s, first workspace/symbol answer %s after start, RSS %d MiB", c.name,
				s.StartTime().Round(time.Millisecond), first.Round(time.Millisecond), s.RSS()>>20)
		})
	}
}
