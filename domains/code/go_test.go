package code_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/protocol"
)

func goFixture(t *testing.T) *fixture {
	t.Helper()
	srv := goplsServer(t)
	testGo(t)
	root := copyFixture(t, "goproj")
	return newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangGo: srv}})
}

// testGo finds the go command the fixture's own tests run with.
func testGo(t *testing.T) {
	t.Helper()
	findProgram(t, "", "go")
}

// TestGoFindSymbol: find_symbol finds the one definition of an exact name
// (not its near misses) and its references, as path:line: text lines.
func TestGoFindSymbol(t *testing.T) {
	f := goFixture(t)
	resp := f.OK("symbols", nil, "find_symbol", map[string]any{"name": "CalcTotal", "references": true}, false)
	defs := strs(resp.Result["definitions"])
	if len(defs) != 1 || !strings.HasPrefix(defs[0], "billing/calc.go:19 function CalcTotal") {
		t.Fatalf("definitions %q", defs)
	}
	refs := strs(resp.Result["references"])
	want := []string{"billing/calc.go:19:", "billing/calc.go:39:", "billing/calc_test.go:7:", "cmd/shop/main.go:14:"}
	if len(refs) != len(want) {
		t.Fatalf("references %q, want %d", refs, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(refs[i], w) {
			t.Errorf("reference %d = %q, want %s...", i, refs[i], w)
		}
	}
	f.Fails("symbols", nil, "find_symbol", map[string]any{"name": "CalcTotalx"}, false, code.CodeSymbolNotFound)
}

// TestGoRename: a rename across the project is one preview (one diff over
// every file) applied once after one confirmation; near-miss names, the
// name in a string and in a comment stay; the project's tests pass after,
// and the diagnostics after the edit are empty.
func TestGoRename(t *testing.T) {
	f := goFixture(t)
	preview := f.OK("refactor", []protocol.Fact{symbol("CalcTotal")}, "rename_symbol", map[string]any{"name": "CalcTotal", "new_name": "InvoiceTotal"}, false)
	diff, _ := preview.Result["diff"].(string)
	for _, file := range []string{"billing/calc.go", "billing/calc_test.go", "cmd/shop/main.go"} {
		if !strings.Contains(diff, "--- a/"+file) {
			t.Errorf("the diff misses %s:\n%s", file, diff)
		}
	}
	if f.File("billing/calc.go") != readFixture(t, "goproj/billing/calc.go") {
		t.Fatal("the preview wrote")
	}
	applied := f.applyPreview(preview)
	if d := strs(applied.Result["diagnostics"]); len(d) != 0 {
		t.Errorf("diagnostics after the rename: %q", d)
	}
	if _, ok := applied.Result["diff"]; ok {
		t.Error("the apply's answer repeats the diff")
	}
	calc := f.File("billing/calc.go")
	for _, keep := range []string{
		"func CalcTotalWeight(", "func CalcTotalsRow(", // near misses
		`"CalcTotal: %d, weight: %d"`,                   // a string
		"// The label below names CalcTotal on purpose", // a comment
		"func InvoiceTotal(items []Item) int",
		"InvoiceTotal(items), CalcTotalWeight(items)",
	} {
		if !strings.Contains(calc, keep) {
			t.Errorf("billing/calc.go lacks %q:\n%s", keep, calc)
		}
	}
	main := f.File("cmd/shop/main.go")
	if !strings.Contains(main, "billing.InvoiceTotal(items)") || !strings.Contains(main, `"see billing.CalcTotal"`) || !strings.Contains(main, "// calcTotal in a comment") {
		t.Errorf("cmd/shop/main.go:\n%s", main)
	}
	if !strings.Contains(f.File("billing/calc_test.go"), "InvoiceTotal(items); got != 540") {
		t.Errorf("the test file was not renamed")
	}
	f.run("go", "vet", "./...")
	f.run("go", "test", "./...")
	// The preview's handle is spent: applying it again is refused.
	tools := f.Eval("refactor", preview.Next.ContinuationFacts...)
	if _, ok := tools["apply_code_edit"]; ok {
		t.Error("apply_code_edit offered again after the change was applied")
	}
}

// TestGoMovePackage: move_code moves a package directory and rewrites its
// importers (the package name follows the new last element); the project
// builds and its tests pass after.
func TestGoMovePackage(t *testing.T) {
	f := goFixture(t)
	tools := f.Eval("refactor", mentioned("billing/tax"), change("move"))
	m, ok := tools["move_code"]
	if !ok {
		t.Fatalf("refactor offers %s", domaintest.Names(tools))
	}
	if e := domaintest.EnumOf(m, "from"); len(e) != 1 || e[0] != "billing/tax" {
		t.Errorf("move_code from enum %v", e)
	}
	preview, err := f.Invoke(m, map[string]any{"from": "billing/tax", "to": "finance/vat"}, false)
	if err != nil {
		t.Fatalf("move_code: %v %+v", err, err.Payload.Details)
	}
	diff, _ := preview.Result["diff"].(string)
	for _, w := range []string{"rename from billing/tax/tax.go", "rename to finance/vat/tax.go", `+	"example.com/shop/finance/vat"`, "+package vat", "vat.Rate"} {
		if !strings.Contains(diff, w) {
			t.Errorf("diff lacks %q:\n%s", w, diff)
		}
	}
	applied := f.applyPreview(preview)
	if f.Exists("billing/tax") || !f.Exists("finance/vat/tax.go") {
		t.Error("the directory was not moved")
	}
	if d := strs(applied.Result["diagnostics"]); len(d) != 0 {
		t.Errorf("diagnostics after the move: %q", d)
	}
	f.run("go", "build", "./...")
	f.run("go", "test", "./...")
}

// TestGoDiagnostics: diagnostics reports a type error the language server
// finds, and organize_imports previews the removal of an unused import.
func TestGoDiagnostics(t *testing.T) {
	f := goFixture(t)
	domaintest.WriteTree(t, f.root, map[string]string{"billing/broken.go": "package billing\n\nimport \"strings\"\n\nfunc Broken() int { return undefinedThing }\n"})
	resp := f.OK("diagnose", []protocol.Fact{mentioned("billing/broken.go")}, "diagnostics", map[string]any{"path": "billing/broken.go"}, false)
	d := strings.Join(strs(resp.Result["diagnostics"]), "\n")
	if !strings.Contains(d, "billing/broken.go:5:") || !strings.Contains(d, "undefinedThing") {
		t.Errorf("diagnostics:\n%s", d)
	}
	preview := f.OK("refactor", []protocol.Fact{mentioned("billing/broken.go"), change("imports")}, "organize_imports", map[string]any{"path": "billing/broken.go"}, false)
	if diff, _ := preview.Result["diff"].(string); !strings.Contains(diff, `-import "strings"`) {
		t.Errorf("organize_imports diff:\n%s", diff)
	}
}
