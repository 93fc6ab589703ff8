package buildinfo

import (
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go install from a tag", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.2.0"}}, "v0.2.0"},
		{"a release candidate", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v1.0.0-rc.1"}}, "v1.0.0-rc.1"},
		{"a checkout", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "(devel)"}}, ""},
		{"a pseudo-version", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.2.1-0.20261207164500-abcdefabcdef"}}, ""},
		{"a dirty tree", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.2.0+dirty"}}, ""},
		{"a domain requiring a release", debug.BuildInfo{Main: debug.Module{Path: "example.com/incidents", Version: "(devel)"},
			Deps: []*debug.Module{{Path: Module, Version: "v0.2.0"}}}, "v0.2.0"},
		{"a domain replacing it", debug.BuildInfo{Main: debug.Module{Path: "incidents"},
			Deps: []*debug.Module{{Path: Module, Version: "v0.2.0", Replace: &debug.Module{Path: "/src/manglecp"}}}}, ""},
		{"another program", debug.BuildInfo{Main: debug.Module{Path: "example.com/x", Version: "v1.0.0"}}, ""},
	} {
		if got := release(&tc.bi); got != tc.want {
			t.Errorf("%s: release = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestSourceDir: a test binary is built without -trimpath from this
// checkout, so the compiler recorded where its source is.
func TestSourceDir(t *testing.T) {
	want, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if got := SourceDir(); got != want {
		t.Errorf("SourceDir = %q, want %q", got, want)
	}
	if IsModuleDir(t.TempDir()) {
		t.Error("an empty directory is taken for the module's")
	}
}
