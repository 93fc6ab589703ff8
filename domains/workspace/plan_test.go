package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
)

func openPlanDir(t *testing.T, files map[string]string) (*workspace.Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	domaintest.WriteTree(t, dir, files)
	ws, err := workspace.Open(workspace.Config{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, dir
}

func TestPlanEdits(t *testing.T) {
	ctx := context.Background()
	src := "calc_total = 1\ncalc_total_weight(calc_totals_row, calc_total)\n# calc_total in a comment\nxcalc_total\n"
	tests := []struct {
		name  string
		edits []workspace.Edit
		want  string // a.py after, or the error code
	}{
		{"word all", []workspace.Edit{{Path: "a.py", Old: "calc_total", New: "invoice_total", All: true, Word: true}},
			"invoice_total = 1\ncalc_total_weight(calc_totals_row, invoice_total)\n# invoice_total in a comment\nxcalc_total\n"},
		{"one occurrence is ambiguous", []workspace.Edit{{Path: "a.py", Old: "calc_total", New: "x"}}, string(workspace.CodeAnchorAmbiguous)},
		{"not found", []workspace.Edit{{Path: "a.py", Old: "nope", New: "x"}}, string(workspace.CodeAnchorNotFound)},
		{"word not found", []workspace.Edit{{Path: "a.py", Old: "calc", New: "x", Word: true}}, string(workspace.CodeAnchorNotFound)},
		{"edits in order", []workspace.Edit{{Path: "a.py", Old: "calc_total = 1", New: "t = 2"}, {Path: "a.py", Old: "t = 2", New: "t = 3"}},
			strings.Replace(src, "calc_total = 1", "t = 3", 1)},
		{"spans", []workspace.Edit{{Path: "a.py", Spans: []workspace.Span{
			{Start: workspace.Position{Line: 1, Character: 35}, End: workspace.Position{Line: 1, Character: 45}, New: "invoice_total"},
			{Start: workspace.Position{Line: 0, Character: 0}, End: workspace.Position{Line: 0, Character: 10}, New: "invoice_total"},
		}}}, "invoice_total = 1\ncalc_total_weight(calc_totals_row, invoice_total)\n# calc_total in a comment\nxcalc_total\n"},
		{"overlapping spans", []workspace.Edit{{Path: "a.py", Spans: []workspace.Span{
			{Start: workspace.Position{Line: 0, Character: 0}, End: workspace.Position{Line: 0, Character: 5}, New: "a"},
			{Start: workspace.Position{Line: 0, Character: 3}, End: workspace.Position{Line: 0, Character: 6}, New: "b"},
		}}}, string(workspace.CodeEditConflict)},
		{"span outside", []workspace.Edit{{Path: "a.py", Spans: []workspace.Span{
			{Start: workspace.Position{Line: 9, Character: 0}, End: workspace.Position{Line: 9, Character: 1}, New: "a"}}}}, string(workspace.CodeEditConflict)},
		{"outside the root", []workspace.Edit{{Path: "../a.py", Old: "a", New: "b"}}, string(workspace.CodePathOutsideRoots)},
		{"no edit", nil, string(workspace.CodeEditConflict)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws, dir := openPlanDir(t, map[string]string{"a.py": src})
			plan, err := ws.Preview(ctx, tc.edits)
			if strings.HasPrefix(tc.want, "x-") {
				if string(codeOf(err)) != tc.want {
					t.Fatalf("err %v, want %s", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "a.py")); string(b) != src {
				t.Fatal("the preview wrote")
			}
			if _, err := ws.Apply(ctx, plan); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "a.py")); string(b) != tc.want {
				t.Errorf("a.py is\n%s\nwant\n%s", b, tc.want)
			}
		})
	}
}

// A plan whose files changed since the preview writes none of them.
func TestPlanApplyChecksEveryFile(t *testing.T) {
	ctx := context.Background()
	ws, dir := openPlanDir(t, map[string]string{"a.txt": "one\n", "sub/b.txt": "one\n"})
	plan, err := ws.Preview(ctx, []workspace.Edit{{Path: "a.txt", Old: "one", New: "two"}, {Path: "sub/b.txt", Old: "one", New: "two"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Paths(), ","); got != "a.txt,sub/b.txt" {
		t.Fatalf("paths %s", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub/b.txt"), []byte("uno\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Apply(ctx, plan); codeOf(err) != workspace.CodeFileChanged {
		t.Fatalf("apply after a change: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "one\n" {
		t.Fatalf("a.txt was written: %q", b)
	}
}

// Positions count UTF-16 code units, as LSP does.
func TestPlanSpansUTF16(t *testing.T) {
	ws, dir := openPlanDir(t, map[string]string{"u.txt": "a😀b café x\r\nsecond\n"})
	// "😀" is two UTF-16 units: "b" is character 3; "x" is 10 on the CRLF line.
	plan, err := ws.Preview(context.Background(), []workspace.Edit{{Path: "u.txt", Spans: []workspace.Span{
		{Start: workspace.Position{Line: 0, Character: 3}, End: workspace.Position{Line: 0, Character: 4}, New: "B"},
		{Start: workspace.Position{Line: 0, Character: 10}, End: workspace.Position{Line: 0, Character: 99}, New: "X"},
		{Start: workspace.Position{Line: 2, Character: 0}, End: workspace.Position{Line: 2, Character: 0}, New: "third\n"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Apply(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "u.txt")); string(b) != "a😀B café X\r\nsecond\nthird\n" {
		t.Errorf("u.txt %q", b)
	}
}
