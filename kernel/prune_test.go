package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/kernel/eval"
	"github.com/manglecp/manglecp/kernel/plan"
	"github.com/manglecp/manglecp/protocol"
)

// fullPlan returns a copy of p whose requests evaluate every rule,
// whatever their intent: the reference the intents' plans are held to.
func fullPlan(p *Program) *Program {
	e := *p.e
	pl := *e.Plan
	e.Plan = &pl
	pl.IntentPlans = nil
	return &Program{e: &e}
}

// planRules marks the rules (by index in Program.info.Rules) a plan's
// compiled steps evaluate.
func planRules(plan []plan.Step) map[int]bool {
	out := map[int]bool{}
	for _, st := range plan {
		for _, c := range append(append(st.Rules, st.DoRules...), st.DeltaRules...) {
			out[c.Index] = true
		}
	}
	return out
}

// storeFacts evaluates req with p's plan for it and returns every fact
// the evaluation added, as text, sorted.
func storeFacts(p *Program, req Request) ([]string, error) {
	r, _, err := p.e.Prepare(req)
	if err != nil {
		return nil, err
	}
	if err := eval.Guard(func() error { return p.e.Run(r, req) }); err != nil {
		return nil, err
	}
	var out []string
	for _, sym := range r.Store.Own.ListPredicates() {
		if sym.IsInternalPredicate() {
			continue
		}
		for _, f := range r.Store.Own.Rels[sym].Facts {
			out = append(out, f.String())
		}
	}
	sort.Strings(out)
	return out, nil
}

// TestIntentPlanMatchesFullPlan: on random requests to every domain, an
// intent's plan (prune.go) selects what evaluating every rule selects:
// the same tools with the same attributes, the same dropped candidates,
// the same denial; every fact it derives is one the full evaluation
// derives (never a false one), and facts_derived and rules_fired count
// at most as many.
func TestIntentPlanMatchesFullPlan(t *testing.T) {
	rounds := roundsFor(120, 20)
	for _, tc := range domainCases {
		p := mustLoad(t, tc.dir)
		full := fullPlan(p)
		intents := tc.intentsOf(p)
		gen := newFactGen(p)
		selected := 0
		for seed := range rounds {
			rng := rand.New(rand.NewPCG(uint64(seed), 40))
			req := gen.request(t, rng, intents, rng.IntN(40))
			if seed%7 == 0 {
				req.Permissions = nil // intent_denied, for a domain with a policy on it
			}
			name := fmt.Sprintf("%s/%s/seed=%d", tc.dir, req.Intent, seed)
			got, gerr := storeFacts(p, req)
			want, werr := storeFacts(full, req)
			if gerr != nil || werr != nil {
				if (gerr == nil) != (werr == nil) {
					t.Fatalf("%s: intent's plan error %v, full plan error %v", name, gerr, werr)
				}
				continue
			}
			if extra := minus(got, want); len(extra) > 0 {
				t.Fatalf("%s: the intent's plan derives facts the full evaluation does not: %v", name, extra)
			}
			gr, err := p.Evaluate(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			wr, err := full.Evaluate(context.Background(), req)
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
			t.Errorf("%s: %d tools selected over %d requests", tc.dir, selected, rounds)
		}
		t.Logf("%s: %d tools compared over %d requests", tc.dir, selected, rounds)
	}
}

// TestIntentPlanLeavesOutOtherIntents: the default domain's diagnose_error
// plan evaluates neither the rules that propose tools for its other
// intents nor the attributes of the tools only those select, and
// evaluates the rules of the pipeline it needs; proofs, rule coverage and an
// intent the manifest does not declare use every rule.
func TestIntentPlanLeavesOutOtherIntents(t *testing.T) {
	p := mustLoad(t, browserRules)
	plan := p.e.IntentPlans["diagnose_error"]
	in := planRules(plan)
	names := p.e.RuleNames()
	var kept []string
	for i := range p.e.Info.Rules {
		if in[i] {
			kept = append(kept, names[i]+": "+p.e.Info.Rules[i].String())
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
	if all := planRules(p.e.Steps); len(in) >= len(all) {
		t.Errorf("diagnose_error's plan has %d of %d rules", len(in), len(all))
	}
	for _, req := range []Request{{Intent: "diagnose_error", Explain: true}, {Intent: "diagnose_error", Coverage: true}, {Intent: "no_such_intent"}} {
		if got := p.e.PlanFor(req.Intent, req.Explain || req.Coverage); len(got) != len(p.e.Steps) {
			t.Errorf("%+v: a plan of %d steps, want every rule's %d", req, len(got), len(p.e.Steps))
		}
	}
}

// TestIntentPlanErrorsAgree: a budget the full evaluation exceeds is one
// the intent's plan may keep within (it derives fewer facts), never the
// reverse; errors other than budgets are the same.
func TestIntentPlanErrorsAgree(t *testing.T) {
	p := mustLoad(t, browserRules)
	full := fullPlan(p)
	gen := newFactGen(p)
	for seed := range roundsFor(60, 10) {
		rng := rand.New(rand.NewPCG(uint64(seed), 41))
		req := gen.request(t, rng, []string{"observe", "diagnose_error", "automate"}, rng.IntN(40))
		req.MaxFactsCreated = int64(1 + rng.IntN(150))
		_, gerr := p.Evaluate(context.Background(), req)
		_, werr := full.Evaluate(context.Background(), req)
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
