package kernel

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// anyone is the permission set of an anonymous caller (authentication
// off); the browser policy denies every intent to a caller without it.
var anyone = []string{"*"}

// testEvalTime is the fixed evaluation time of every test request.
var testEvalTime = time.Date(2026, 2, 19, 14, 30, 5, 0, time.UTC)

// domainLayers returns the policy and domain layers of a rule directory
// holding policy/ and domain/ (policy may be absent). File names in errors
// start with "policy/" or "domain/".
func domainLayers(dir string) []Layer {
	return []Layer{
		{Name: "policy", FS: os.DirFS(filepath.Join(dir, "policy")), Prefix: "policy"},
		{Name: "domain", FS: os.DirFS(filepath.Join(dir, "domain")), Prefix: "domain"},
	}
}

// browserRules is the default domain's rule directory, read from disk as
// `manglecp serve --rules` would.
const browserRules = "../domains/browser/rules"

// externals are the external predicates each rule directory's domain
// declares in Go (domains/browser/domain.go for the browser domain).
var externals = map[string][]External{
	browserRules: {{Name: "browser_allowed_host", Arity: 1}, {Name: "browser_available", Arity: 1}, {Name: "browser_option", Arity: 1}, {Name: "browser_session_open", Arity: 1},
		{Name: "page_quoted", Arity: 2}, {Name: "report_exists", Arity: 1}, {Name: "request_id_fits", Arity: 1}, {Name: "url_parts", Arity: 3}},
	workspaceRules: {{Name: "entry", Arity: 2}, {Name: "root_count", Arity: 1}, {Name: "signed_edit", Arity: 4}},
}

// workspaceRules and ticketsRules are the workspace domain's and the
// tickets example's rule directories.
const (
	workspaceRules = "../domains/workspace/rules"
	ticketsRules   = "../examples/tickets/rules"
)

// loadDir loads a rule directory with its domain's external predicates.
func loadDir(dir string) (*Program, error) {
	return LoadWithExternals(externals[dir], domainLayers(dir)...)
}

var loadedPrograms sync.Map // dir -> func() (*Program, error)

// mustLoad loads a rule directory once per test binary; programs are
// immutable, so tests share them.
func mustLoad(t testing.TB, dir string) *Program {
	t.Helper()
	f, _ := loadedPrograms.LoadOrStore(dir, sync.OnceValues(func() (*Program, error) { return loadDir(dir) }))
	p, err := f.(func() (*Program, error))()
	if err != nil {
		t.Fatalf("Load(%s): %v", dir, err)
	}
	return p
}

// checkGolden compares got, as indented JSON, with testdata/golden/name.
// With -update it rewrites the file instead.
func checkGolden(t *testing.T, name string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("testdata", "golden", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s differs (run go test -update if the change is intended):\n%s", path, testenv.FirstDiff(string(want), string(b)))
	}
}

// jn is a JSON integer as protocol.ValidateFacts leaves it.
func jn(i int) json.Number { return json.Number(fmt.Sprint(i)) }

// browserFacts is a small realistic diagnose_error page: a failed request
// followed by a console error in the same session, plus noise.
func browserFacts() []protocol.Fact {
	return []protocol.Fact{
		protocol.NewFact("current_url", "https://app.example.com/dashboard"),
		protocol.NewFact("console_event", "s1", "info", "app started", jn(1771510190000)),
		protocol.NewFact("console_event", "s1", "error", "TypeError: Cannot read properties of null", jn(1771510200000)),
		protocol.NewFact("net_request", "s1", "r41", "GET", "https://api.example.com/config", jn(1771510198000)),
		protocol.NewFact("net_response", "s1", "r41", jn(200), jn(1771510198200)),
		protocol.NewFact("net_request", "s1", "r42", "GET", "https://api.example.com/users", jn(1771510199000)),
		protocol.NewFact("net_response", "s1", "r42", jn(404), jn(1771510199500)),
		// The external request_id_fits, as domains/browser computes it.
		protocol.NewFact("request_id_fits", "r42"),
	}
}
