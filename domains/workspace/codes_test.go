package workspace_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

// TestDomainCodes triggers every code of the domain through real dispatch
// and checks its status, recoverable flag and remediation data. A code
// without a case fails the test.
func TestDomainCodes(t *testing.T) {
	covered := map[protocol.Code]bool{}
	type tc struct {
		name    string
		code    protocol.Code
		cfg     workspace.Config
		intent  string
		facts   []protocol.Fact
		tool    string
		args    map[string]any
		confirm bool
		// race changes the tree between evaluation and invocation.
		race func(f *fixture)
		data map[string]any
	}
	cases := []tc{
		{name: "dot dot", code: workspace.CodePathOutsideRoots, intent: "explore", tool: "list_dir", args: map[string]any{"path": "../x"},
			data: map[string]any{"path": "../x"}},
		{name: "NUL", code: workspace.CodeInvalidPath, intent: "explore", tool: "list_dir", args: map[string]any{"path": "a\x00"},
			data: map[string]any{"reason": "NUL byte"}},
		{name: "missing directory", code: workspace.CodeFileNotFound, intent: "explore", tool: "list_dir", args: map[string]any{"path": "nope/deeper"},
			data: map[string]any{"path": "nope/deeper"}},
		{name: "file deleted after selection", code: workspace.CodeFileNotFound, intent: "read", facts: facts(mentioned("notes.txt")),
			tool: "read_file", args: map[string]any{"path": "notes.txt"},
			race: func(f *fixture) { os.Remove(filepath.Join(f.root, "notes.txt")) }, data: map[string]any{"path": "notes.txt"}},
		{name: "move source gone", code: workspace.CodeFileNotFound, intent: "reorganize", facts: facts(mentioned("notes.txt")),
			tool: "move", args: map[string]any{"from": "notes.txt", "to": "n.txt"}, confirm: true,
			race: func(f *fixture) { os.Remove(filepath.Join(f.root, "notes.txt")) }, data: map[string]any{"path": "notes.txt"}},
		{name: "write into a missing directory", code: workspace.CodeFileNotFound, intent: "edit", facts: facts(mentioned("no/dir/x.txt")),
			tool: "write_file", args: map[string]any{"path": "no/dir/x.txt", "content": "x"}, confirm: true, data: map[string]any{"path": "no/dir"}},
		{name: "list a file", code: workspace.CodeNotADirectory, intent: "explore", tool: "list_dir", args: map[string]any{"path": "notes.txt"},
			data: map[string]any{"path": "notes.txt"}},
		{name: "mkdir over a file", code: workspace.CodeNotADirectory, intent: "reorganize", tool: "create_dir", args: map[string]any{"path": "notes.txt"},
			confirm: true, data: map[string]any{"path": "notes.txt"}},
		{name: "read a directory", code: workspace.CodeIsADirectory, intent: "read", facts: facts(mentioned("notes.txt")),
			tool: "read_file", args: map[string]any{"path": "notes.txt"},
			race: func(f *fixture) {
				os.Remove(filepath.Join(f.root, "notes.txt"))
				os.Mkdir(filepath.Join(f.root, "notes.txt"), 0o755)
			}, data: map[string]any{"path": "notes.txt"}},
		{name: "binary file", code: workspace.CodeNotText, intent: "read", facts: facts(mentioned("notes.txt")),
			tool: "read_file", args: map[string]any{"path": "notes.txt"},
			race: func(f *fixture) { os.WriteFile(filepath.Join(f.root, "notes.txt"), []byte("\x00\x01\x02"), 0o644) },
			data: map[string]any{"path": "notes.txt", "media_type": "application/octet-stream"}},
		{name: "media too large", code: workspace.CodeFileTooLarge, cfg: workspace.Config{MaxMediaBytes: 4}, intent: "read",
			facts: facts(mentioned("assets/logo.png")), tool: "read_media", args: map[string]any{"path": "assets/logo.png"},
			data: map[string]any{"path": "assets/logo.png", "size": float64(16), "limit": float64(4)}},
		{name: "edit of a large file", code: workspace.CodeFileTooLarge, cfg: workspace.Config{MaxReadBytes: 8}, intent: "edit",
			facts: facts(mentioned("notes.txt")), tool: "preview_edit", args: map[string]any{"path": "notes.txt", "old": "hello", "new": "bye"},
			data: map[string]any{"path": "notes.txt", "size": float64(12), "limit": float64(8)}},
		{name: "anchor not found", code: workspace.CodeAnchorNotFound, intent: "edit", facts: facts(mentioned("notes.txt")),
			tool: "preview_edit", args: map[string]any{"path": "notes.txt", "old": "absent", "new": "x"}, data: map[string]any{"path": "notes.txt"}},
		{name: "anchor ambiguous", code: workspace.CodeAnchorAmbiguous, intent: "edit", facts: facts(mentioned("docs/dup.txt")),
			tool: "preview_edit", args: map[string]any{"path": "docs/dup.txt", "old": "same", "new": "x"},
			data: map[string]any{"path": "docs/dup.txt", "count": float64(2), "lines": []any{float64(1), float64(3)}}},
		{name: "file exists", code: workspace.CodeFileExists, intent: "edit", facts: facts(mentioned("notes.txt"), change("write")),
			tool: "write_file", args: map[string]any{"path": "notes.txt", "content": "x"}, confirm: true, data: map[string]any{"path": "notes.txt"}},
		{name: "write against a stale digest", code: workspace.CodeFileChanged, intent: "edit", facts: facts(mentioned("notes.txt"), change("write")),
			tool: "write_file", args: map[string]any{"path": "notes.txt", "content": "x", "digest": "0000000000000000"}, confirm: true,
			data: map[string]any{"path": "notes.txt", "expected_digest": "0000000000000000"}},
		{name: "destination exists", code: workspace.CodeDestinationExists, intent: "reorganize", facts: facts(mentioned("notes.txt")),
			tool: "move", args: map[string]any{"from": "notes.txt", "to": "README.md"}, confirm: true, data: map[string]any{"path": "README.md"}},
		{name: "directory into itself", code: workspace.CodeMoveIntoItself, intent: "reorganize", facts: facts(mentioned("src")),
			tool: "move", args: map[string]any{"from": "src", "to": "src/deep/src"}, confirm: true,
			data: map[string]any{"from": "src", "to": "src/deep/src"}},
		{name: "directory onto itself", code: workspace.CodeMoveIntoItself, intent: "reorganize", facts: facts(mentioned("src")),
			tool: "move", args: map[string]any{"from": "src", "to": "src/."}, confirm: true},
		{name: "write through a link to a hard-linked file", code: workspace.CodeFileLinked, intent: "edit", facts: facts(mentioned("linked.txt"), change("write")),
			tool: "write_file", args: map[string]any{"path": "linked.txt", "content": "x", "digest": digestOf("outside\n")}, confirm: true,
			race: func(f *fixture) { hardLinkedOutside(f.t, f.root) }, data: map[string]any{"path": "linked.txt", "links": float64(2)}},
		{name: "bad glob", code: workspace.CodeInvalidPattern, intent: "find", tool: "search", args: map[string]any{"glob": "[abc"},
			data: map[string]any{"pattern": "[abc"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			covered[c.code] = true
			f := newFixture(t, c.cfg)
			tools := f.Eval(c.intent, c.facts...)
			m, ok := tools[c.tool]
			if !ok {
				t.Fatalf("%s offers %s", c.intent, domaintest.Names(tools))
			}
			if c.race != nil {
				c.race(f)
			}
			_, err := f.Invoke(m, c.args, c.confirm)
			if err == nil || err.Code() != c.code {
				t.Fatalf("got %v, want %s", err, c.code)
			}
			f.Check(err)
			d := err.Payload.Details
			if d == nil || d.Suggestion == "" {
				t.Fatalf("no remediation: %+v", d)
			}
			for k, want := range c.data {
				if got := d.Data[k]; jsonOf(t, got) != jsonOf(t, want) {
					t.Errorf("data.%s = %s, want %s", k, jsonOf(t, got), jsonOf(t, want))
				}
			}
		})
	}
	t.Run("cross-root move", func(t *testing.T) {
		covered[workspace.CodeCrossRootMove] = true
		base := t.TempDir()
		a, b := filepath.Join(base, "a", "api"), filepath.Join(base, "b", "web")
		domaintest.WriteTree(t, a, map[string]string{"x.txt": "x"})
		domaintest.WriteTree(t, b, map[string]string{"y.txt": "y"})
		f := newFixture(t, workspace.Config{Roots: []string{a, b}})
		e := f.Fails("reorganize", facts(mentioned("api/x.txt")), "move", map[string]any{"from": "api/x.txt", "to": "web/x.txt"}, true, workspace.CodeCrossRootMove)
		if e.Details.Data["from"] != "api/x.txt" || e.Details.Data["to"] != "web/x.txt" {
			t.Errorf("data %v", e.Details.Data)
		}
	})
	t.Run("edit id of another identity", func(t *testing.T) {
		covered[workspace.CodeEditInvalid] = true
		alice, bob := authFixtures(t)
		pre, next := alice.preview()
		e := bob.Fails("edit", next, "apply_edit", map[string]any{"diff": pre.Result["diff"]}, true, workspace.CodeEditInvalid)
		if e.Details == nil || e.Details.Suggestion == "" || e.Details.Data["edit"] != editOf(t, pre) {
			t.Errorf("details %+v", e.Details)
		}
	})
	t.Run("expired edit id", func(t *testing.T) {
		covered[workspace.CodeEditExpired] = true
		f := newFixture(t, workspace.Config{})
		pre, next := f.preview()
		m := f.Eval("edit", next...)["apply_edit"]
		workspace.SetClock(f.ws, func() time.Time { return time.Now().Add(time.Hour) })
		_, err := f.Invoke(m, map[string]any{"diff": pre.Result["diff"]}, true)
		if err == nil || err.Code() != workspace.CodeEditExpired {
			t.Fatalf("got %v, want %s", err, workspace.CodeEditExpired)
		}
		f.Check(err)
		if d := err.Payload.Details; d == nil || d.Suggestion == "" || d.Data["expired_at"] == nil {
			t.Errorf("details %+v", d)
		}
	})
	t.Run("edit conflict", func(t *testing.T) {
		covered[workspace.CodeEditConflict] = true
		ws, _ := openPlanDir(t, map[string]string{"a.txt": "abcdef\n"})
		_, err := ws.Preview(t.Context(), []workspace.Edit{{Path: "a.txt", Spans: []workspace.Span{
			{Start: workspace.Position{Character: 0}, End: workspace.Position{Character: 3}, New: "x"},
			{Start: workspace.Position{Character: 2}, End: workspace.Position{Character: 4}, New: "y"}}}})
		var perr *protocol.Error
		if !errors.As(err, &perr) || perr.Code != workspace.CodeEditConflict || perr.Details == nil || perr.Details.Suggestion == "" || perr.Details.Data["path"] != "a.txt" {
			t.Fatalf("got %v, want %s with a suggestion and the path", err, workspace.CodeEditConflict)
		}
	})
	t.Run("permission denied", func(t *testing.T) {
		covered[workspace.CodePermissionDenied] = true
		permissionDenied(t)
	})
	for _, c := range workspace.Codes() {
		if !covered[c.Code] {
			t.Errorf("no case triggers %s", c.Code)
		}
	}
}

// permissionDenied lists a directory without permission. The superuser
// ignores permissions, so as root the test reruns itself as nobody.
func permissionDenied(t *testing.T) {
	if os.Geteuid() != 0 {
		f := newFixture(t, workspace.Config{})
		locked := filepath.Join(f.root, "src")
		if err := os.Chmod(locked, 0); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(locked, 0o755)
		f.Fails("explore", nil, "list_dir", map[string]any{"path": "src"}, false, workspace.CodePermissionDenied)
		return
	}
	if os.Getenv("WORKSPACE_TEST_CHILD") != "" {
		t.Fatal("still root in the child")
	}
	// Copy the test binary where nobody can run it, and run this test.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "workspace-perm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "workspace.test")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	src.Close()
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^TestPermissionDeniedChild$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WORKSPACE_TEST_CHILD=1", "TMPDIR="+os.TempDir(), "HOME="+dir, "GOCACHE="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestPermissionDeniedChild") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// TestPermissionDeniedChild is the part of TestDomainCodes that runs as
// nobody when the tests run as root.
func TestPermissionDeniedChild(t *testing.T) {
	if os.Getenv("WORKSPACE_TEST_CHILD") == "" {
		return // TestDomainCodes runs it as an unprivileged user
	}
	permissionDenied(t)
}
