package eval_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/manglecp/manglecp/kernel/eval"
	"github.com/manglecp/manglecp/kernel/internal/kerneltest"
)

var programs sync.Map // dir -> func() (*eval.Program, error)

// mustLoad loads a rule directory's program once per test binary;
// programs are immutable, so tests share them.
func mustLoad(t testing.TB, dir string) *eval.Program {
	t.Helper()
	a := kerneltest.Analyse(t, dir)
	f, _ := programs.LoadOrStore(dir, sync.OnceValues(func() (*eval.Program, error) { return eval.New(a, true) }))
	p, err := f.(func() (*eval.Program, error))()
	if err != nil {
		t.Fatalf("planning %s: %v", dir, err)
	}
	return p
}

func TestPlanCompilesDomains(t *testing.T) {
	for _, dir := range []string{kerneltest.BrowserRules, kerneltest.WorkspaceRules, kerneltest.TicketsRules} {
		p := mustLoad(t, dir)
		for _, st := range p.Steps {
			if st.Strata != nil {
				t.Errorf("%s: strata %v go to the engine", dir, st.PredToStratum)
			}
		}
	}
	p := mustLoad(t, kerneltest.ExecRules)
	engine := map[string]bool{}
	for _, st := range p.Steps {
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

func TestEvaluatorMatchesEngine(t *testing.T) {
	rounds := kerneltest.RoundsFor(60, 10)
	for _, tc := range kerneltest.DomainCases {
		fast := kerneltest.FullPlan(mustLoad(t, tc.Dir))
		slow := kerneltest.EnginePlan(t, fast)
		intents := tc.IntentsOf(fast.Analysis)
		gen := kerneltest.NewFactGen(fast.Analysis)
		derived, failed := 0, 0
		for seed := range rounds {
			rng := rand.New(rand.NewPCG(uint64(seed), 16))
			req := gen.Request(t, rng, intents, rng.IntN(40))
			req.Explain, req.Coverage = seed%3 == 0, seed%5 == 0
			name := fmt.Sprintf("%s/seed=%d", tc.Dir, seed)
			n := compareStores(t, name, fast, slow, req)
			derived += n
			if n == 0 {
				failed++
			}
			compareResults(t, name, fast, slow, req)
		}
		// The comparison says something only if most requests evaluate.
		if failed > rounds/4 {
			t.Errorf("%s: %d of %d requests derived nothing or failed", tc.Dir, failed, rounds)
		}
		t.Logf("%s: %d facts compared over %d requests", tc.Dir, derived, rounds)
	}
}

func FuzzEvaluatorMatchesEngine(f *testing.F) {
	for _, seed := range []uint64{0, 1, 7, 42} {
		f.Add(seed, uint8(20), false)
		f.Add(seed, uint8(3), true)
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, browser bool) {
		dir, intents := kerneltest.ExecRules, []string{"probe"}
		if browser {
			dir, intents = kerneltest.BrowserRules, []string{"observe", "diagnose_error", "automate"}
		}
		fast := kerneltest.FullPlan(mustLoad(t, dir))
		slow := kerneltest.EnginePlan(t, fast)
		rng := rand.New(rand.NewPCG(seed, 16))
		req := kerneltest.NewFactGen(fast.Analysis).Request(t, rng, intents, int(n%64))
		req.Explain, req.Coverage = seed%2 == 0, seed%3 == 0
		compareStores(t, "fuzz", fast, slow, req)
		compareResults(t, "fuzz", fast, slow, req)
	})
}

// compareStores evaluates req with both plans and compares every fact the
// evaluations added, internal predicates included.
func compareStores(t *testing.T, name string, fast, slow *eval.Program, req eval.Request) int {
	t.Helper()
	got, gerr := fast.StoreFacts(req, true)
	want, werr := slow.StoreFacts(req, true)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%s: kernel error %v, engine error %v", name, gerr, werr)
	}
	if gerr != nil {
		return 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: facts differ\nonly kernel: %v\nonly engine: %v", name, kerneltest.Minus(got, want), kerneltest.Minus(want, got))
	}
	return len(got)
}

// compareResults compares the two evaluations' results, but for Work.
// (Proofs and rule coverage, which read the final store, are compared by
// the kernel's TestResultsMatchEngine.)
func compareResults(t *testing.T, name string, fast, slow *eval.Program, req eval.Request) {
	t.Helper()
	got, gerr := fast.Evaluate(context.Background(), req, nil)
	want, werr := slow.Evaluate(context.Background(), req, nil)
	if gerr == nil && werr == nil {
		got.Work, want.Work = 0, 0
	}
	kerneltest.SameOutcome(t, name, got, want, gerr, werr)
}

// TestFiredRulesMatchSearch: what firedRules reports of every rule (from
// the load, the evaluation's record of compiled rules and the head
// predicates' facts) is what searching the rule's body in the final store
// finds, rule by rule, on random requests to every domain; with the plan
// of the request's intent (prune.go), a rule the plan leaves out never
// fired. Rule coverage and rules_fired both read firedRules.
func TestFiredRulesMatchSearch(t *testing.T) {
	rounds := kerneltest.RoundsFor(40, 8)
	for _, tc := range kerneltest.DomainCases {
		p := mustLoad(t, tc.Dir)
		intents := tc.IntentsOf(p.Analysis)
		gen := kerneltest.NewFactGen(p.Analysis)
		names := p.RuleNames()
		checked := 0
		for seed := range rounds {
			rng := rand.New(rand.NewPCG(uint64(seed), 17))
			req := gen.Request(t, rng, intents, rng.IntN(40))
			got, want, steps, err := p.FiredAndSearched(req)
			if err != nil {
				continue
			}
			inPlan := kerneltest.PlanRules(steps)
			for i := range got {
				if p.CompiledRule[i] && !inPlan[i] {
					want[i] = false // the plan left it out: it cannot have fired
				}
				if got[i] != want[i] {
					t.Fatalf("%s seed %d: rule %s fired %v, its body has a solution: %v", tc.Dir, seed, names[i], got[i], want[i])
				}
			}
			checked++
		}
		if checked < rounds/2 {
			t.Errorf("%s: only %d of %d requests evaluated", tc.Dir, checked, rounds)
		}
	}
}
