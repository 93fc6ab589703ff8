package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"codeberg.org/TauCeti/mangle-go/unionfind"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/kernel/eval"
	"github.com/manglecp/manglecp/protocol"
)

// execRules is the differential test domain: every kind of premise.
const execRules = "testdata/exec"

// enginePlan returns a copy of p whose requests hand every stratum to the
// engine: the reference the kernel's own evaluator is held to.
func enginePlan(p *Program) *Program {
	e := *p.e
	pl := *e.Plan
	e.Plan = &pl
	pl.Compile(false)
	pl.IntentPlans = nil
	return &Program{e: &e}
}

// TestPlanCompilesDomains: the kernel evaluates every stratum of the
// shipped domains itself, and hands the engine the recursive ones and
// those with a temporal head.
func TestPlanCompilesDomains(t *testing.T) {
	for _, dir := range []string{browserRules, workspaceRules, ticketsRules} {
		p := mustLoad(t, dir)
		for _, st := range p.e.Steps {
			if st.Strata != nil {
				t.Errorf("%s: strata %v go to the engine", dir, st.PredToStratum)
			}
		}
	}
	p := mustLoad(t, execRules)
	engine := map[string]bool{}
	for _, st := range p.e.Steps {
		for sym := range st.PredToStratum {
			engine[sym.Symbol] = true
		}
	}
	for _, want := range []string{"far", "flagged"} {
		if !engine[want] {
			t.Errorf("exec domain: %s is not left to the engine (engine runs %v)", want, engine)
		}
	}
	if engine["big"] || engine["tag_list"] || engine["recent"] || engine["reach"] {
		t.Errorf("exec domain: compiled strata left to the engine: %v", engine)
	}
}

// domainCases are the rules of every domain and of the test domains, with
// the intents their random requests name (nil: every intent declared).
var domainCases = []domainCase{
	{browserRules, []string{"observe", "diagnose_error", "automate"}},
	{workspaceRules, []string{"explore", "find", "read", "edit", "reorganize"}},
	{ticketsRules, nil},
	{execRules, []string{"probe"}},
	{closureRules, []string{"explore"}},
	{joinRules, []string{"match"}},
}

type domainCase struct {
	dir     string
	intents []string
}

// roundsFor is full, or short under -short.
func roundsFor(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// intentsOf is the case's intents, or every intent p declares.
func (c domainCase) intentsOf(p *Program) []string {
	if c.intents != nil {
		return c.intents
	}
	var all []string
	for _, d := range p.e.IntentDecls {
		all = append(all, d.Name)
	}
	return all
}

// TestEvaluatorMatchesEngine: on random requests to every domain, the
// kernel's evaluation derives exactly the facts the engine derives, and
// the results (tools, statistics, proofs, coverage) are the same. Only the
// work count may differ: the two look up facts differently.
func TestEvaluatorMatchesEngine(t *testing.T) {
	rounds := roundsFor(60, 10)
	for _, tc := range domainCases {
		fast := fullPlan(mustLoad(t, tc.dir))
		slow := enginePlan(fast)
		intents := tc.intentsOf(fast)
		gen := newFactGen(fast)
		derived, failed := 0, 0
		for seed := range rounds {
			rng := rand.New(rand.NewPCG(uint64(seed), 16))
			req := gen.request(t, rng, intents, rng.IntN(40))
			req.Explain, req.Coverage = seed%3 == 0, seed%5 == 0
			name := fmt.Sprintf("%s/seed=%d", tc.dir, seed)
			n := compareStores(t, name, fast, slow, req)
			derived += n
			if n == 0 {
				failed++
			}
			compareResults(t, name, fast, slow, req)
		}
		// The comparison says something only if most requests evaluate.
		if failed > rounds/4 {
			t.Errorf("%s: %d of %d requests derived nothing or failed", tc.dir, failed, rounds)
		}
		t.Logf("%s: %d facts compared over %d requests", tc.dir, derived, rounds)
	}
}

// FuzzEvaluatorMatchesEngine is TestEvaluatorMatchesEngine with the
// random requests drawn from fuzzed seeds, on the domain made to exercise
// every kind of premise and on the default domain.
func FuzzEvaluatorMatchesEngine(f *testing.F) {
	for _, seed := range []uint64{0, 1, 7, 42} {
		f.Add(seed, uint8(20), false)
		f.Add(seed, uint8(3), true)
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, browser bool) {
		dir, intents := execRules, []string{"probe"}
		if browser {
			dir, intents = browserRules, []string{"observe", "diagnose_error", "automate"}
		}
		fast := fullPlan(mustLoad(t, dir))
		slow := enginePlan(fast)
		rng := rand.New(rand.NewPCG(seed, 16))
		req := newFactGen(fast).request(t, rng, intents, int(n%64))
		req.Explain, req.Coverage = seed%2 == 0, seed%3 == 0
		compareStores(t, "fuzz", fast, slow, req)
		compareResults(t, "fuzz", fast, slow, req)
	})
}

// compareStores evaluates req with both plans and compares every fact the
// evaluations added, internal predicates included.
func compareStores(t *testing.T, name string, fast, slow *Program, req Request) int {
	t.Helper()
	dump := func(p *Program) ([]string, error) {
		r, _, err := p.e.Prepare(req)
		if err != nil {
			return nil, err
		}
		if err := eval.Guard(func() error { return p.e.Run(r, req) }); err != nil {
			return nil, err
		}
		var out []string
		for _, sym := range r.Store.Own.ListPredicates() {
			for _, f := range r.Store.Own.Rels[sym].Facts {
				out = append(out, f.String())
			}
		}
		sort.Strings(out)
		return out, nil
	}
	got, gerr := dump(fast)
	want, werr := dump(slow)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s: kernel error %v, engine error %v", name, gerr, werr)
	}
	if gerr != nil {
		return 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: facts differ\nonly kernel: %v\nonly engine: %v", name, minus(got, want), minus(want, got))
	}
	return len(got)
}

func minus(a, b []string) []string {
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

// compareResults compares the two evaluations' results, but for Work.
func compareResults(t *testing.T, name string, fast, slow *Program, req Request) {
	t.Helper()
	got, gerr := fast.Evaluate(context.Background(), req)
	want, werr := slow.Evaluate(context.Background(), req)
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
	got.Work, want.Work = 0, 0
	// A proof is one of the solutions of each rule: the engine finds its
	// derived facts in map order, the kernel in derivation order, so where
	// a fact has several proofs they may pick different ones.
	if (got.Explanation == nil) != (want.Explanation == nil) ||
		got.Explanation != nil && len(got.Explanation.Derivations) != len(want.Explanation.Derivations) {
		t.Fatalf("%s: explanations differ: kernel %+v, engine %+v", name, got.Explanation, want.Explanation)
	}
	got.Explanation, want.Explanation = nil, nil
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("%s: results differ\nkernel: %s\nengine: %s", name, gj, wj)
	}
}

// factGen makes random facts for a domain from its facts profile, with
// arguments drawn from small pools (the constants its rules mention, and
// a few more) so that joins, negations and comparisons meet.
type factGen struct {
	p       *Program
	strs    []string
	nums    []int64
	profile []protocol.PredicateSchema
}

func newFactGen(p *Program) *factGen {
	g := &factGen{p: p, nums: []int64{0, 1, 2, 7, 10, 11, 12, 200, 404, 500, 1771510200000}}
	seen := map[string]bool{}
	for _, s := range []string{"a1", "a2", "b1", "hot", "cold", "s1", "s2", "r1", "r2"} {
		seen[s] = true
		g.strs = append(g.strs, s)
	}
	for _, r := range p.e.Info.Rules {
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
	for _, d := range p.e.Profile.Predicates {
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

func (g *factGen) value(rng *rand.Rand, typ string) any {
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

// facts returns n valid random facts.
func (g *factGen) facts(t *testing.T, rng *rand.Rand, n int) []protocol.Fact {
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
			from := testEvalTime.Add(-time.Duration(rng.IntN(30)) * time.Minute)
			to := from.Add(time.Duration(rng.IntN(40)) * time.Minute)
			f += fmt.Sprintf(`,"t":{"start":%q,"end":%q}`, from.Format(time.RFC3339), to.Format(time.RFC3339))
		}
		raw = append(raw, f+"}")
	}
	var facts []protocol.Fact
	if err := json.Unmarshal([]byte("["+strings.Join(raw, ",")+"]"), &facts); err != nil {
		t.Fatal(err)
	}
	valid, vs := protocol.ValidateFacts(facts, &g.p.e.Profile, protocol.Assert, nil)
	if len(vs) > 0 {
		t.Fatalf("generated facts are invalid: %v", vs)
	}
	return valid
}

// numericExternal lists the external predicates whose arguments are
// numbers (the others' are strings).
var numericExternal = map[string]bool{"root_count": true}

// request returns a random request to one of intents with n client facts
// and random external facts.
func (g *factGen) request(t *testing.T, rng *rand.Rand, intents []string, n int) Request {
	return Request{
		Intent:          intents[rng.IntN(len(intents))],
		Facts:           g.facts(t, rng, n),
		External:        g.external(rng),
		EvalTime:        testEvalTime,
		Caller:          "anonymous",
		Permissions:     anyone,
		MaxFactsCreated: 100_000,
	}
}

// external returns random facts of the domain's external predicates.
func (g *factGen) external(rng *rand.Rand) []protocol.Fact {
	var out []protocol.Fact
	names := make([]string, 0, len(g.p.e.External))
	for name := range g.p.e.External {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for range rng.IntN(4) {
			args := make([]any, g.p.e.External[name])
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

// TestFiredRulesMatchSearch: what FiredRules reports of every rule (from
// the load, the evaluation's record of compiled rules and the head
// predicates' facts) is what searching the rule's body in the final store
// finds, rule by rule, on random requests to every domain; with the plan
// of the request's intent (prune.go), a rule the plan leaves out never
// fired. Rule coverage and rules_fired both read FiredRules.
func TestFiredRulesMatchSearch(t *testing.T) {
	rounds := roundsFor(40, 8)
	for _, tc := range domainCases {
		p := mustLoad(t, tc.dir)
		intents := tc.intentsOf(p)
		gen := newFactGen(p)
		checked := 0
		for seed := range rounds {
			rng := rand.New(rand.NewPCG(uint64(seed), 17))
			req := gen.request(t, rng, intents, rng.IntN(40))
			r, _, err := p.e.Prepare(req)
			if err != nil {
				continue
			}
			if err := eval.Guard(func() error { return p.e.Run(r, req) }); err != nil {
				continue
			}
			clientPreds := map[string]bool{}
			for _, f := range req.Facts {
				clientPreds[f.Pred] = true
			}
			m := p.e.NewMatcher(r.Store, r.Ts, req.EvalTime)
			got := p.e.FiredRules(r.Store, m, clientPreds, r.Fired)
			names := p.e.RuleNames()
			inPlan := planRules(r.Plan)
			for i := range p.e.Info.Rules {
				want := m.BodyHasSolution(p.e.RuleBodies[i], unionfind.New())
				if p.e.CompiledRule[i] && !inPlan[i] {
					want = false
				}
				if got[i] != want {
					t.Fatalf("%s seed %d: rule %s fired %v, its body has a solution: %v", tc.dir, seed, names[i], got[i], want)
				}
			}
			checked++
		}
		if checked < rounds/2 {
			t.Errorf("%s: only %d of %d requests evaluated", tc.dir, checked, rounds)
		}
	}
}
