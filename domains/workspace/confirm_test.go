package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

// TestConfirmation: every tool that changes files requires the user's
// confirmation; without a token or with a bad one nothing changes, with a
// valid one the change is made.
func TestConfirmation(t *testing.T) {
	for _, c := range []struct {
		tool, intent string
		facts        []protocol.Fact
		args         map[string]any
		prepare      func(f *fixture) []protocol.Fact
		done         func(f *fixture) bool
	}{
		{tool: "apply_edit", intent: "edit", facts: facts(mentioned("notes.txt")),
			prepare: func(f *fixture) []protocol.Fact {
				r := f.OK("edit", facts(mentioned("notes.txt")), "preview_edit", map[string]any{"path": "notes.txt", "old": "world", "new": "there"}, false)
				return r.Next.ContinuationFacts
			},
			done: func(f *fixture) bool { return f.File("notes.txt") == "hello\nthere\n" }},
		{tool: "write_file", intent: "edit", facts: facts(mentioned("new.txt")), args: map[string]any{"path": "new.txt", "content": "n"},
			done: func(f *fixture) bool { return f.Exists("new.txt") }},
		{tool: "move", intent: "reorganize", facts: facts(mentioned("notes.txt")), args: map[string]any{"from": "notes.txt", "to": "moved.txt"},
			done: func(f *fixture) bool { return f.Exists("moved.txt") && !f.Exists("notes.txt") }},
		{tool: "create_dir", intent: "reorganize", args: map[string]any{"path": "made"},
			done: func(f *fixture) bool { return f.Exists("made") }},
	} {
		t.Run(c.tool, func(t *testing.T) {
			f := newFixture(t, workspace.Config{})
			ff := c.facts
			if c.prepare != nil {
				ff = append(ff, c.prepare(f)...)
			}
			m, ok := f.Eval(c.intent, ff...)[c.tool]
			if !ok {
				t.Fatalf("%s not offered", c.tool)
			}
			if !m.Safety.RequiresUserConfirmation || m.Safety.SideEffects[0] != "filesystem" {
				t.Errorf("safety %+v", m.Safety)
			}
			args := c.args
			if c.tool == "apply_edit" {
				args = map[string]any{"diff": domaintest.EnumOf(m, "diff")[0]}
			}
			_, err := f.Invoke(m, args, false)
			if err == nil || err.Code() != protocol.CodeConfirmationRequired {
				t.Fatalf("without a token: %v", err)
			}
			_, ierr := f.sess.Invoke(context.Background(), &protocol.InvokeRequest{MacroID: m.MacroID, Args: args, EvalTime: protocol.NewTime(f.evalAt)},
				client.WithConfirmation([]byte("some other key of 32 bytes......"), 60e9))
			if ce, ok := ierr.(*client.Error); !ok || ce.Code() != protocol.CodeConfirmationInvalid {
				t.Fatalf("with a bad token: %v", ierr)
			}
			if c.done(f) {
				t.Fatal("changed without confirmation")
			}
			if _, err := f.Invoke(m, args, true); err != nil {
				t.Fatalf("confirmed: %v", err)
			}
			if !c.done(f) {
				t.Fatal("confirmed but not done")
			}
		})
	}
}

// TestStaleEdit: a file changed between preview and apply is not written;
// the error names both digests.
func TestStaleEdit(t *testing.T) {
	f := newFixture(t, workspace.Config{})
	args := map[string]any{"path": "notes.txt", "old": "world", "new": "there"}
	pre := f.OK("edit", facts(mentioned("notes.txt")), "preview_edit", args, false)
	seen := strings.Split(editOf(t, pre), ".")[2] // e1.EXPIRY.DIGEST.OFFER.APPLY
	next := append(facts(mentioned("notes.txt")), pre.Next.ContinuationFacts...)
	m := f.Eval("edit", next...)["apply_edit"]
	if err := os.WriteFile(filepath.Join(f.root, "notes.txt"), []byte("hello\nworld\nagain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.Invoke(m, map[string]any{"diff": pre.Result["diff"]}, true)
	if err == nil || err.Code() != workspace.CodeFileChanged {
		t.Fatalf("got %v, want %s", err, workspace.CodeFileChanged)
	}
	f.Check(err)
	d := err.Payload.Details.Data
	if d["expected_digest"] != seen || d["actual_digest"] == seen || d["actual_digest"] == "" || d["path"] != "notes.txt" {
		t.Errorf("data %v", d)
	}
	if got := f.File("notes.txt"); got != "hello\nworld\nagain\n" {
		t.Errorf("a stale edit was written: %q", got)
	}
	// A fresh preview of the current content applies.
	pre = f.OK("edit", facts(mentioned("notes.txt")), "preview_edit", map[string]any{"path": "notes.txt", "old": "world", "new": "there"}, false)
	next = append(facts(mentioned("notes.txt")), pre.Next.ContinuationFacts...)
	f.OK("edit", next, "apply_edit", map[string]any{"diff": pre.Result["diff"]}, true)
	if got := f.File("notes.txt"); got != "hello\nthere\nagain\n" {
		t.Errorf("after the fresh preview: %q", got)
	}
}
