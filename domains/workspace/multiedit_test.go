package workspace_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

// pkgTree is a small Python package with near-miss names: calc_total is
// renamed; calc_total_weight, calc_totals_row and xcalc_total are not.
var pkgTree = map[string]string{
	"shop/__init__.py":   "from .billing import calc_total\n",
	"shop/billing.py":    "def calc_total(items):\n    return sum(calc_total_weight(i) for i in items)\n\ndef calc_total_weight(i):\n    return i\n",
	"shop/report.py":     "from .billing import calc_total\n\ndef calc_totals_row(r):\n    return calc_total(r)  # calc_total of a row\n",
	"shop/xcalc.py":      "xcalc_total = 1\n",
	"README.md":          "Call calc_total.\n",
	"scripts/oneoff.py":  "print('once')\n",
	"shop/data/logo.png": "\x89PNG\r\n\x1a\n\x00\x00",
}

func newPkgFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	domaintest.WriteTree(t, dir, pkgTree)
	return newFixture(t, workspace.Config{Roots: []string{dir}})
}

// TestReplaceAcrossFiles: one replace previews every file of a glob as one
// diff (whole words only), writes nothing; one apply_edit after one
// consent writes every file; the answers hold the diff once and no id,
// digest or expiry.
func TestReplaceAcrossFiles(t *testing.T) {
	f := newPkgFixture(t)
	pre := f.OK("edit", nil, "replace", map[string]any{"old": "calc_total", "new": "invoice_total", "glob": "**/*.py"}, false)
	diff, _ := pre.Result["diff"].(string)
	if len(pre.Result) != 1 || !strings.Contains(diff, "--- a/shop/billing.py") || !strings.Contains(diff, "--- a/shop/report.py") ||
		!strings.Contains(diff, "--- a/shop/__init__.py") || strings.Contains(diff, "README") || strings.Contains(diff, "xcalc") {
		t.Fatalf("result %v", pre.Result)
	}
	if strings.Contains(diff, "invoice_total_weight") || strings.Contains(diff, "invoice_totals_row") {
		t.Errorf("a near-miss name was replaced:\n%s", diff)
	}
	if got := f.File("shop/billing.py"); !strings.Contains(got, "def calc_total(") {
		t.Fatal("the preview wrote")
	}
	if !strings.Contains(pre.Observability.Summary, "3 files, 5 replacements") || strings.Contains(pre.Observability.Summary, "apply_edit") {
		t.Errorf("summary %q", pre.Observability.Summary)
	}
	tools := f.Eval("edit", pre.Next.ContinuationFacts...)
	apply, ok := tools["apply_edit"]
	if !ok {
		t.Fatalf("after the preview, edit offers %s", domaintest.Names(tools))
	}
	if got := domaintest.EnumOf(apply, "diff"); len(got) != 1 || got[0] != diff {
		t.Errorf("apply_edit's diff %v, want the plan's diff", got)
	}
	if apply.Validity == nil || apply.Validity.ExpiresAt == nil {
		t.Errorf("apply_edit has no validity window")
	}
	r, err := f.Invoke(apply, map[string]any{"diff": diff}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Result["diff"]; ok || r.Observability.Summary != "Applied the previewed edit to 3 files." {
		t.Errorf("apply answered %q %v", r.Observability.Summary, r.Result)
	}
	want := map[string]string{
		"shop/__init__.py": "from .billing import invoice_total\n",
		"shop/billing.py":  "def invoice_total(items):\n    return sum(calc_total_weight(i) for i in items)\n\ndef calc_total_weight(i):\n    return i\n",
		"shop/report.py":   "from .billing import invoice_total\n\ndef calc_totals_row(r):\n    return invoice_total(r)  # invoice_total of a row\n",
		"shop/xcalc.py":    "xcalc_total = 1\n",
		"README.md":        "Call calc_total.\n",
	}
	for p, w := range want {
		if got := f.File(p); got != w {
			t.Errorf("%s:\n%s\nwant\n%s", p, got, w)
		}
	}
	// A plan is applied once.
	if _, err := f.Invoke(apply, map[string]any{"diff": diff}, true); err == nil || err.Code() != workspace.CodeEditInvalid {
		t.Errorf("a second apply: %v, want %s", err, workspace.CodeEditInvalid)
	}
}

// TestPreviewEdits: a list of edits in two files (two in one file) and
// preview_edit with all are one diff each, applied after one consent; a
// plan another identity previewed is not applied; a plan whose file
// changed writes nothing.
func TestPreviewEdits(t *testing.T) {
	t.Run("list", func(t *testing.T) {
		f := newPkgFixture(t)
		pre := f.OK("edit", nil, "preview_edits", map[string]any{"edits": []any{
			map[string]any{"path": "shop/billing.py", "old": "def calc_total(", "new": "def invoice_total("},
			map[string]any{"path": "shop/billing.py", "old": "return i\n", "new": "return i * 2\n"},
			map[string]any{"path": "README.md", "old": "calc_total", "new": "invoice_total"},
		}}, false)
		diff := pre.Result["diff"].(string)
		if strings.Count(diff, "--- a/") != 2 {
			t.Fatalf("diff %s", diff)
		}
		f.OK("edit", pre.Next.ContinuationFacts, "apply_edit", map[string]any{"diff": diff}, true)
		if got := f.File("shop/billing.py"); !strings.Contains(got, "def invoice_total(") || !strings.Contains(got, "return i * 2") {
			t.Errorf("billing.py %q", got)
		}
		if got := f.File("README.md"); got != "Call invoice_total.\n" {
			t.Errorf("README.md %q", got)
		}
	})
	t.Run("all", func(t *testing.T) {
		f := newPkgFixture(t)
		f.Fails("edit", facts(mentioned("shop/report.py")), "preview_edit", map[string]any{"path": "shop/report.py", "old": "calc_total", "new": "x"}, false, workspace.CodeAnchorAmbiguous)
		pre := f.OK("edit", facts(mentioned("shop/report.py")), "preview_edit", map[string]any{"path": "shop/report.py", "old": "calc_total", "new": "total", "all": true}, false)
		f.OK("edit", pre.Next.ContinuationFacts, "apply_edit", map[string]any{"diff": pre.Result["diff"]}, true)
		if got := f.File("shop/report.py"); strings.Count(got, "total") != 4 || strings.Contains(got, "calc_") {
			t.Errorf("report.py %q", got)
		}
	})
	t.Run("another identity", func(t *testing.T) {
		alice, bob := authFixtures(t)
		pre := alice.OK("edit", nil, "preview_edits", map[string]any{"edits": []any{
			map[string]any{"path": "notes.txt", "old": "world", "new": "there"}}}, false)
		bob.Fails("edit", pre.Next.ContinuationFacts, "apply_edit", map[string]any{"diff": pre.Result["diff"]}, true, workspace.CodeEditInvalid)
		if got := alice.File("notes.txt"); got != "hello\nworld\n" {
			t.Errorf("bob wrote alice's plan: %q", got)
		}
	})
	t.Run("changed since", func(t *testing.T) {
		f := newPkgFixture(t)
		pre := f.OK("edit", nil, "replace", map[string]any{"old": "calc_total", "new": "invoice_total", "path": "shop"}, false)
		domaintest.WriteTree(t, f.root, map[string]string{"shop/report.py": "changed\n"})
		f.Fails("edit", pre.Next.ContinuationFacts, "apply_edit", map[string]any{"diff": pre.Result["diff"]}, true, workspace.CodeFileChanged)
		if got := f.File("shop/billing.py"); !strings.Contains(got, "def calc_total(") {
			t.Errorf("billing.py was written though report.py changed")
		}
	})
	t.Run("a made-up handle", func(t *testing.T) {
		f := newPkgFixture(t)
		fact := protocol.NewFact("previewed", "README.md", "pabcdefghijkl", "", "", "x")
		if tools := f.Eval("edit", fact); tools["apply_edit"].Name != "" {
			t.Errorf("apply_edit offered for a handle the server does not hold")
		}
	})
	t.Run("nothing changes", func(t *testing.T) {
		f := newPkgFixture(t)
		f.Fails("edit", nil, "preview_edits", map[string]any{"edits": []any{
			map[string]any{"path": "README.md", "old": "Call", "new": "Call"}}}, false, workspace.CodeEditConflict)
		f.Fails("edit", nil, "replace", map[string]any{"old": "nowhere_name", "new": "x"}, false, workspace.CodeAnchorNotFound)
	})
}

// TestMoveMakesParents: a move into a new directory makes it, and its
// from is any path even when other files are mentioned.
func TestMoveMakesParents(t *testing.T) {
	f := newPkgFixture(t)
	m := f.Eval("reorganize", mentioned("shop/billing.py"))["move"]
	if e := domaintest.EnumOf(m, "from"); len(e) != 0 {
		t.Errorf("move's from is bound to %v", e)
	}
	if _, err := f.Invoke(m, map[string]any{"from": "scripts/oneoff.py", "to": "scripts/archive/old/oneoff.py"}, true); err != nil {
		t.Fatal(err)
	}
	if f.Exists("scripts/oneoff.py") || f.File("scripts/archive/old/oneoff.py") != "print('once')\n" {
		t.Error("not moved")
	}
}
