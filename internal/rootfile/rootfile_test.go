package rootfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/internal/rootfile"
)

// TestWriteAtomic: the content replaces the file (and a symbolic link at
// the name, never followed), no temporary file is left, a long name
// still gets a temporary file of a valid length, and a missing directory
// is the root's error.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", rootfile.MaxNameBytes)
	for _, name := range []string{"a.txt", "a.txt", "link", long} {
		if err := rootfile.WriteAtomic(root, name, []byte("new "+name), 0o644); err != nil {
			t.Fatalf("%.20s: %v", name, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != "new "+name {
			t.Errorf("%.20s: %q %v", name, b, err)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
	if err := rootfile.WriteAtomic(root, "missing/a.txt", nil, 0o644); !os.IsNotExist(err) {
		t.Errorf("missing directory: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
	if len(entries) != 3 {
		t.Errorf("%d entries, want 3", len(entries))
	}
}

// TestIsEscape: the root's refusal of ".." is an escape, also wrapped;
// other errors are not.
func TestIsEscape(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	_, err = root.Open("../x")
	if !rootfile.IsEscape(err) {
		t.Errorf("../x: %v is not an escape", err)
	}
	_, err = root.Open("missing")
	if rootfile.IsEscape(err) || rootfile.IsEscape(nil) {
		t.Errorf("missing: %v is an escape", err)
	}
}
