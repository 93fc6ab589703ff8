package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/upstream"
)

// composeTree is a small package with near-miss names: calc_total is to
// change, calc_total_weight and zcalc_total never; dup.py holds a line
// ("calc_total") that also occurs inside an earlier line, so its edit must
// grow to land where the preview showed it.
var composeTree = map[string]string{
	"pkg/a.py":    "from .calc import calc_total, calc_total_weight\n\n\ndef f():\n    return calc_total(1)  # calc_total\n",
	"pkg/calc.py": "def calc_total(x):\n    return x\n\n\ndef calc_total_weight(x):\n    return x\n",
	"pkg/dup.py":  "zcalc_total = 1\ncalc_total\ny = 2\ncalc_total\n",
	"notes.txt":   "calc_total in a text file\n",
}

var composeWant = map[string]string{
	"pkg/a.py":    "from .calc import invoice_total, calc_total_weight\n\n\ndef f():\n    return invoice_total(1)  # invoice_total\n",
	"pkg/calc.py": "def invoice_total(x):\n    return x\n\n\ndef calc_total_weight(x):\n    return x\n",
	"pkg/dup.py":  "zcalc_total = 1\ninvoice_total\ny = 2\ninvoice_total\n",
	"notes.txt":   "calc_total in a text file\n",
}

// composeFixture is a gateway over the filesystem upstream of a
// temporary root holding composeTree, and the root.
func composeFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	root := t.TempDir()
	domaintest.WriteTree(t, root, composeTree)
	return newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{filesystemUpstream(t, root)}}), root
}

// holds fails t unless text (what, for the message) holds every want.
func holds(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// filesAre fails t unless every file under root is as want says.
func filesAre(t *testing.T, root string, want map[string]string) {
	t.Helper()
	for rel, content := range want {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if string(b) != content {
			t.Errorf("%s = %q, want %q", rel, b, content)
		}
	}
}

// previewReplace runs fs_replace and returns its answer and the facts
// the next evaluation gets (the previewed_edit).
func previewReplace(t *testing.T, f *fixture, root string) (*protocol.InvokeResponse, []protocol.Fact) {
	t.Helper()
	r := f.OK("edit_files", nil, "fs_replace", map[string]any{"old": "calc_total", "new": "invoice_total", "path": root, "glob": "**/*.py"}, false)
	if r.Next == nil || len(r.Next.ContinuationFacts) != 1 || r.Next.ContinuationFacts[0].Pred != "previewed_edit" {
		t.Fatalf("replace's next = %+v", r.Next)
	}
	return r, r.Next.ContinuationFacts
}

// TestComposedReplace: through the MCP filesystem server, fs_replace
// reads the matching files through the upstream and answers one diff
// (whole words: near misses untouched), writing nothing; edit_files then
// offers fs_apply_edits with that diff as its one value, behind the
// user's confirmation; applied, every file is as the diff said (one
// edit_file per file); a second apply, or an apply after a file changed,
// writes nothing.
func TestComposedReplace(t *testing.T) {
	f, root := composeFixture(t)
	r, facts := previewReplace(t, f, root)
	diff, _ := r.Result["diff"].(string)
	holds(t, "the diff", diff, "--- a/pkg/a.py", "+def invoice_total(x):", "+    return invoice_total(1)  # invoice_total", "+invoice_total")
	if strings.Contains(diff, "invoice_total_weight") || strings.Contains(diff, "zinvoice") || strings.Contains(diff, "notes.txt") {
		t.Errorf("the diff changes a near miss or a file outside the glob:\n%s", diff)
	}
	if !strings.Contains(r.Observability.Summary, "3 files, 6 replacements; nothing written") {
		t.Errorf("summary = %q", r.Observability.Summary)
	}
	filesAre(t, root, composeTree)

	tools := f.Eval("edit_files", facts...)
	apply, ok := tools["fs_apply_edits"]
	if !ok {
		t.Fatalf("edit_files with the preview does not offer fs_apply_edits (offers %v)", keys(tools))
	}
	if apply.Safety == nil || !apply.Safety.RequiresUserConfirmation {
		t.Errorf("fs_apply_edits needs no confirmation: %+v", apply.Safety)
	}
	enum, _ := apply.InputSchema["properties"].(map[string]any)["diff"].(map[string]any)["enum"].([]any)
	if len(enum) != 1 || enum[0] != facts[0].Args[1] {
		t.Fatalf("the apply's diff = %v, want the previewed one", enum)
	}
	args := map[string]any{"diff": enum[0]}
	f.Fails("edit_files", facts, "fs_apply_edits", args, false, protocol.CodeConfirmationRequired)
	filesAre(t, root, composeTree)
	done := f.OK("edit_files", facts, "fs_apply_edits", args, true)
	if !strings.Contains(done.Observability.Summary, "Applied the previewed edit to 3 files") {
		t.Errorf("apply summary = %q", done.Observability.Summary)
	}
	filesAre(t, root, composeWant)
	f.Fails("edit_files", facts, "fs_apply_edits", args, true, gateway.CodeEditUnknown)

	// A file changed after the preview: nothing is written.
	domaintest.WriteTree(t, root, composeTree)
	_, facts = previewReplace(t, f, root)
	domaintest.WriteTree(t, root, map[string]string{"pkg/dup.py": "calc_total\n"})
	e := f.Fails("edit_files", facts, "fs_apply_edits", map[string]any{"diff": facts[0].Args[1]}, true, gateway.CodeFileChanged)
	if e.Details == nil || e.Details.Data["path"] != "pkg/dup.py" {
		t.Errorf("file changed: %+v", e.Details)
	}
	filesAre(t, root, map[string]string{"pkg/a.py": composeTree["pkg/a.py"], "pkg/calc.py": composeTree["pkg/calc.py"], "pkg/dup.py": "calc_total\n"})
}

// TestComposedSearchAndMove: fs_search_text answers the matching lines
// with their numbers and context, not whole files; fs_move makes the
// destination's directory and moves, after the user's confirmation.
func TestComposedSearchAndMove(t *testing.T) {
	f, root := composeFixture(t)
	r := f.OK("explore_files", nil, "fs_search_text", map[string]any{"pattern": "calc_total", "path": root, "glob": "**/*.py", "word": true, "context": 0}, false)
	text := answer(r)
	holds(t, "search", text, "pkg/calc.py\n1: def calc_total(x):", "pkg/dup.py\n2: calc_total\n..\n4: calc_total", "5: "+"    return calc_total(1)")
	if strings.Contains(text, "calc_total_weight(x)") || strings.Contains(text, "zcalc") || strings.Contains(text, "return x") {
		t.Errorf("search shows a near miss or a line without a match:\n%s", text)
	}
	if !strings.Contains(r.Observability.Summary, "5 matching lines in 3 of 3 files") {
		t.Errorf("summary = %q", r.Observability.Summary)
	}
	src, dst := filepath.Join(root, "pkg", "dup.py"), filepath.Join(root, "old", "archive", "dup.py")
	tools := f.Eval("organize_files")
	if m := tools["fs_move"]; m.Safety == nil || !m.Safety.RequiresUserConfirmation {
		t.Fatalf("fs_move = %+v", m.Safety)
	}
	f.Fails("organize_files", nil, "fs_move", map[string]any{"source": src, "destination": dst}, false, protocol.CodeConfirmationRequired)
	mv := f.OK("organize_files", nil, "fs_move", map[string]any{"source": src, "destination": dst}, true)
	if !strings.Contains(mv.Observability.Summary, `create_directory: "`) || !strings.Contains(mv.Observability.Summary, `move_file: "Successfully moved`) {
		t.Errorf("move summary = %q", mv.Observability.Summary)
	}
	filesAre(t, root, map[string]string{"old/archive/dup.py": composeTree["pkg/dup.py"]})
}

// TestComposedToolsFollowTheirParts: a composed tool is held to the rules
// of the upstream tools it calls, whatever pack offers it: with edit_file
// waived, apply_edits asks no one; with create_directory prohibited, move
// is never offered.
func TestComposedToolsFollowTheirParts(t *testing.T) {
	root := t.TempDir()
	domaintest.WriteTree(t, root, composeTree)
	pack := fstest.MapFS{
		"domain/own.mg": {Data: []byte(`
decl_intent("change", "Change files.").
decl_intent_fact("change", "previewed_edit", "optional").
mandatory_for_intent("change", T) :- upstream_macro(_, T, _).
`)},
		"policy/own.mg": {Data: []byte(`
confirmation_waived(T) :- upstream_tool(_, T, "edit_file").
prohibited(T, "no directories here") :- upstream_tool(_, T, "create_directory").
`)},
	}
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{filesystemUpstream(t, root)}, Rules: pack, RulesName: "own"})
	r := f.OK("change", nil, "fs_replace", map[string]any{"old": "calc_total", "new": "invoice_total", "path": root, "glob": "**/*.py"}, false)
	tools := f.Eval("change", r.Next.ContinuationFacts...)
	if _, ok := tools["fs_move"]; ok {
		t.Errorf("fs_move is offered though create_directory is prohibited")
	}
	apply, ok := tools["fs_apply_edits"]
	if !ok || apply.Safety == nil || apply.Safety.RequiresUserConfirmation {
		t.Fatalf("fs_apply_edits with edit_file waived: offered %v, safety %+v", ok, apply.Safety)
	}
	f.OK("change", r.Next.ContinuationFacts, "fs_apply_edits", map[string]any{"diff": r.Next.ContinuationFacts[0].Args[1]}, false)
	filesAre(t, root, composeWant)
}

// TestComposedOnAnOddServer: the composed tools on a server of the
// filesystem server's shapes that answers otherwise or fails on purpose
// (testdata/oddfs): a read in pieces and relative or outside paths from
// its search still give the right edit; "\r\n" made "\n" by its edit is
// the edit previewed; a read with line numbers writes nothing; an edit
// that fails midway or lies leaves every file as it was, and says so.
func TestComposedOnAnOddServer(t *testing.T) {
	bin := builds.Command(t, "domains/gateway/testdata/oddfs")
	crlf := map[string]string{"win/c.py": "calc_total = 1\r\nprint(calc_total)\r\n"}
	for _, tc := range []struct {
		mode  string
		files map[string]string
		want  map[string]string // the files after; nil: as before
		code  protocol.Code     // the apply's error, "" for none
		says  string            // in the error's message or the preview's skipped note
	}{
		{mode: "chunks", files: composeTree, want: composeWant, says: "2 paths the search answered lie outside"},
		{mode: "crlf", files: crlf, want: map[string]string{"win/c.py": "invoice_total = 1\nprint(invoice_total)\n"}},
		{mode: "numbered", files: composeTree, code: gateway.CodeEditIncomplete, says: "nothing was written"},
		{mode: "failmid", files: composeTree, code: gateway.CodeEditIncomplete, says: "the 2 files written were put back"},
		{mode: "liar", files: composeTree, code: gateway.CodeEditIncomplete, says: "does not read back as previewed"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			root := t.TempDir()
			domaintest.WriteTree(t, root, tc.files)
			up := gateway.Upstream{Pack: "filesystem", Config: upstream.Config{Name: "fs", Command: []string{bin, root}, Env: []string{"ODDFS_MODE=" + tc.mode}}}
			f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{up}})
			r, facts := previewReplace(t, f, root)
			if skipped, _ := r.Result["skipped"].(string); tc.code == "" && !strings.Contains(skipped, tc.says) {
				t.Errorf("skipped = %q, want %q", skipped, tc.says)
			}
			filesAre(t, root, tc.files)
			args := map[string]any{"diff": facts[0].Args[1]}
			if tc.code == "" {
				f.OK("edit_files", facts, "fs_apply_edits", args, true)
				filesAre(t, root, tc.want)
				return
			}
			e := f.Fails("edit_files", facts, "fs_apply_edits", args, true, tc.code)
			if !strings.Contains(e.Message, tc.says) {
				t.Errorf("error = %q, want %q", e.Message, tc.says)
			}
			if nr, _ := e.Details.Data["not_restored"].([]any); len(nr) != 0 {
				t.Errorf("not restored: %v", nr)
			}
			filesAre(t, root, tc.files)
		})
	}
}

// TestComposedToolsPerIdentity: the composed tools follow the identity's
// grants (without upstream:fs none is offered) and a previewed edit is
// the previewing identity's: bob, sending alice's previewed_edit fact,
// is offered the apply but it writes nothing; alice's apply then works.
func TestComposedToolsPerIdentity(t *testing.T) {
	root := t.TempDir()
	domaintest.WriteTree(t, root, composeTree)
	perms := []string{"intent:edit_files", "upstream:fs"}
	alice := manglecp.Identity{Name: "alice", Token: "alice-token-0123456789", Permissions: perms}
	bob := manglecp.Identity{Name: "bob", Token: "bob-token-0123456789ab", Permissions: perms}
	eve := manglecp.Identity{Name: "eve", Token: "eve-token-0123456789ab", Permissions: []string{"intent:edit_files"}}
	f := newFixtureWith(t, gateway.Config{Upstreams: []gateway.Upstream{filesystemUpstream(t, root)}}, withIdentities(alice, bob, eve))
	if tools := f.as(eve.Token).Eval("edit_files"); len(tools) != 0 {
		t.Errorf("without upstream:fs, edit_files offers %v", keys(tools))
	}
	a, b := f.as(alice.Token), f.as(bob.Token)
	_, facts := previewReplace(t, a, root)
	args := map[string]any{"diff": facts[0].Args[1]}
	b.Fails("edit_files", facts, "fs_apply_edits", args, true, gateway.CodeEditUnknown)
	filesAre(t, root, composeTree)
	a.OK("edit_files", facts, "fs_apply_edits", args, true)
	filesAre(t, root, composeWant)
}
