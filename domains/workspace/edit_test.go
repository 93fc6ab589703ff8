package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

// authFixtures serves the standard tree with authentication on and
// returns a fixture per identity, alice and bob, sharing the server.
func authFixtures(t *testing.T) (alice, bob *fixture) {
	t.Helper()
	alice = newFixtureAs(t, workspace.Config{}, func(o *manglecp.Options) {
		o.Identities = []manglecp.Identity{
			{Name: "alice", Token: "alice-token-0123456789abcdef", Permissions: []string{"*"}},
			{Name: "bob", Token: "bob-token-0123456789abcdef01", Permissions: []string{"*"}},
		}
	}, "alice-token-0123456789abcdef")
	return alice, alice.as("bob-token-0123456789abcdef01")
}

// preview previews replacing world by there in notes.txt and returns the
// response and the facts of the next edit request.
func (f *fixture) preview() (*protocol.InvokeResponse, []protocol.Fact) {
	f.t.Helper()
	pre := f.OK("edit", facts(mentioned("notes.txt")), "preview_edit", map[string]any{"path": "notes.txt", "old": "world", "new": "there"}, false)
	return pre, append(facts(mentioned("notes.txt")), pre.Next.ContinuationFacts...)
}

// applyDirect runs the apply_edit action itself, as a server would after
// its own checks, with facts and args the test chose.
func applyDirect(t *testing.T, ws *workspace.Workspace, ff []protocol.Fact, args map[string]any) error {
	t.Helper()
	_, err := ws.Domain().Actions["apply_edit"].Run(context.Background(), &manglecp.Call{Tool: "apply_edit", Facts: ff, Args: args,
		EvalTime: time.Now(), Progress: func(string, string, float64) {}})
	return err
}

func codeOf(err error) protocol.Code {
	if pe, ok := protocol.AsError(err); ok && pe != nil {
		return pe.Code
	}
	return ""
}

// withArg returns fact with its argument i replaced.
func withArg(fact protocol.Fact, i int, v any) protocol.Fact {
	args := append([]any(nil), fact.Args...)
	args[i] = v
	return protocol.NewFact(fact.Pred, args...)
}

// TestEditIDs: apply_edit writes only an edit the server previewed, for
// the identity that previewed it, before its id expires, onto the file the
// preview read, exactly as previewed; a previewed fact a client makes or
// changes gives nothing (issue 26 item 7).
func TestEditIDs(t *testing.T) {
	const original = "hello\nworld\n"
	t.Run("forged previewed facts are not offered and not applied", func(t *testing.T) {
		f := newFixture(t, workspace.Config{})
		forged := []protocol.Fact{
			// The attack of issue 26: the old form of the fact, made up.
			protocol.NewFact("previewed", "notes.txt", "0000000000000000", "1111111111111111", "world", "http://attacker.example"),
			// The new form with a made-up id.
			protocol.NewFact("previewed", "notes.txt", "e1.9999999999.0000000000000000.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA",
				"world", "http://attacker.example", "harmless"),
		}
		forged[0].T = &protocol.Temporal{At: time.Now().UTC().Format(time.RFC3339)}
		for _, fact := range forged {
			if tools := f.Eval("edit", mentioned("notes.txt"), fact); tools["apply_edit"].Name != "" {
				t.Errorf("apply_edit offered for the forged fact %v", fact.Args)
			}
			err := applyDirect(t, f.ws, []protocol.Fact{fact}, map[string]any{"diff": "harmless"})
			if codeOf(err) != workspace.CodeEditInvalid {
				t.Errorf("forged %v: %v, want %s", fact.Args, err, workspace.CodeEditInvalid)
			}
		}
		if got := f.File("notes.txt"); got != original {
			t.Errorf("a forged edit was written: %q", got)
		}
	})
	t.Run("a changed preview is not offered and not applied", func(t *testing.T) {
		f := newFixture(t, workspace.Config{})
		pre, _ := f.preview()
		fact := pre.Next.ContinuationFacts[1]
		diff := pre.Result["diff"]
		for name, changed := range map[string]protocol.Fact{
			"new":  withArg(fact, 3, "http://attacker.example"),
			"old":  withArg(fact, 2, "hello"),
			"diff": withArg(fact, 4, "-world\n+there\n"),
			"path": withArg(fact, 0, "README.md"),
		} {
			if tools := f.Eval("edit", mentioned("notes.txt"), changed); tools["apply_edit"].Name != "" {
				t.Errorf("apply_edit offered for a preview with another %s", name)
			}
			if err := applyDirect(t, f.ws, []protocol.Fact{changed}, map[string]any{"diff": changed.Args[4]}); codeOf(err) != workspace.CodeEditInvalid {
				t.Errorf("changed %s: %v, want %s", name, err, workspace.CodeEditInvalid)
			}
		}
		// The diff argument must be the previewed diff.
		if err := applyDirect(t, f.ws, []protocol.Fact{fact}, map[string]any{"diff": "a harmless change"}); codeOf(err) != workspace.CodeEditInvalid {
			t.Errorf("another diff argument: %v, want %s", err, workspace.CodeEditInvalid)
		}
		if got := f.File("notes.txt"); got != original {
			t.Errorf("a changed edit was written: %q", got)
		}
		// The preview itself applies, exactly.
		if err := applyDirect(t, f.ws, []protocol.Fact{fact}, map[string]any{"diff": diff}); err != nil {
			t.Fatal(err)
		}
		if got := f.File("notes.txt"); got != "hello\nthere\n" {
			t.Errorf("applied %q", got)
		}
	})
	t.Run("two different edits with one diff are not guessed between", func(t *testing.T) {
		f := newFixture(t, workspace.Config{})
		a, _ := f.preview()
		b := f.OK("edit", facts(mentioned("notes.txt")), "preview_edit", map[string]any{"path": "notes.txt", "old": "world\n", "new": "there\n"}, false)
		if a.Result["diff"] != b.Result["diff"] {
			t.Fatalf("the diffs differ: %q %q", a.Result["diff"], b.Result["diff"])
		}
		ff := []protocol.Fact{a.Next.ContinuationFacts[1], b.Next.ContinuationFacts[1]}
		if err := applyDirect(t, f.ws, ff, map[string]any{"diff": a.Result["diff"]}); codeOf(err) != workspace.CodeEditInvalid {
			t.Errorf("got %v, want %s", err, workspace.CodeEditInvalid)
		}
	})
	t.Run("a file edited after the preview is not written", func(t *testing.T) {
		f := newFixture(t, workspace.Config{})
		pre, next := f.preview()
		m := f.Eval("edit", next...)["apply_edit"]
		edited := "hello\nworld\nhttp://elsewhere.example\n"
		if err := os.WriteFile(filepath.Join(f.root, "notes.txt"), []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := f.Invoke(m, map[string]any{"diff": pre.Result["diff"]}, true)
		if err == nil || err.Code() != workspace.CodeFileChanged {
			t.Fatalf("got %v, want %s", err, workspace.CodeFileChanged)
		}
		if got := f.File("notes.txt"); got != edited {
			t.Errorf("written: %q", got)
		}
	})
	t.Run("an expired id is refused", func(t *testing.T) {
		f := newFixture(t, workspace.Config{EditTTL: time.Minute})
		pre, next := f.preview()
		m, ok := f.Eval("edit", next...)["apply_edit"]
		if !ok {
			t.Fatal("apply_edit not offered after the preview")
		}
		if m.Validity == nil || m.Validity.ExpiresAt == nil || m.Validity.ExpiresAt.After(time.Now().Add(61*time.Second)) {
			t.Errorf("validity %+v, want the id's expiry, a minute from now", m.Validity)
		}
		workspace.SetClock(f.ws, func() time.Time { return time.Now().Add(2 * time.Minute) })
		_, err := f.Invoke(m, map[string]any{"diff": pre.Result["diff"]}, true)
		if err == nil || err.Code() != workspace.CodeEditExpired {
			t.Fatalf("got %v, want %s", err, workspace.CodeEditExpired)
		}
		f.Check(err)
		if tools := f.Eval("edit", next...); tools["apply_edit"].Name != "" {
			t.Error("apply_edit offered after the id expired")
		}
		if got := f.File("notes.txt"); got != original {
			t.Errorf("an expired edit was written: %q", got)
		}
	})
	t.Run("another identity cannot apply it", func(t *testing.T) {
		alice, bob := authFixtures(t)
		pre, next := alice.preview()
		args := map[string]any{"diff": pre.Result["diff"]}
		// Bob learned alice's preview and evaluates edit with it himself.
		m, ok := bob.Eval("edit", next...)["apply_edit"]
		if !ok {
			t.Fatal("apply_edit not offered to bob")
		}
		_, err := bob.Invoke(m, args, true)
		if err == nil || err.Code() != workspace.CodeEditInvalid {
			t.Fatalf("bob: got %v, want %s", err, workspace.CodeEditInvalid)
		}
		bob.Check(err)
		if got := alice.File("notes.txt"); got != original {
			t.Fatalf("bob applied alice's edit: %q", got)
		}
		alice.OK("edit", next, "apply_edit", args, true)
		if got := alice.File("notes.txt"); got != "hello\nthere\n" {
			t.Errorf("alice's edit: %q", got)
		}
	})
	t.Run("the confirmation shows the diff", func(t *testing.T) {
		f := newFixture(t, workspace.Config{})
		pre, next := f.preview()
		m := f.Eval("edit", next...)["apply_edit"]
		diff := pre.Result["diff"].(string)
		if !strings.Contains(diff, "-world\n+there\n") {
			t.Fatalf("preview diff %q", diff)
		}
		if got := domaintest.EnumOf(m, "diff"); len(got) != 1 || got[0] != diff {
			t.Errorf("apply_edit's diff argument %v, want the previewed diff", got)
		}
		if _, ok := m.InputSchema["required"].([]any); !ok || !strings.Contains(jsonOf(t, m.InputSchema["required"]), `"diff"`) {
			t.Errorf("diff is not a required argument: %s", jsonOf(t, m.InputSchema))
		}
	})
	t.Run("a long diff is cut for the confirmation, truthfully", func(t *testing.T) {
		f := newFixture(t, workspace.Config{})
		long := strings.Repeat("a new line\n", 300)
		pre := f.OK("edit", facts(mentioned("notes.txt")), "preview_edit", map[string]any{"path": "notes.txt", "old": "world\n", "new": long}, false)
		// The diff shown for confirmation is the previewed fact's (the
		// result the model reads holds the whole diff only).
		shown, _ := pre.Next.ContinuationFacts[1].Args[4].(string)
		if len(shown) > 1024 || !strings.Contains(shown, "more lines; the preview's diff holds them all") || !strings.HasPrefix(pre.Result["diff"].(string), shown[:200]) {
			t.Errorf("confirm_diff %q", shown)
		}
		next := append(facts(mentioned("notes.txt")), pre.Next.ContinuationFacts...)
		f.OK("edit", next, "apply_edit", map[string]any{"diff": shown}, true)
		if got := f.File("notes.txt"); got != "hello\n"+long {
			t.Errorf("applied %q", got)
		}
	})
}
