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

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/kernel/internal/kerneltest"
	"github.com/manglecp/manglecp/protocol"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// The shared test data (kernel/internal/kerneltest) under the names the
// kernel's tests use.
var (
	anyone         = kerneltest.Anyone
	testEvalTime   = kerneltest.EvalTime
	domainLayers   = kerneltest.DomainLayers
	externals      = kerneltest.Externals
	browserRules   = kerneltest.BrowserRules
	workspaceRules = kerneltest.WorkspaceRules
	ticketsRules   = kerneltest.TicketsRules
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
