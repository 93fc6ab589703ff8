// Package kerneltest holds what the tests of the kernel's stages share:
// the rule directories of the shipped and test domains with their
// external predicates, the fixed evaluation time, a loader, the random
// request generator of the differential tests, and the plans those tests
// hold the kernel's evaluation against.
package kerneltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/kernel/analyse"
	"github.com/manglecp/manglecp/kernel/eval"
	"github.com/manglecp/manglecp/kernel/load"
	"github.com/manglecp/manglecp/kernel/plan"
	"github.com/manglecp/manglecp/protocol"
)

// root is the repository's root directory.
var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}()

// The rule directories of the shipped domains, read from disk as
// `manglecp serve --rules` would, and of the test domains under
// kernel/testdata.
var (
	BrowserRules   = filepath.Join(root, "domains", "browser", "rules")
	WorkspaceRules = filepath.Join(root, "domains", "workspace", "rules")
	TicketsRules   = filepath.Join(root, "examples", "tickets", "rules")
	// ExecRules is the differential test domain: every kind of premise.
	ExecRules    = Testdata("exec")
	ClosureRules = Testdata("closure")
	JoinRules    = Testdata("join")
)

// Testdata is the directory kernel/testdata/name.
func Testdata(name string) string { return filepath.Join(root, "kernel", "testdata", name) }

// Externals are the external predicates each rule directory's domain
// declares in Go (domains/browser/domain.go for the browser domain).
var Externals = map[string][]analyse.External{
	BrowserRules: {{Name: "browser_allowed_host", Arity: 1}, {Name: "browser_available", Arity: 1}, {Name: "browser_option", Arity: 1}, {Name: "browser_session_open", Arity: 1},
		{Name: "page_quoted", Arity: 2}, {Name: "report_exists", Arity: 1}, {Name: "request_id_fits", Arity: 1}, {Name: "url_parts", Arity: 3}},
	WorkspaceRules: {{Name: "entry", Arity: 2}, {Name: "root_count", Arity: 1}, {Name: "signed_edit", Arity: 4}},
}

// EvalTime is the fixed evaluation time of every test request.
var EvalTime = time.Date(2026, 2, 19, 14, 30, 5, 0, time.UTC)

// Anyone is the permission set of an anonymous caller (authentication
// off); the browser policy denies every intent to a caller without it.
var Anyone = []string{"*"}

// DomainLayers returns the policy and domain layers of a rule directory
// holding policy/ and domain/ (policy may be absent). File names in errors
// start with "policy/" or "domain/".
func DomainLayers(dir string) []load.Layer {
	return []load.Layer{
		{Name: "policy", FS: os.DirFS(filepath.Join(dir, "policy")), Prefix: "policy"},
		{Name: "domain", FS: os.DirFS(filepath.Join(dir, "domain")), Prefix: "domain"},
	}
}

var analysed sync.Map // dir -> func() (*analyse.Analysis, error)

// Analyse reads and analyses a rule directory between the kernel's own
// layers, with its domain's external predicates, once per test binary
// (an analysis is immutable).
func Analyse(t testing.TB, dir string) *analyse.Analysis {
	t.Helper()
	f, _ := analysed.LoadOrStore(dir, sync.OnceValues(func() (*analyse.Analysis, error) {
		schema, pipeline := load.ProtocolLayers()
		layers := append(append([]load.Layer{schema}, DomainLayers(dir)...), pipeline)
		files, err := load.Read(layers)
		if err != nil {
			return nil, err
		}
		return analyse.Analyse(files, Externals[dir])
	}))
	a, err := f.(func() (*analyse.Analysis, error))()
	if err != nil {
		t.Fatalf("analysing %s: %v", dir, err)
	}
	return a
}

// FullPlan returns a copy of p whose requests evaluate every rule,
// whatever their intent: the reference the intents' plans are held to.
func FullPlan(p *eval.Program) *eval.Program {
	q := *p
	pl := *q.Plan
	pl.IntentPlans = nil
	q.Plan = &pl
	return &q
}

// EnginePlan returns p's program planned so that its requests hand every
// stratum to the engine, whatever their intent: the reference the
// kernel's own evaluator is held to.
func EnginePlan(t testing.TB, p *eval.Program) *eval.Program {
	t.Helper()
	q, err := eval.New(p.Analysis, false)
	if err != nil {
		t.Fatal(err)
	}
	return FullPlan(q)
}

// PlanRules marks the rules (by index in the analysis' rules) a plan's
// compiled steps evaluate.
func PlanRules(steps []plan.Step) map[int]bool {
	out := map[int]bool{}
	for _, st := range steps {
		for _, c := range append(append(st.Rules, st.DoRules...), st.DeltaRules...) {
			out[c.Index] = true
		}
	}
	return out
}

// RoundsFor is full, or short under -short.
func RoundsFor(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// Minus is the strings of a not in b.
func Minus(a, b []string) []string {
	in := map[string]bool{}
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
}

// DomainCase is a rule directory with the intents its random requests
// name (nil: every intent declared).
type DomainCase struct {
	Dir     string
	Intents []string
}

// DomainCases are the rules of every domain and of the test domains.
var DomainCases = []DomainCase{
	{BrowserRules, []string{"observe", "diagnose_error", "automate"}},
	{WorkspaceRules, []string{"explore", "find", "read", "edit", "reorganize"}},
	{TicketsRules, nil},
	{ExecRules, []string{"probe"}},
	{ClosureRules, []string{"explore"}},
	{JoinRules, []string{"match"}},
}

// IntentsOf is the case's intents, or every intent a declares.
func (c DomainCase) IntentsOf(a *analyse.Analysis) []string {
	if c.Intents != nil {
		return c.Intents
	}
	var all []string
	for _, d := range a.Intents() {
		all = append(all, d.Name)
	}
	return all
}

// FactGen makes random facts for a domain from its facts profile, with
// arguments drawn from small pools (the constants its rules mention, and
// a few more) so that joins, negations and comparisons meet.
type FactGen struct {
	a       *analyse.Analysis
	strs    []string
	nums    []int64
	profile []protocol.PredicateSchema
}

// NewFactGen returns the generator of a's domain.
func NewFactGen(a *analyse.Analysis) *FactGen {
	g := &FactGen{a: a, nums: []int64{0, 1, 2, 7, 10, 11, 12, 200, 404, 500, 1771510200000}}
	seen := map[string]bool{}
	for _, s := range []string{"a1", "a2", "b1", "hot", "cold", "s1", "s2", "r1", "r2"} {
		seen[s] = true
		g.strs = append(g.strs, s)
	}
	for _, r := range a.Info.Rules {
		for _, t := range append([]ast.Term{r.Head}, r.Premises...) {
			for _, c := range constantsOf(t) {
				switch c.Type {
				case ast.StringType:
					if !seen[c.Symbol] {
						seen[c.Symbol] = true
						g.strs = append(g.strs, c.Symbol)
					}
				case ast.NumberType:
					g.nums = append(g.nums, c.NumValue)
				}
			}
		}
	}
	for _, d := range a.Profile.Predicates {
		if d.Direction != "output" {
			g.profile = append(g.profile, d)
		}
	}
	return g
}

// constantsOf lists the constants of an atom-like term's arguments.
func constantsOf(t ast.Term) []ast.Constant {
	var args []ast.BaseTerm
	switch x := t.(type) {
	case ast.Atom:
		args = x.Args
	case ast.NegAtom:
		args = x.Atom.Args
	case ast.Eq:
		args = []ast.BaseTerm{x.Left, x.Right}
	case ast.Ineq:
		args = []ast.BaseTerm{x.Left, x.Right}
	case ast.TemporalLiteral:
		return constantsOf(x.Literal)
	}
	var out []ast.Constant
	for _, a := range args {
		switch c := a.(type) {
		case ast.Constant:
			out = append(out, c)
		case ast.ApplyFn:
			for _, b := range c.Args {
				if k, ok := b.(ast.Constant); ok {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

func (g *FactGen) value(rng *rand.Rand, typ string) any {
	switch typ {
	case "number":
		return g.nums[rng.IntN(len(g.nums))]
	case "float":
		return float64(rng.IntN(20)) + 0.5
	case "bool", "boolean":
		return rng.IntN(2) == 0
	}
	return g.strs[rng.IntN(len(g.strs))]
}

// Facts returns n valid random facts.
func (g *FactGen) Facts(t testing.TB, rng *rand.Rand, n int) []protocol.Fact {
	t.Helper()
	if len(g.profile) == 0 {
		return nil
	}
	var raw []string
	for range n {
		d := g.profile[rng.IntN(len(g.profile))]
		args := make([]any, d.Arity)
		for i := range args {
			typ := "string"
			if i < len(d.ArgTypes) {
				typ = d.ArgTypes[i]
			}
			args[i] = g.value(rng, typ)
		}
		b, _ := json.Marshal(args)
		f := fmt.Sprintf(`{"pred":%q,"args":%s`, d.Predicate, b)
		if d.Temporal && rng.IntN(3) > 0 {
			from := EvalTime.Add(-time.Duration(rng.IntN(30)) * time.Minute)
			to := from.Add(time.Duration(rng.IntN(40)) * time.Minute)
			f += fmt.Sprintf(`,"t":{"start":%q,"end":%q}`, from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
		raw = append(raw, f+"}")
	}
	var facts []protocol.Fact
	if err := json.Unmarshal([]byte("["+strings.Join(raw, ",")+"]"), &facts); err != nil {
		t.Fatal(err)
	}
	valid, vs := protocol.ValidateFacts(facts, &g.a.Profile, protocol.Assert, nil)
	if len(vs) > 0 {
		t.Fatalf("generated facts are invalid: %v", vs)
	}
	return valid
}

// numericExternal lists the external predicates whose arguments are
// numbers (the others' are strings).
var numericExternal = map[string]bool{"root_count": true}

// Request returns a random request to one of intents with n client facts
// and random external facts.
func (g *FactGen) Request(t testing.TB, rng *rand.Rand, intents []string, n int) eval.Request {
	return eval.Request{
		Intent:          intents[rng.IntN(len(intents))],
		Facts:           g.Facts(t, rng, n),
		External:        g.external(rng),
		EvalTime:        EvalTime,
		Caller:          "anonymous",
		Permissions:     Anyone,
		MaxFactsCreated: 100_000,
	}
}

// external returns random facts of the domain's external predicates.
func (g *FactGen) external(rng *rand.Rand) []protocol.Fact {
	var out []protocol.Fact
	names := make([]string, 0, len(g.a.External))
	for name := range g.a.External {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for range rng.IntN(4) {
			args := make([]any, g.a.External[name])
			for i := range args {
				if numericExternal[name] {
					args[i] = json.Number(fmt.Sprint(g.nums[rng.IntN(len(g.nums))]))
				} else {
					args[i] = g.strs[rng.IntN(len(g.strs))]
				}
			}
			out = append(out, protocol.NewFact(name, args...))
		}
	}
	return out
}

// SameOutcome fails t unless the kernel's and the engine's evaluations of
// one request agree: both failed with the same protocol code, or both
// succeeded with the same result as JSON.
func SameOutcome(t testing.TB, name string, got, want any, gerr, werr error) {
	t.Helper()
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s: kernel error %v, engine error %v", name, gerr, werr)
	}
	if gerr != nil {
		var g, w *protocol.Error
		if !errors.As(gerr, &g) || !errors.As(werr, &w) || g.Code != w.Code {
			t.Fatalf("%s: kernel error %v, engine error %v", name, gerr, werr)
		}
		return
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("%s: results differ\nkernel: %s\nengine: %s", name, gj, wj)
	}
}
