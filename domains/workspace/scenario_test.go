package workspace_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

// scenario is testdata/scenario.json.
type scenario struct {
	Description string            `json:"description"`
	Tree        map[string]string `json:"tree"`
	Turns       []struct {
		Intent  string          `json:"intent"`
		Carry   bool            `json:"carry"`
		Facts   []protocol.Fact `json:"facts"`
		Tool    string          `json:"tool"`
		Args    map[string]any  `json:"args"`
		Confirm bool            `json:"confirm"`
	} `json:"turns"`
}

// TestScenario replays the documented job sequence: each turn's tool is
// offered, runs, and the tree ends as expected. It logs the size of the
// tool definitions each turn offers; with WORKSPACE_SCENARIO_TOOLS=FILE it
// also writes them (name, description, inputSchema per turn) to FILE, for
// a token count (docs/workspace.md).
func TestScenario(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "scenario.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "project")
	domaintest.WriteTree(t, dir, sc.Tree)
	f := newFixture(t, workspace.Config{Roots: []string{dir}})
	var carried []protocol.Fact
	var prev map[string]any
	var dump []any
	for i, turn := range sc.Turns {
		ff := append([]protocol.Fact{}, turn.Facts...)
		if turn.Carry {
			ff = append(ff, carried...)
		}
		args := map[string]any{}
		for k, v := range turn.Args {
			if s, ok := v.(string); ok && strings.HasPrefix(s, "$prev.") {
				v = prev[strings.TrimPrefix(s, "$prev.")]
			}
			args[k] = v
		}
		tools := f.Eval(turn.Intent, ff...)
		size := 0
		var defs []any
		for _, name := range strings.Split(domaintest.Names(tools), ",") {
			m := tools[name]
			schema := map[string]any{}
			for k, v := range m.InputSchema {
				if k != "$schema" {
					schema[k] = v
				}
			}
			def := map[string]any{"name": m.Name, "description": m.Description, "inputSchema": schema}
			b, _ := json.Marshal(def)
			size += len(b)
			defs = append(defs, def)
		}
		dump = append(dump, map[string]any{"turn": i + 1, "intent": turn.Intent, "tools": defs})
		t.Logf("turn %d: %s offers %s (%d bytes of tool definitions)", i+1, turn.Intent, domaintest.Names(tools), size)
		r := f.OK(turn.Intent, ff, turn.Tool, args, turn.Confirm)
		carried, prev = r.Next.ContinuationFacts, r.Result
	}
	if out := os.Getenv("WORKSPACE_SCENARIO_TOOLS"); out != "" {
		b, _ := json.MarshalIndent(dump, "", "  ")
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if f.Exists("src/main.go") || !strings.Contains(f.File("src/app.go"), "widget") {
		t.Error("src/main.go was not moved")
	}
	if !strings.Contains(f.File("src/util.go"), "// helper prints nothing") {
		t.Error("src/util.go was not edited")
	}
}
