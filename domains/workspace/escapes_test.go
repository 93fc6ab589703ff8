package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/domaintest"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

// escapeFixture is the standard tree beside a directory outside the root,
// with symbolic links out of the root and one inside it.
func escapeFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "project")
	outside := filepath.Join(base, "outside")
	domaintest.WriteTree(t, root, tree)
	domaintest.WriteTree(t, outside, map[string]string{"secret.txt": "top secret\n"})
	for link, target := range map[string]string{
		"link_abs.txt": filepath.Join(outside, "secret.txt"), // absolute, out
		"link_rel.txt": "../outside/secret.txt",              // relative, out
		"linkdir":      outside,                              // a directory out
		"link_in.txt":  "notes.txt",                          // inside: allowed
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return newFixture(t, workspace.Config{Roots: []string{root}}), outside
}

// TestEscapes tries every way out of a root through every tool that takes
// a free path: each is refused with a domain code, and nothing outside is
// read or changed.
func TestEscapes(t *testing.T) {
	f, outside := escapeFixture(t)
	longName := strings.Repeat("n", 300)
	longPath := strings.Repeat("d/", 2100)
	paths := []struct {
		name, path string
		code       protocol.Code
	}{
		{"parent", "..", workspace.CodePathOutsideRoots},
		{"dot dot out", "../outside/secret.txt", workspace.CodePathOutsideRoots},
		{"dot dot inside a path", "src/../../outside", workspace.CodePathOutsideRoots},
		{"absolute", "/etc", workspace.CodePathOutsideRoots},
		{"absolute outside dir", outside, workspace.CodePathOutsideRoots},
		{"symlink absolute out", "link_abs.txt", workspace.CodePathOutsideRoots},
		{"symlink relative out", "link_rel.txt", workspace.CodePathOutsideRoots},
		{"symlinked directory", "linkdir", workspace.CodePathOutsideRoots},
		{"through symlinked directory", "linkdir/secret.txt", workspace.CodePathOutsideRoots},
		{"NUL", "notes\x00.txt", workspace.CodeInvalidPath},
		{"very long name", longName, workspace.CodeInvalidPath},
		{"very long path", longPath, workspace.CodeInvalidPath},
	}
	tools := []struct {
		intent, tool, arg string
		facts             []protocol.Fact
		args              map[string]any
		confirm           bool
	}{
		{"explore", "list_dir", "path", nil, nil, false},
		{"explore", "tree", "path", nil, nil, false},
		{"explore", "file_info", "path", facts(focus("src")), nil, false},
		{"find", "search", "path", nil, map[string]any{"glob": "*"}, false},
		{"find", "search", "path", nil, map[string]any{"text": "secret"}, false},
		{"reorganize", "create_dir", "path", nil, nil, true},
		{"reorganize", "move", "to", facts(mentioned("notes.txt")), map[string]any{"from": "notes.txt"}, true},
	}
	for _, tl := range tools {
		for _, p := range paths {
			t.Run(tl.tool+"/"+p.name, func(t *testing.T) {
				args := map[string]any{tl.arg: p.path}
				for k, v := range tl.args {
					args[k] = v
				}
				code := p.code
				if tl.tool == "move" && strings.HasPrefix(p.path, "link") && !strings.Contains(p.path, "/") {
					// The link itself is inside the root, and a move never
					// replaces it: it does not follow it either.
					code = workspace.CodeDestinationExists
				}
				f.with(t).Fails(tl.intent, tl.facts, tl.tool, args, tl.confirm, code)
			})
		}
	}
	if !f.Exists("notes.txt") {
		t.Fatal("a refused move moved the file")
	}
	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 1 {
		t.Errorf("the outside directory changed: %v %v", entries, err)
	}
}

// TestEscapesNotOffered: the entry predicate classifies escaping paths as
// "outside", so the rules never bind them into a tool's enum.
func TestEscapesNotOffered(t *testing.T) {
	f, _ := escapeFixture(t)
	for _, p := range []string{"link_abs.txt", "link_rel.txt", "linkdir/secret.txt", "../outside/secret.txt", "/etc/passwd"} {
		if tools := f.Eval("read", mentioned(p)); len(tools) != 0 {
			t.Errorf("read %s offers %s", p, domaintest.Names(tools))
		}
		if tools := f.Eval("edit", mentioned(p)); len(tools) != 0 {
			t.Errorf("edit %s offers %s", p, domaintest.Names(tools))
		}
		if tools := f.Eval("reorganize", mentioned(p), change("move")); len(tools) != 0 {
			t.Errorf("reorganize %s offers %s", p, domaintest.Names(tools))
		}
	}
	// A symbolic link inside the root is an ordinary file.
	if tools := f.Eval("read", mentioned("link_in.txt")); tools["read_file"].Name == "" {
		t.Errorf("read link_in.txt offers %s", domaintest.Names(tools))
	}
	r := f.OK("read", facts(mentioned("link_in.txt")), "read_file", map[string]any{"path": "link_in.txt"}, false)
	if r.Result["content"] != tree["notes.txt"] {
		t.Errorf("link_in.txt reads %q", r.Result["content"])
	}
}

// TestSymlinkRetargeted: a link that pointed inside the root when the
// tools were selected and points outside when they run is refused by the
// action itself: reads do not read it, writes and edits do not follow it.
func TestSymlinkRetargeted(t *testing.T) {
	f, outside := escapeFixture(t)
	secret := filepath.Join(outside, "secret.txt")
	link := filepath.Join(f.root, "link_in.txt")
	retarget := func() {
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, link); err != nil {
			t.Fatal(err)
		}
	}
	ff := facts(mentioned("link_in.txt"))
	for _, c := range []struct {
		intent, tool string
		args         map[string]any
		confirm      bool
	}{
		{"read", "read_file", map[string]any{"path": "link_in.txt"}, false},
		{"edit", "preview_edit", map[string]any{"path": "link_in.txt", "old": "hello", "new": "bye"}, false},
		{"edit", "write_file", map[string]any{"path": "link_in.txt", "content": "pwned", "digest": "x"}, true},
	} {
		t.Run(c.tool, func(t *testing.T) {
			facts := ff
			if c.tool == "write_file" {
				facts = append(facts, change("write"))
			}
			tools := f.Eval(c.intent, facts...)
			m, ok := tools[c.tool]
			if !ok {
				t.Fatalf("%s offers %s", c.intent, domaintest.Names(tools))
			}
			retarget()
			defer func() {
				os.Remove(link)
				os.Symlink("notes.txt", link)
			}()
			_, err := f.Invoke(m, c.args, c.confirm)
			if err == nil || err.Code() != workspace.CodePathOutsideRoots {
				t.Fatalf("got %v, want %s", err, workspace.CodePathOutsideRoots)
			}
			f.Check(err)
			if b, _ := os.ReadFile(secret); string(b) != "top secret\n" {
				t.Fatalf("the outside file changed: %q", b)
			}
		})
	}
}

// TestWalksStayInside: tree, find and search do not follow a symbolic
// link to a directory outside the root.
func TestWalksStayInside(t *testing.T) {
	f, _ := escapeFixture(t)
	r := f.OK("find", nil, "search", map[string]any{"text": "top secret"}, false)
	if n := len(r.Result["matches"].([]any)); n != 0 {
		t.Errorf("search found %d matches outside the root", n)
	}
	r = f.OK("find", nil, "search", map[string]any{"glob": "**/secret.txt"}, false)
	if n := len(r.Result["files"].([]any)); n != 0 {
		t.Errorf("find found %v outside the root", r.Result["files"])
	}
	r = f.OK("explore", nil, "tree", map[string]any{"depth": 5}, false)
	if strings.Contains(r.Result["tree"].(string), "secret") {
		t.Errorf("the tree shows the outside:\n%s", r.Result["tree"])
	}
}
