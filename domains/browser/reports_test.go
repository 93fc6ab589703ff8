package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

func TestReportsWriteAndExist(t *testing.T) {
	t.Parallel()
	r := &reports{dir: filepath.Join(t.TempDir(), "new", "reports")}
	if got, err := r.exist([]string{"r1"}); err != nil || len(got) != 0 {
		t.Fatalf("before any report: %v %v", got, err)
	}
	name, err := r.write("r1", "abc.md", []byte("# report"))
	if err != nil {
		t.Fatal(err)
	}
	if name != "diagnosis-r1/abc.md" {
		t.Errorf("name %q", name)
	}
	fi, err := os.Stat(r.dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("report directory mode %v %v, want 0700", fi.Mode().Perm(), err)
	}
	if got, _ := r.exist([]string{"r0", "r1", "r2"}); len(got) != 1 || got[0] != "r1" {
		t.Errorf("exist %v", got)
	}
	// Writing again replaces the file.
	if _, err := r.write("r1", "abc.md", []byte("# second")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.dir, name)); string(b) != "# second" {
		t.Errorf("content %q", b)
	}
}

// TestReportsRefuseSymlinks: issue 9 item 3. A symlinked report
// directory, a planted symlink for a request's directory and a planted
// symlink for the report file never make the server write outside the
// directory.
func TestReportsRefuseSymlinks(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(outside, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}

	// 1. The report directory itself is a symlink.
	link := filepath.Join(base, "reports-link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if _, err := (&reports{dir: link}).write("r1", "a.md", []byte("x")); err == nil {
		t.Error("wrote through a symlinked report directory")
	}

	// 2. A request's directory is a planted symlink to outside.
	dir := filepath.Join(base, "reports")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "diagnosis-r1")); err != nil {
		t.Fatal(err)
	}
	r := &reports{dir: dir}
	if _, err := r.write("r1", "a.md", []byte("x")); err == nil {
		t.Error("wrote through a planted directory symlink")
	}
	if got, _ := r.exist([]string{"r1"}); len(got) != 0 {
		t.Errorf("a planted symlink counts as a report: %v", got)
	}

	// 3. The report file is a planted symlink to a file outside.
	if err := os.Mkdir(filepath.Join(dir, "diagnosis-r2"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "diagnosis-r2", "a.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.write("r2", "a.md", []byte("overwritten?")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the file outside was overwritten: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "diagnosis-r2", "a.md")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the report is not a regular file: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("files appeared outside: %v", entries)
	}
}

func TestReportsRefuseForeignOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("changing a directory's owner needs root")
	}
	dir := filepath.Join(t.TempDir(), "reports")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := (&reports{dir: dir}).write("r1", "a.md", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("a directory of another user: %v", err)
	}
}

func TestDefaultReportDirIsPrivate(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	d := defaultReportDir()
	if strings.HasPrefix(d, os.TempDir()+string(filepath.Separator)+"manglecp-reports"+string(filepath.Separator)) {
		t.Errorf("default %s is the old shared path", d)
	}
	if _, err := (&reports{dir: d}).write("r1", "a.md", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(d); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
}

// reportFacts are facts with one failed request r7.
func reportFacts() []protocol.Fact {
	return []protocol.Fact{
		protocol.NewFact("current_url", "http://127.0.0.1/"),
		protocol.NewFact("net_response", "s", "r7", num(500), num(1)),
	}
}

// fillReports puts n unrelated reports in dir.
func fillReports(tb testing.TB, dir string, n int) {
	tb.Helper()
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("diagnosis-x%d", i))
		if err := os.MkdirAll(sub, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestReportExistsIgnoresOtherReports: report_exists answers for the
// failed requests of the facts only, with a Stat each (issue 9 item 7: it
// used to glob the directory once per failed request).
func TestReportExistsIgnoresOtherReports(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fillReports(t, dir, 200)
	a := &actions{reports: &reports{dir: dir}}
	in := &manglecp.ExternalInput{Intent: "diagnose_error", Facts: reportFacts()}
	if got, err := a.reportExists(context.Background(), in); err != nil || len(got) != 0 {
		t.Fatalf("no report yet: %v %v", got, err)
	}
	if _, err := a.reports.write("r7", "a.md", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := a.reportExists(context.Background(), in); err != nil || len(got) != 1 || got[0][0] != "r7" {
		t.Fatalf("after writing: %v %v", got, err)
	}
}

// BenchmarkReportExists10k: report_exists with 10,000 reports of other
// requests in the directory (the case that made observe time out).
func BenchmarkReportExists10k(b *testing.B) {
	dir := b.TempDir()
	fillReports(b, dir, 10000)
	a := &actions{reports: &reports{dir: dir}}
	in := &manglecp.ExternalInput{Intent: "diagnose_error", Facts: reportFacts()}
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.reportExists(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReportsExistListingMatchesStats: for many ids exist lists the
// directory instead of asking id by id, and answers the same: a report
// directory counts, a symlink or plain file of that name does not, and a
// directory with more entries than the listing reads is asked id by id.
func TestReportsExistListingMatchesStats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		reports int // report directories r0..r{n-1}; every third id asked has one
		extra   int // unrelated entries
	}{
		{"few entries", 9, 0},
		// 32 ids are asked (two have no entry): the listing reads at most
		// listPerID*32 entries.
		{"entries at the listing's limit", 30, listPerID*32 - 30},
		{"more entries than the listing reads", 30, listPerID*32 - 30 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := &reports{dir: dir}
			var ids []string
			for i := range tc.reports {
				ids = append(ids, fmt.Sprintf("r%d", i))
				var err error
				switch i % 3 {
				case 0:
					_, err = r.write(ids[i], "a.md", []byte("x"))
				case 1:
					err = os.Symlink(t.TempDir(), filepath.Join(dir, requestDir(ids[i])))
				case 2:
					err = os.WriteFile(filepath.Join(dir, requestDir(ids[i])), nil, 0o600)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for i := range tc.extra {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("other-", i)), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			asked := append(ids, "missing", "r 1/../x")
			var want []string
			for _, id := range asked {
				if fi, err := os.Lstat(filepath.Join(dir, requestDir(id))); err == nil && fi.IsDir() {
					want = append(want, id)
				}
			}
			got, err := r.exist(asked)
			if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("exist = %v, %v; id by id %v", got, err, want)
			}
			if len(want) != (tc.reports+2)/3 {
				t.Errorf("%d reports, want %d", len(want), (tc.reports+2)/3)
			}
		})
	}
}
