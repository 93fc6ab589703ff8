package browser

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/browser/chrome"
)

// TestReportDirCheckedAtStart: a report directory that cannot be written
// (its parent is a file, it is a symlink, it would be created on a file
// system that takes no files) is reported when the domain is built, with
// a warning naming it, instead of failing write_diagnosis_report at invoke
// time; a writable one, existing or not, passes and nothing is left
// behind (issue 29: a read-only container started without a word).
func TestReportDirCheckedAtStart(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(tmp, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want string // want "": writable
	}{
		{"existing directory", tmp, ""},
		{"not created yet", filepath.Join(tmp, "a", "b", "reports"), ""},
		{"parent is a file", filepath.Join(file, "reports"), "not a directory"},
		{"a symlink", link, "is a symlink"},
	}
	if st, err := os.Stat("/proc/self"); err == nil && st.IsDir() {
		tests = append(tests, struct{ name, dir, want string }{"a file system that takes no files", "/proc/manglecp-reports", "cannot be created in /proc"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkReportDir(tt.dir)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("writable %s refused: %v", tt.dir, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.dir)):
				t.Fatalf("%s: %v; want an error naming it, %q", tt.dir, err, tt.want)
			}
		})
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 2 {
		t.Errorf("the check left files behind: %v", entries)
	}
	var logs bytes.Buffer
	d := Domain(Config{ReportDir: filepath.Join(file, "reports"), Config: chrome.Config{Path: "none", Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	defer d.Close()
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "write_diagnosis_report will fail") || !strings.Contains(out, filepath.Join(file, "reports")) {
		t.Errorf("no start-up warning naming the directory:\n%s", out)
	}
}
