package code_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/protocol"
)

// Files gopls does not load in its default build configuration, added to
// the goproj fixture: a one-off script (//go:build ignore) importing
// billing under another name, a file of the billing package behind a
// custom tag, one for another GOOS, and test data that must stay.
var unloadedFiles = map[string]string{
	"scripts/fix.go": `//go:build ignore

// One-off: print the CalcTotal of a sample ("CalcTotal" stays in strings).
package main

import (
	"fmt"

	bl "example.com/shop/billing"
)

func main() {
	items := []bl.Item{{Name: "pen", Price: 100, Qty: 1}}
	fmt.Println("CalcTotal:", bl.CalcTotal(items), bl.CalcTotalWeight(items))
}
`,
	"billing/calc_integration.go": `//go:build integration

package billing

// IntegrationTotal checks CalcTotal against a sum by hand.
func IntegrationTotal(items []Item) bool {
	row := struct{ CalcTotal int }{CalcTotal: CalcTotal(items)}
	return row.CalcTotal == CalcTotal(items) && shadow()
}

func shadow() bool {
	CalcTotal := 3 // a local variable: not the function
	return CalcTotal == 3
}
`,
	"billing/calc_windows.go": `package billing

var windowsTotal = CalcTotal
`,
	"billing/testdata/sample.go": `package sample

import "example.com/shop/billing"

var _ = billing.CalcTotal
`,
}

func unloadedFixture(t *testing.T) *fixture {
	t.Helper()
	srv := goplsServer(t)
	testGo(t)
	root := copyFixture(t, "goproj")
	for name, content := range unloadedFiles {
		domaintest.WriteTree(t, root, map[string]string{name: content})
	}
	return newFixture(t, code.Config{Roots: []string{root}, Servers: map[string]code.Server{code.LangGo: srv}})
}

// TestGoRenameUnloadedFiles: gopls does not rename in files its build
// configuration excludes (//go:build ignore, a custom tag, another GOOS);
// the domain finds their uses by parsing them and adds them to the same
// one-step preview with a note. Strings, comments, near misses, a local
// variable and a struct field of the same name stay; test data stays; the
// project builds and its tests pass after, also with the tag and the
// script.
func TestGoRenameUnloadedFiles(t *testing.T) {
	f := unloadedFixture(t)
	preview := f.OK("refactor", []protocol.Fact{symbol("CalcTotal")}, "rename_symbol", map[string]any{"name": "CalcTotal", "new_name": "InvoiceTotal"}, false)
	diff, _ := preview.Result["diff"].(string)
	for _, file := range []string{"billing/calc.go", "cmd/shop/main.go", "scripts/fix.go", "billing/calc_integration.go", "billing/calc_windows.go"} {
		if !strings.Contains(diff, "--- a/"+file) {
			t.Errorf("the diff misses %s:\n%s", file, diff)
		}
	}
	if strings.Contains(diff, "testdata") {
		t.Errorf("the diff edits test data:\n%s", diff)
	}
	note, _ := preview.Result["note"].(string)
	for _, w := range []string{"billing/calc_integration.go", "billing/calc_windows.go", "scripts/fix.go", "build constraints"} {
		if !strings.Contains(note, w) {
			t.Errorf("note %q lacks %q", note, w)
		}
	}
	f.applyPreview(preview)
	script := f.File("scripts/fix.go")
	for _, w := range []string{"bl.InvoiceTotal(items)", "bl.CalcTotalWeight(items)", `"CalcTotal:"`, "print the CalcTotal of a sample"} {
		if !strings.Contains(script, w) {
			t.Errorf("scripts/fix.go lacks %q:\n%s", w, script)
		}
	}
	tagged := f.File("billing/calc_integration.go")
	for _, w := range []string{"{CalcTotal: InvoiceTotal(items)}", "row.CalcTotal == InvoiceTotal(items)", "CalcTotal := 3", "return CalcTotal == 3", "// IntegrationTotal checks CalcTotal"} {
		if !strings.Contains(tagged, w) {
			t.Errorf("billing/calc_integration.go lacks %q:\n%s", w, tagged)
		}
	}
	if w := f.File("billing/calc_windows.go"); !strings.Contains(w, "= InvoiceTotal\n") {
		t.Errorf("billing/calc_windows.go:\n%s", w)
	}
	if s := f.File("billing/testdata/sample.go"); s != unloadedFiles["billing/testdata/sample.go"] {
		t.Errorf("test data changed:\n%s", s)
	}
	f.run("go", "vet", "./...")
	f.run("go", "test", "./...")
	f.run("go", "vet", "-tags", "integration", "./billing")
	f.run("go", "vet", "scripts/fix.go")
}

// TestGoReferencesUnloadedFiles: find_symbol lists the uses in files gopls
// does not load too, with a note saying how they were found.
func TestGoReferencesUnloadedFiles(t *testing.T) {
	f := unloadedFixture(t)
	resp := f.OK("symbols", nil, "find_symbol", map[string]any{"name": "CalcTotal"}, false)
	refs := strings.Join(strs(resp.Result["references"]), "\n")
	for _, w := range []string{"scripts/fix.go:14: ", "billing/calc_integration.go:7: ", "billing/calc_windows.go:3: "} {
		if !strings.Contains(refs, w) {
			t.Errorf("references lack %q:\n%s", w, refs)
		}
	}
	if strings.Contains(refs, "testdata") || strings.Contains(refs, "calc_integration.go:12:") {
		t.Errorf("references hold test data or the local variable:\n%s", refs)
	}
	if note, _ := resp.Result["note"].(string); !strings.Contains(note, "build constraints") {
		t.Errorf("note %q", note)
	}
}
