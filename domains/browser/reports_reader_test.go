package browser

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestReportsReaderFollowsTheDirectory: exist keeps the report directory
// open between calls (reports.reader) and still answers for the directory
// the path names now: one replaced by another, removed, created again, or
// replaced by a symlink (refused, as open refuses it).
func TestReportsReaderFollowsTheDirectory(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "reports")
	r := &reports{dir: dir}
	defer r.close()
	want := func(step string, ids ...string) {
		t.Helper()
		got, _ := r.exist([]string{"r1", "r2"})
		if !slices.Equal(got, ids) {
			t.Errorf("%s: exist = %v, want %v", step, got, ids)
		}
	}
	want("no directory")
	if _, err := r.write("r1", "a.md", []byte("x")); err != nil {
		t.Fatal(err)
	}
	want("after a write", "r1")
	kept := r.reading
	want("again", "r1")
	if r.reading != kept {
		t.Error("the directory was opened again though it did not change")
	}

	// Replaced by another directory holding r2's report only.
	if err := os.Rename(dir, filepath.Join(base, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "diagnosis-r2"), 0o700); err != nil {
		t.Fatal(err)
	}
	want("replaced", "r2")

	// Removed, then created again empty.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	want("removed")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	want("created again")

	// A report appearing in the kept directory is seen.
	if err := os.Mkdir(filepath.Join(dir, "diagnosis-r1"), 0o700); err != nil {
		t.Fatal(err)
	}
	want("a report added", "r1")

	// Replaced by a symlink to a directory with both reports: refused.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(base, "outside")
	for _, id := range []string{"r1", "r2"} {
		if err := os.MkdirAll(filepath.Join(outside, "diagnosis-"+id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	if got, err := r.exist([]string{"r1", "r2"}); len(got) != 0 || err == nil {
		t.Errorf("a symlinked report directory: exist = %v, %v; want nothing and an error", got, err)
	}
	if err := r.close(); err != nil || r.reading != nil {
		t.Errorf("close: %v, still open: %v", err, r.reading != nil)
	}
}

// TestReportsReaderConcurrent: calls of exist running while the
// directory is replaced again and again each answer for one of the
// directories, never with a closed one (run with -race).
func TestReportsReaderConcurrent(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "reports")
	if err := os.MkdirAll(filepath.Join(dir, "diagnosis-r1"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := &reports{dir: dir}
	defer r.close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := r.exist([]string{"r1"})
				if err == nil && !slices.Equal(got, []string{"r1"}) && len(got) != 0 {
					t.Errorf("exist = %v", got)
					return
				}
			}
		})
	}
	// Every directory swapped in holds r1's report; in between there is
	// none for an instant.
	for i := range 50 {
		next := filepath.Join(base, "next")
		if err := os.MkdirAll(filepath.Join(next, "diagnosis-r1"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir, filepath.Join(base, "gone", "x")); err != nil {
			if err := os.MkdirAll(filepath.Join(base, "gone"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(dir, filepath.Join(base, "gone", "x")); err != nil {
				t.Fatal(i, err)
			}
		}
		if err := os.Rename(next, dir); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(base, "gone")); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if got, err := r.exist([]string{"r1"}); err != nil || !slices.Equal(got, []string{"r1"}) {
		t.Errorf("after the swaps: %v %v", got, err)
	}
}

// TestReportsReaderRecheck: what exist found at the path is trusted for
// recheck (no system call of its own per call), then looked at again; a
// report added to the directory kept is seen at once, and so is a write
// of this server, even into a directory that did not exist before.
func TestReportsReaderRecheck(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "reports")
	now := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	r := &reports{dir: dir, recheck: time.Second, now: func() time.Time { return now }}
	defer r.close()
	want := func(step string, ids ...string) {
		t.Helper()
		got, _ := r.exist([]string{"r1", "r2"})
		if !slices.Equal(got, ids) {
			t.Errorf("%s: exist = %v, want %v", step, got, ids)
		}
	}
	want("no directory")
	if err := os.MkdirAll(filepath.Join(dir, "diagnosis-r1"), 0o700); err != nil {
		t.Fatal(err)
	}
	want("created by another process, within recheck")
	now = now.Add(time.Second)
	want("after recheck", "r1")
	if err := os.Mkdir(filepath.Join(dir, "diagnosis-r2"), 0o700); err != nil {
		t.Fatal(err)
	}
	want("a report added to the directory kept", "r1", "r2")

	// Replaced by a symlink to a directory with no report: the real
	// directory kept is read until the path is looked at again, then the
	// link is refused.
	if err := os.Rename(dir, filepath.Join(base, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "outside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside"), dir); err != nil {
		t.Fatal(err)
	}
	want("replaced by a symlink, within recheck", "r1", "r2")
	now = now.Add(time.Second)
	if got, err := r.exist([]string{"r1", "r2"}); len(got) != 0 || err == nil {
		t.Errorf("a symlinked report directory: exist = %v, %v; want nothing and an error", got, err)
	}

	// Removed: within recheck, this server's own write is seen at once.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	want("removed")
	if _, err := r.write("r2", "a.md", []byte("x")); err != nil {
		t.Fatal(err)
	}
	want("written by this server", "r2")
}
