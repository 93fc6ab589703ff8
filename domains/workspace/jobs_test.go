package workspace_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

func facts(f ...protocol.Fact) []protocol.Fact { return f }

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestJobs does every job of the reference filesystem server through real
// dispatch over a temporary tree.
func TestJobs(t *testing.T) {
	f := newFixture(t, workspace.Config{})
	for _, c := range []struct {
		name    string
		intent  string
		facts   []protocol.Fact
		tool    string
		args    map[string]any
		confirm bool
		want    []string // substrings of the JSON result
		check   func(t *testing.T, r *protocol.InvokeResponse)
	}{
		{name: "list allowed roots", intent: "explore", facts: facts(focus("/home")), tool: "list_roots",
			want: []string{`"roots":["project"]`}},
		{name: "list directory", intent: "explore", facts: facts(focus("src")), tool: "list_dir",
			want: []string{`"entries":["deep/","main.go","util.go"]`, `"path":"src"`}},
		{name: "list directory with sizes", intent: "explore", tool: "list_dir", args: map[string]any{"sizes": true},
			want: []string{`{"kind":"file","name":"notes.txt","size":12}`, `"total_bytes":46`}},
		{name: "directory tree", intent: "explore", tool: "tree", args: map[string]any{"depth": 2},
			want: []string{`src/\n  deep/\n  main.go\n`, `"depth":2`}},
		{name: "tree depth is clamped", intent: "explore", tool: "tree", args: map[string]any{"depth": 50},
			want: []string{`"depth":10`, `a/\n      b.txt`}},
		{name: "file info", intent: "explore", facts: facts(focus("notes.txt")), tool: "file_info",
			want: []string{`"kind":"file"`, `"size":12`, `"lines":2`, `"text":true`, `"digest":"`}},
		{name: "directory info", intent: "explore", facts: facts(focus("src")), tool: "file_info", args: map[string]any{"path": "src"},
			want: []string{`"kind":"dir"`}},
		{name: "search files by glob", intent: "find", tool: "search", args: map[string]any{"glob": "**/*.go"},
			want: []string{`"files":["src/main.go","src/util.go"]`}},
		{name: "search by base name", intent: "find", tool: "search", args: map[string]any{"glob": "*.{md,txt}", "path": "docs"},
			want: []string{`"files":["docs/dup.txt"]`}},
		{name: "search by content", intent: "find", tool: "search", args: map[string]any{"text": "widget"},
			want: []string{`{"line":3,"path":"README.md","text":"The widget parses config."}`, `"files":["README.md","src/main.go","src/util.go"]`},
			check: func(t *testing.T, r *protocol.InvokeResponse) {
				if got := jsonOf(t, r.Next.ContinuationFacts); !strings.Contains(got, `"args":["src/main.go"]`) {
					t.Errorf("continuation facts %s do not mention the files found", got)
				}
			}},
		{name: "search by content and glob", intent: "find", tool: "search", args: map[string]any{"text": "widget", "glob": "*.go"},
			want: []string{`"files":["src/main.go","src/util.go"]`}},
		{name: "read text", intent: "read", facts: facts(mentioned("notes.txt")), tool: "read_file", args: map[string]any{"path": "notes.txt"},
			want: []string{`"content":"hello\nworld\n"`, `"lines":2`, `"truncated":false`}},
		{name: "read head", intent: "read", facts: facts(mentioned("src/util.go")), tool: "read_file", args: map[string]any{"path": "src/util.go", "head": 2},
			want: []string{`"content":"package main\n\n"`, `"truncated":true`, `"lines":6`}},
		{name: "read tail", intent: "read", facts: facts(mentioned("src/util.go")), tool: "read_file", args: map[string]any{"path": "src/util.go", "tail": 1},
			want: []string{`"content":"func helper2() {}\n"`}},
		{name: "read several", intent: "read", facts: facts(mentioned("notes.txt"), mentioned("README.md")), tool: "read_files",
			want: []string{`"content":"hello\nworld\n"`, `"path":"README.md"`}},
		{name: "read media", intent: "read", facts: facts(mentioned("assets/logo.png")), tool: "read_media", args: map[string]any{"path": "assets/logo.png"},
			want: []string{`"media_type":"image/png"`, `"data":"` + base64.StdEncoding.EncodeToString([]byte(tree["assets/logo.png"])) + `"`}},
		{name: "preview edit", intent: "edit", facts: facts(mentioned("notes.txt")), tool: "preview_edit",
			args: map[string]any{"path": "notes.txt", "old": "world", "new": "there"},
			want: []string{`"diff":"--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n"`},
			check: func(t *testing.T, r *protocol.InvokeResponse) {
				if f.File("notes.txt") != tree["notes.txt"] {
					t.Error("the preview wrote the file")
				}
				if got := jsonOf(t, r.Next.ContinuationFacts); !strings.Contains(got, `"pred":"previewed","args":["notes.txt","e1.`) || !strings.Contains(got, `"t":{"at":`) {
					t.Errorf("continuation facts %s lack the signed preview", got)
				}
			}},
		{name: "create directory", intent: "reorganize", facts: facts(change("mkdir")), tool: "create_dir", args: map[string]any{"path": "out/x/y"}, confirm: true,
			want: []string{`"created":true`, `"path":"out/x/y"`},
			check: func(t *testing.T, r *protocol.InvokeResponse) {
				if !f.Exists("out/x/y") {
					t.Error("no directory")
				}
			}},
		{name: "create existing directory", intent: "reorganize", tool: "create_dir", args: map[string]any{"path": "src"}, confirm: true,
			want: []string{`"created":false`}},
		{name: "write new file", intent: "edit", facts: facts(mentioned("out/new.txt")), tool: "write_file",
			args: map[string]any{"path": "out/new.txt", "content": "fresh\n"}, confirm: true,
			want: []string{`"created":true`, `"bytes":6`},
			check: func(t *testing.T, r *protocol.InvokeResponse) {
				if f.File("out/new.txt") != "fresh\n" {
					t.Error("not written")
				}
			}},
		{name: "move file", intent: "reorganize", facts: facts(mentioned("README.md")), tool: "move",
			args: map[string]any{"from": "README.md", "to": "docs/README.md"}, confirm: true,
			want: []string{`"to":"docs/README.md"`},
			check: func(t *testing.T, r *protocol.InvokeResponse) {
				if f.Exists("README.md") || f.File("docs/README.md") != tree["README.md"] {
					t.Error("not moved")
				}
			}},
		{name: "move directory", intent: "reorganize", facts: facts(mentioned("src/deep")), tool: "move",
			args: map[string]any{"from": "src/deep", "to": "deeper"}, confirm: true,
			check: func(t *testing.T, r *protocol.InvokeResponse) {
				if f.Exists("src/deep") || f.File("deeper/a/b.txt") != "deep\n" {
					t.Error("not moved")
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.with(t).OK(c.intent, c.facts, c.tool, c.args, c.confirm)
			got := jsonOf(t, r.Result)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %s:\n%s", w, got)
				}
			}
			if strings.Contains(jsonOf(t, r), f.root) {
				t.Errorf("the response shows the server's path %s", f.root)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// TestEditFlow previews an edit, then applies it with the digest the
// preview showed, through the rules' second step.
func TestEditFlow(t *testing.T) {
	f := newFixture(t, workspace.Config{})
	args := map[string]any{"path": "src/util.go", "old": "func helper() {}", "new": "func helper() { println() }"}
	pre := f.OK("edit", facts(mentioned("src/util.go")), "preview_edit", args, false)
	digest := digestOf(f.File("src/util.go"))
	next := append(facts(mentioned("src/util.go")), pre.Next.ContinuationFacts...)
	tools := f.Eval("edit", next...)
	apply, ok := tools["apply_edit"]
	if !ok {
		t.Fatalf("after a preview, edit offers %s", domaintest.Names(tools))
	}
	if !apply.Safety.RequiresUserConfirmation || len(apply.Safety.SideEffects) != 1 || apply.Safety.SideEffects[0] != "filesystem" {
		t.Errorf("apply_edit safety %+v", apply.Safety)
	}
	edit := editOf(t, pre)
	for _, k := range []string{"edit", "digest", "digest_after", "expires_at"} {
		if _, ok := pre.Result[k]; ok {
			t.Errorf("the preview's result holds %s: the model reads only the diff", k)
		}
	}
	if got := jsonOf(t, apply.InputSchema["required"]); got != `["diff"]` {
		t.Errorf("apply_edit requires %s, want the diff alone", got)
	}
	if !strings.HasPrefix(edit, "e1.") || !strings.Contains(edit, "."+digest+".") {
		t.Errorf("edit id %q, digest %q", edit, digest)
	}
	if got := domaintest.EnumOf(apply, "diff"); len(got) != 1 || got[0] != pre.Result["diff"] {
		t.Errorf("diff param %v, want the previewed diff %q", got, pre.Result["diff"])
	}
	if apply.Validity == nil || apply.Validity.ExpiresAt == nil {
		t.Errorf("apply_edit has no validity window: %+v", apply.Validity)
	}
	applyArgs := map[string]any{"diff": pre.Result["diff"]}
	r := f.OK("edit", next, "apply_edit", applyArgs, true)
	if got := f.File("src/util.go"); !strings.Contains(got, "func helper() { println() }") {
		t.Errorf("not applied:\n%s", got)
	}
	if _, ok := r.Result["diff"]; ok || r.Result["path"] != "src/util.go" {
		t.Errorf("the apply's result %v: the path, without the diff shown before", r.Result)
	}
	// Eleven minutes later by the server's clock the preview is stale:
	// apply_edit is not offered.
	pre = f.OK("edit", facts(mentioned("src/util.go")), "preview_edit", map[string]any{"path": "src/util.go", "old": "helper2", "new": "helper3"}, false)
	next = append(facts(mentioned("src/util.go")), pre.Next.ContinuationFacts...)
	if tools := f.Eval("edit", next...); tools["apply_edit"].Name == "" {
		t.Fatalf("apply_edit not offered after the second preview")
	}
	workspace.SetClock(f.ws, func() time.Time { return time.Now().Add(11 * time.Minute) })
	if tools := f.Eval("edit", next...); tools["apply_edit"].Name != "" {
		t.Errorf("apply_edit offered 11 minutes after the preview")
	}
}

// TestWriteReplace: replacing a file needs the digest the client saw.
func TestWriteReplace(t *testing.T) {
	f := newFixture(t, workspace.Config{})
	read := f.OK("read", facts(mentioned("notes.txt")), "read_file", map[string]any{"path": "notes.txt"}, false)
	ff := facts(mentioned("notes.txt"), change("write"))
	e := f.Fails("edit", ff, "write_file", map[string]any{"path": "notes.txt", "content": "x"}, true, workspace.CodeFileExists)
	if e.Details.Data["digest"] != read.Result["digest"] {
		t.Errorf("file_exists data %v, want the digest %v", e.Details.Data, read.Result["digest"])
	}
	f.OK("edit", ff, "write_file", map[string]any{"path": "notes.txt", "content": "x", "digest": read.Result["digest"]}, true)
	if f.File("notes.txt") != "x" {
		t.Error("not replaced")
	}
	info, err := os.Stat(filepath.Join(f.root, "notes.txt"))
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("mode after replace: %v %v", info.Mode(), err)
	}
}

// TestSeveralRoots: with several roots the first segment of a path names
// the root, the roots are offered when nothing is in focus, and every
// shown path carries its root's name.
func TestSeveralRoots(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "one", "api"), filepath.Join(base, "two", "api")
	domaintest.WriteTree(t, a, map[string]string{"x.txt": "x\n"})
	domaintest.WriteTree(t, b, map[string]string{"y.txt": "needle\n"})
	f := newFixture(t, workspace.Config{Roots: []string{a, b}})
	if got := domaintest.Names(f.Eval("explore")); got != "list_dir,list_roots,tree" {
		t.Errorf("explore offers %s", got)
	}
	r := f.OK("explore", nil, "list_roots", nil, false)
	if got := jsonOf(t, r.Result["roots"]); got != `["api","api-2"]` {
		t.Errorf("roots %s", got)
	}
	r = f.OK("explore", nil, "list_dir", nil, false)
	if got := jsonOf(t, r.Result["entries"]); got != `["api/","api-2/"]` {
		t.Errorf("top entries %s", got)
	}
	r = f.OK("find", nil, "search", map[string]any{"text": "needle"}, false)
	if got := jsonOf(t, r.Result["files"]); got != `["api-2/y.txt"]` {
		t.Errorf("found %s", got)
	}
	r = f.OK("read", facts(mentioned("api/x.txt")), "read_file", map[string]any{"path": "api/x.txt"}, false)
	if r.Result["content"] != "x\n" || r.Result["path"] != "api/x.txt" {
		t.Errorf("read %v", r.Result)
	}
	f.Fails("explore", nil, "list_dir", map[string]any{"path": "web/src"}, false, workspace.CodePathOutsideRoots)
}

// TestReadLargeFile: a file beyond 64 times the read limit is refused
// whole and read by its ends; one within it is truncated at the limit.
func TestReadLargeFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "project")
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&b, "line %04d\n", i)
	}
	domaintest.WriteTree(t, dir, map[string]string{"big.log": b.String(), "mid.log": b.String()[:2000]})
	f := newFixture(t, workspace.Config{Roots: []string{dir}, MaxReadBytes: 256})
	ff := facts(mentioned("big.log"))
	e := f.Fails("read", ff, "read_file", map[string]any{"path": "big.log"}, false, workspace.CodeFileTooLarge)
	if jsonOf(t, e.Details.Data["size"]) != "20000" {
		t.Errorf("data %v", e.Details.Data)
	}
	r := f.OK("read", ff, "read_file", map[string]any{"path": "big.log", "head": 2, "tail": 2}, false)
	if r.Result["content"] != "line 0001\nline 0002\n...\nline 1999\nline 2000\n" || r.Result["truncated"] != true {
		t.Errorf("ends %q", r.Result["content"])
	}
	r = f.OK("read", facts(mentioned("mid.log")), "read_file", map[string]any{"path": "mid.log"}, false)
	if c := r.Result["content"].(string); len(c) > 256 || r.Result["truncated"] != true || jsonOf(t, r.Result["lines"]) != "200" {
		t.Errorf("mid.log: %d bytes, %v", len(c), r.Result)
	}
}

// TestSelection: what the rules offer for each situation.
func TestSelection(t *testing.T) {
	f := newFixture(t, workspace.Config{})
	for _, c := range []struct {
		intent string
		facts  []protocol.Fact
		want   string
	}{
		{"explore", nil, "list_dir,tree"},
		{"explore", facts(focus("src")), "file_info,list_dir,tree"},
		{"explore", facts(focus("notes.txt")), "file_info"},
		{"explore", facts(focus("gone")), "list_dir,search"},
		{"explore", facts(focus("../etc")), "list_roots"},
		{"find", nil, "search"},
		{"read", facts(mentioned("notes.txt")), "read_file"},
		{"read", facts(mentioned("notes.txt"), mentioned("README.md")), "read_file,read_files"},
		{"read", facts(mentioned("assets/logo.png")), "read_media"},
		{"read", facts(mentioned("assets/blob.bin")), "file_info"},
		{"read", facts(mentioned("gone.txt")), "search"},
		{"edit", facts(mentioned("notes.txt")), "preview_edit,preview_edits,replace"},
		{"edit", nil, "preview_edit,preview_edits,replace"},        // paths are then the model's: reached by name
		{"edit", facts(mentioned("src")), "preview_edits,replace"}, // replace's path names a directory
		{"edit", facts(mentioned("notes.txt"), change("write")), "write_file"},
		{"edit", facts(mentioned("new.txt")), "search,write_file"},
		{"reorganize", nil, "create_dir,move"}, // move by any path: reached by name (tools.mg)
		{"reorganize", facts(mentioned("src")), "create_dir,move"},
		{"reorganize", facts(mentioned("src"), change("move")), "move"},
		{"reorganize", facts(mentioned("src"), change("mkdir")), "create_dir"},
	} {
		if got := domaintest.Names(f.Eval(c.intent, c.facts...)); got != c.want {
			t.Errorf("%s %v: %s, want %s", c.intent, c.facts, got, c.want)
		}
	}
	m := f.Eval("explore", focus("gone"))["list_dir"]
	if m.ContextInjection == nil || !strings.Contains(m.ContextInjection.Instructions, "does not exist") {
		t.Errorf("list_dir for a missing focus: %+v", m.ContextInjection)
	}
}

// TestFollowUps: what the rules decide follows a step at once (the MCP
// bridge runs or asks for the one mandatory tool whose arguments they
// fixed): reading a few found files together, the files read going on to
// the edit, and applying an open edit after its preview (the user asked,
// the question showing the diff), another preview staying on offer.
func TestFollowUps(t *testing.T) {
	f := newFixture(t, workspace.Config{})
	phase := func(m protocol.MacroTool) string {
		if m.Metadata == nil {
			return ""
		}
		return m.Metadata.SelectionPhase
	}
	tools := f.Eval("read", mentioned("src/main.go"), mentioned("src/util.go"))
	if phase(tools["read_files"]) != "skeleton" || tools["read_file"].Name == "" || phase(tools["read_file"]) == "skeleton" {
		t.Errorf("read of two files: read_files %q, read_file %q; want read_files the one mandatory tool", phase(tools["read_files"]), phase(tools["read_file"]))
	}
	r := f.OK("read", facts(mentioned("src/main.go"), mentioned("src/util.go")), "read_files", map[string]any{}, false)
	var cont []string
	if r.Next != nil {
		for _, c := range r.Next.ContinuationFacts {
			cont = append(cont, fmt.Sprint(c.Pred, c.Args))
		}
	}
	if got := strings.Join(cont, " "); got != "mentioned[src/main.go] mentioned[src/util.go]" {
		t.Errorf("read_files continues with %+v, want the files read as mentioned", r.Next)
	}
	pre := f.OK("edit", facts(mentioned("src/util.go")), "preview_edit", map[string]any{"path": "src/util.go", "old": "// widget helper", "new": "// helper"}, false)
	tools = f.Eval("edit", append(facts(mentioned("src/util.go")), pre.Next.ContinuationFacts...)...)
	if phase(tools["apply_edit"]) != "skeleton" || tools["preview_edit"].Name == "" || phase(tools["preview_edit"]) == "skeleton" {
		t.Errorf("edit after a preview: apply_edit %q, preview_edit %q; want apply_edit the one mandatory tool", phase(tools["apply_edit"]), phase(tools["preview_edit"]))
	}
	if got := domaintest.EnumOf(tools["apply_edit"], "diff"); len(got) != 1 {
		t.Errorf("apply_edit's diff: %v, want the previewed diff alone", got)
	}
}
