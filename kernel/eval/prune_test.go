package eval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/kernel/eval"
	"github.com/manglecp/manglecp/kernel/internal/kerneltest"
	"github.com/manglecp/manglecp/protocol"
)

func TestIntentPlanMatchesFullPlan(t *testing.T) {
	rounds := kerneltest.RoundsFor(120, 20)
	for _, tc := range kerneltest.DomainCases {
		p := mustLoad(t, tc.Dir)
		full := kerneltest.FullPlan(p)
		intents := tc.IntentsOf(p.Analysis)
		gen := kerneltest.NewFactGen(p.Analysis)
		selected := 0
		for seed := range rounds {
			rng := rand.New(rand.NewPCG(uint64(seed), 40))
			req := gen.Request(t, rng, intents, rng.IntN(40))
			if seed%7 == 0 {
				req.Permissions = nil // intent_denied, for a domain with a policy on it
			}
			name := fmt.Sprintf("%s/%s/seed=%d", tc.Dir, req.Intent, seed)
			got, gerr := p.StoreFacts(req, false)
			want, werr := full.StoreFacts(req, false)
			if gerr != nil || werr != nil {
				if (gerr == nil) != (werr == nil) {
					t.Fatalf("%s: intent's plan error %v, full plan error %v", name, gerr, werr)
				}
				continue
			}
			if extra := kerneltest.Minus(got, want); len(extra) > 0 {
				t.Fatalf("%s: the intent's plan derives facts the full evaluation does not: %v", name, extra)
			}
			gr, err := p.Evaluate(context.Background(), req, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			wr, err := full.Evaluate(context.Background(), req, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if gr.FactsDerived > wr.FactsDerived || gr.RulesFired > wr.RulesFired {
				t.Errorf("%s: facts_derived %d, rules_fired %d with the intent's plan; %d, %d with every rule", name, gr.FactsDerived, gr.RulesFired, wr.FactsDerived, wr.RulesFired)
			}
			gr.FactsDerived, gr.RulesFired, gr.Work = 0, 0, 0
			wr.FactsDerived, wr.RulesFired, wr.Work = 0, 0, 0
			gj, _ := json.Marshal(gr)
			wj, _ := json.Marshal(wr)
			if string(gj) != string(wj) {
				t.Fatalf("%s: results differ\nintent's plan: %s\nfull plan:     %s", name, gj, wj)
			}
			selected += len(gr.Tools)
		}
		// The comparison says something only if requests select tools.
		if selected < rounds/4 {
			t.Errorf("%s: %d tools selected over %d requests", tc.Dir, selected, rounds)
		}
		t.Logf("%s: %d tools compared over %d requests", tc.Dir, selected, rounds)
	}
}

func TestIntentPlanLeavesOutOtherIntents(t *testing.T) {
	p := mustLoad(t, kerneltest.BrowserRules)
	plan := p.IntentPlans["diagnose_error"]
	in := kerneltest.PlanRules(plan)
	names := p.RuleNames()
	var kept []string
	for i := range p.Info.Rules {
		if in[i] {
			kept = append(kept, names[i]+": "+p.Info.Rules[i].String())
		}
	}
	text := strings.Join(kept, "\n")
	for _, absent := range []string{`mandatory_for_intent("observe"`, `mandatory_for_intent("automate"`, `tool_param("fill_form"`, `tool_param_enum("press_key"`} {
		if strings.Contains(text, absent) {
			t.Errorf("diagnose_error's plan evaluates %s...:\n%s", absent, text)
		}
	}
	for _, present := range []string{`mandatory_for_intent("diagnose_error"`, "final_selected(", "intent_denied(", "best_score(", "live("} {
		if !strings.Contains(text, present) {
			t.Errorf("diagnose_error's plan lacks %s...:\n%s", present, text)
		}
	}
	if all := kerneltest.PlanRules(p.Steps); len(in) >= len(all) {
		t.Errorf("diagnose_error's plan has %d of %d rules", len(in), len(all))
	}
	for _, req := range []eval.Request{{Intent: "diagnose_error", Explain: true}, {Intent: "diagnose_error", Coverage: true}, {Intent: "no_such_intent"}} {
		if got := p.PlanFor(req.Intent, req.Explain || req.Coverage); len(got) != len(p.Steps) {
			t.Errorf("%+v: a plan of %d steps, want every rule's %d", req, len(got), len(p.Steps))
		}
	}
}

func TestIntentPlanErrorsAgree(t *testing.T) {
	p := mustLoad(t, kerneltest.BrowserRules)
	full := kerneltest.FullPlan(p)
	gen := kerneltest.NewFactGen(p.Analysis)
	for seed := range kerneltest.RoundsFor(60, 10) {
		rng := rand.New(rand.NewPCG(uint64(seed), 41))
		req := gen.Request(t, rng, []string{"observe", "diagnose_error", "automate"}, rng.IntN(40))
		req.MaxFactsCreated = int64(1 + rng.IntN(150))
		_, gerr := p.Evaluate(context.Background(), req, nil)
		_, werr := full.Evaluate(context.Background(), req, nil)
		if werr == nil && gerr != nil {
			t.Fatalf("seed %d: the intent's plan fails (%v) within a budget the full evaluation keeps", seed, gerr)
		}
		if gerr != nil {
			var g, w *protocol.Error
			if !errors.As(gerr, &g) || !errors.As(werr, &w) || g.Code != w.Code {
				t.Fatalf("seed %d: intent's plan error %v, full plan error %v", seed, gerr, werr)
			}
		}
	}
}
