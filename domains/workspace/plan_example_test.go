package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/manglecp/manglecp/domains/workspace"
)

// Preview a rename across two files as one plan (a whole-word replace in
// one, a language server's range edit in the other), show its one diff,
// then apply it: each file is written only if it still has the content
// the preview read.
func ExampleWorkspace_Preview() {
	dir, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "a.py"), []byte("def calc_total(x):\n    return calc_total_weight(x)\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "b.py"), []byte("from a import calc_total\n"), 0o644)

	ws, err := workspace.Open(workspace.Config{Roots: []string{dir}})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	ctx := context.Background()
	plan, err := ws.Preview(ctx, []workspace.Edit{
		{Path: "a.py", Old: "calc_total", New: "invoice_total", All: true, Word: true},
		// b.py line 0, characters 14-24: "calc_total" (UTF-16 code units, as LSP counts).
		{Path: "b.py", Spans: []workspace.Span{{Start: workspace.Position{Line: 0, Character: 14}, End: workspace.Position{Line: 0, Character: 24}, New: "invoice_total"}}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan)
	fmt.Print(plan.Diff)
	written, err := ws.Apply(ctx, plan)
	fmt.Println(written, err)
	b, _ := os.ReadFile(filepath.Join(dir, "b.py"))
	fmt.Print(string(b))
	// Output:
	// 2 files, 2 replacements
	// --- a/a.py
	// +++ b/a.py
	// @@ -1,2 +1,2 @@
	// -def calc_total(x):
	// +def invoice_total(x):
	//      return calc_total_weight(x)
	// --- a/b.py
	// +++ b/b.py
	// @@ -1 +1 @@
	// -from a import calc_total
	// +from a import invoice_total
	// [a.py b.py] <nil>
	// from a import invoice_total
}
