package kernel

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// withRules is the browser domain's rule directory with extra domain files.
func withRules(t *testing.T, extra map[string]string) []Layer {
	t.Helper()
	dom := fstest.MapFS{}
	dir := filepath.Join(browserRules, "domain")
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(dir, p))
		dom[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range extra {
		dom[name] = &fstest.MapFile{Data: []byte(src)}
	}
	layers := domainLayers(browserRules)
	layers[1].FS = dom
	return layers
}

// TestEngineStrata: the program says which strata the engine evaluates and
// why (manglecp check prints it), and the built-in domains have none.
func TestEngineStrata(t *testing.T) {
	for _, dir := range []string{browserRules, workspaceRules, ticketsRules} {
		if got := mustLoad(t, dir).EngineStrata(); len(got) != 0 {
			t.Errorf("%s: the engine evaluates %+v; the kernel should compile every rule of a built-in domain", dir, got)
		}
	}
	for _, tc := range []struct {
		name, src string
		want      []string // in Predicate, Reason and Rule; nil: compiled
	}{
		{"linear recursion", "hop(A, B) :- net_request(_, A, _, B, _).\nreach(A, B) :- hop(A, B).\nreach(A, C) :- reach(A, B), hop(B, C).\n", nil},
		{"non-linear recursion", "hop(A, B) :- net_request(_, A, _, B, _).\nreach(A, B) :- hop(A, B).\nreach(A, C) :- reach(A, B), reach(B, C).\n",
			[]string{"reach/2", "2 premises of its own stratum", "reach(A,C) :- reach(A,B), reach(B,C)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := LoadWithExternals(externals[browserRules], withRules(t, map[string]string{"zz.mg": tc.src})...)
			if err != nil {
				t.Fatal(err)
			}
			got := p.EngineStrata()
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("the engine evaluates %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("engine strata %+v, want one", got)
			}
			all := got[0].Predicate + " | " + got[0].Reason + " | " + got[0].Rule
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("%s lacks %q", all, w)
				}
			}
			if strings.Join(got[0].Predicates, ",") != "reach/2" {
				t.Errorf("predicates %v", got[0].Predicates)
			}
		})
	}
}
