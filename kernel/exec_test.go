package kernel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/manglecp/manglecp/kernel/internal/kerneltest"
)

// TestResultsMatchEngine: on random requests to every domain, the
// kernel's evaluation and the engine's give the same results, proofs and
// rule coverage included (kernel/eval's TestEvaluatorMatchesEngine holds
// the two to the same facts). Only the work count may differ: the two
// look up facts differently.
func TestResultsMatchEngine(t *testing.T) {
	rounds := kerneltest.RoundsFor(60, 10)
	for _, tc := range kerneltest.DomainCases {
		p := mustLoad(t, tc.Dir)
		fast := &Program{e: kerneltest.FullPlan(p.e)}
		slow := &Program{e: kerneltest.EnginePlan(t, p.e)}
		intents := tc.IntentsOf(p.e.Analysis)
		gen := kerneltest.NewFactGen(p.e.Analysis)
		for seed := range rounds {
			rng := rand.New(rand.NewPCG(uint64(seed), 16))
			req := gen.Request(t, rng, intents, rng.IntN(40))
			req.Explain, req.Coverage = seed%3 == 0, seed%5 == 0
			compareResults(t, fmt.Sprintf("%s/seed=%d", tc.Dir, seed), fast, slow, req)
		}
	}
}

func compareResults(t *testing.T, name string, fast, slow *Program, req Request) {
	t.Helper()
	got, gerr := fast.Evaluate(context.Background(), req)
	want, werr := slow.Evaluate(context.Background(), req)
	if gerr == nil && werr == nil {
		got.Work, want.Work = 0, 0
		// A proof is one of the solutions of each rule: the engine finds its
		// derived facts in map order, the kernel in derivation order, so where
		// a fact has several proofs they may pick different ones.
		if (got.Explanation == nil) != (want.Explanation == nil) ||
			got.Explanation != nil && len(got.Explanation.Derivations) != len(want.Explanation.Derivations) {
			t.Fatalf("%s: explanations differ: kernel %+v, engine %+v", name, got.Explanation, want.Explanation)
		}
		got.Explanation, want.Explanation = nil, nil
	}
	kerneltest.SameOutcome(t, name, got, want, gerr, werr)
}
