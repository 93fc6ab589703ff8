package kernel

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

var updateMistakes = flag.Bool("update-mistakes", false, "rewrite testdata/mistakes/*.golden")

// TestMistakeGoldens loads each testdata/mistakes/NAME.mg as a domain's
// only rule file: a complete incident-triage domain with one mistake a new
// author makes (a misspelled contract predicate, a name that refers to
// nothing declared, a wrong parameter type or default, a syntax error).
// Load must fail with exactly the file:line: message lines of NAME.golden;
// valid.mg, the same domain without the mistake, must load.
func TestMistakeGoldens(t *testing.T) {
	paths, err := filepath.Glob("testdata/mistakes/*.mg")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".mg")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			layer := Layer{Name: "domain", FS: fstest.MapFS{name + ".mg": {Data: src}}, Prefix: "testdata/mistakes"}
			_, err = Load(layer)
			if name == "valid" {
				if err != nil {
					t.Fatalf("the valid domain does not load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Load succeeded; want the errors of the golden file")
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(path, ".mg") + ".golden"
			if *updateMistakes {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("Load errors differ from %s:\ngot:\n%swant:\n%s", golden, got, want)
			}
		})
	}
}
