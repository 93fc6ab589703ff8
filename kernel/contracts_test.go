package kernel

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// The contracts test domain (testdata/contracts) takes every selection
// input from client facts:
//
//	score(Tool, S)  relevant_to_intent("fix", Tool, S)   phase 3 (flesh)
//	must(Tool)      mandatory_for_intent("fix", Tool)    phase 1 (skeleton, 100)
//	block(Tool)     prohibited(Tool, _)  (policy layer)  phase 2 (exclusion)
//
// and declares, as domain facts, conflicts_with("alpha", "beta") and the
// dependencies delta -> epsilon -> zeta, eta -> beta and theta -> alpha. Intent "other"
// always selects other_tool only.
const contractsRules = "testdata/contracts"

func scoreFact(tool string, s int) protocol.Fact { return protocol.NewFact("score", tool, jn(s)) }
func mustFact(tool string) protocol.Fact         { return protocol.NewFact("must", tool) }
func blockFact(tool string) protocol.Fact        { return protocol.NewFact("block", tool) }

// outcome renders the selected tools as "name:score:phase" in result
// order, and the dropped ones as "name:phase".
func outcome(r *Result) (tools, dropped []string) {
	for _, t := range r.Tools {
		tools = append(tools, fmt.Sprintf("%s:%d:%s", t.Name, t.Score, t.Phase))
	}
	for _, d := range r.Dropped {
		dropped = append(dropped, d.Tool+":"+d.Phase)
	}
	return tools, dropped
}

// TestPipelineContracts checks the output contracts of Spec 05 section 3.2
// (relevance, prohibition, conflict freedom, dependency completeness) on
// the six-phase pipeline, through the Dropped entries as well as the
// selected tools.
func TestPipelineContracts(t *testing.T) {
	p := mustLoad(t, contractsRules)
	tests := []struct {
		name        string
		intent      string // default "fix"
		facts       []protocol.Fact
		wantTools   []string // "name:score:phase", in result order
		wantDropped []string // "name:phase", sorted
	}{
		// Contract 1: relevance.
		{name: "no facts select nothing", wantTools: nil},
		{
			name:      "relevant tools with their scores, best first",
			facts:     []protocol.Fact{scoreFact("gamma", 40), scoreFact("alpha", 55)},
			wantTools: []string{"alpha:55:flesh", "gamma:40:flesh"},
		},
		{
			name:      "tools of another intent never appear",
			intent:    "other",
			facts:     []protocol.Fact{scoreFact("gamma", 40), mustFact("alpha")},
			wantTools: []string{"other_tool:100:skeleton"},
		},
		{
			name:      "an undeclared tool is not selected",
			facts:     []protocol.Fact{scoreFact("nonexistent", 90), mustFact("ghost")},
			wantTools: nil,
		},
		{
			name:      "mandatory beats relevant for the same tool",
			facts:     []protocol.Fact{scoreFact("gamma", 30), mustFact("gamma")},
			wantTools: []string{"gamma:100:skeleton"},
		},
		{
			name:      "the best of several scores counts",
			facts:     []protocol.Fact{scoreFact("gamma", 30), scoreFact("gamma", 70), scoreFact("gamma", 50)},
			wantTools: []string{"gamma:70:flesh"},
		},
		{
			name:      "equal scores are ordered by name",
			facts:     []protocol.Fact{scoreFact("gamma", 50), scoreFact("alpha", 50)},
			wantTools: []string{"alpha:50:flesh", "gamma:50:flesh"},
		},

		// Contract 2: prohibition overrides everything.
		{
			name:        "prohibition overrides a mandatory tool",
			facts:       []protocol.Fact{mustFact("gamma"), blockFact("gamma")},
			wantDropped: []string{"gamma:exclusion"},
		},
		{
			name:        "prohibition overrides any score",
			facts:       []protocol.Fact{scoreFact("gamma", 100), scoreFact("alpha", 10), blockFact("gamma")},
			wantTools:   []string{"alpha:10:flesh"},
			wantDropped: []string{"gamma:exclusion"},
		},
		{
			name:        "prohibition overrides mandatory and relevant together",
			facts:       []protocol.Fact{mustFact("gamma"), scoreFact("gamma", 99), blockFact("gamma")},
			wantDropped: []string{"gamma:exclusion"},
		},
		{
			name:      "blocking an unselected tool drops nothing",
			facts:     []protocol.Fact{scoreFact("alpha", 10), blockFact("gamma")},
			wantTools: []string{"alpha:10:flesh"},
		},

		// Contract 3: conflict freedom, deterministic and symmetric.
		{
			name:        "lower score loses (declared direction)",
			facts:       []protocol.Fact{scoreFact("alpha", 30), scoreFact("beta", 70)},
			wantTools:   []string{"beta:70:flesh"},
			wantDropped: []string{"alpha:conflict"},
		},
		{
			name:        "lower score loses (reverse direction)",
			facts:       []protocol.Fact{scoreFact("alpha", 70), scoreFact("beta", 30)},
			wantTools:   []string{"alpha:70:flesh"},
			wantDropped: []string{"beta:conflict"},
		},
		{
			name:        "equal scores: the later name loses via tool_rank",
			facts:       []protocol.Fact{scoreFact("alpha", 50), scoreFact("beta", 50)},
			wantTools:   []string{"alpha:50:flesh"},
			wantDropped: []string{"beta:conflict"},
		},
		{
			name:        "equal mandatory tools: the later name loses",
			facts:       []protocol.Fact{mustFact("beta"), mustFact("alpha")},
			wantTools:   []string{"alpha:100:skeleton"},
			wantDropped: []string{"beta:conflict"},
		},
		{
			name:        "mandatory wins a conflict against a relevant tool",
			facts:       []protocol.Fact{mustFact("beta"), scoreFact("alpha", 99)},
			wantTools:   []string{"beta:100:skeleton"},
			wantDropped: []string{"alpha:conflict"},
		},
		{
			name:        "a prohibited tool cannot knock out its rival",
			facts:       []protocol.Fact{scoreFact("alpha", 30), scoreFact("beta", 70), blockFact("beta")},
			wantTools:   []string{"alpha:30:flesh"},
			wantDropped: []string{"beta:exclusion"},
		},

		// Contract 4: dependency completeness.
		{
			name:      "dependencies are added transitively at score 80",
			facts:     []protocol.Fact{scoreFact("delta", 60)},
			wantTools: []string{"epsilon:80:dependency", "zeta:80:dependency", "delta:60:flesh"},
		},
		{
			name:      "a selected dependency keeps its own score and phase",
			facts:     []protocol.Fact{scoreFact("delta", 60), scoreFact("epsilon", 20)},
			wantTools: []string{"zeta:80:dependency", "delta:60:flesh", "epsilon:20:flesh"},
		},
		{
			name:      "a mandatory dependency keeps score 100",
			facts:     []protocol.Fact{scoreFact("delta", 60), mustFact("zeta")},
			wantTools: []string{"zeta:100:skeleton", "epsilon:80:dependency", "delta:60:flesh"},
		},
		{
			name:        "dependent removed when its dependency is prohibited",
			facts:       []protocol.Fact{scoreFact("epsilon", 60), blockFact("zeta")},
			wantDropped: []string{"epsilon:dependency"},
		},
		{
			name:        "dependent removed when a transitive dependency is prohibited",
			facts:       []protocol.Fact{scoreFact("delta", 60), blockFact("zeta")},
			wantDropped: []string{"delta:dependency"},
		},
		{
			name:        "every dependent up the chain is removed",
			facts:       []protocol.Fact{scoreFact("delta", 60), scoreFact("epsilon", 50), scoreFact("alpha", 10), blockFact("zeta")},
			wantTools:   []string{"alpha:10:flesh"},
			wantDropped: []string{"delta:dependency", "epsilon:dependency"},
		},
		{
			name:        "a prohibited mandatory dependency removes the dependent too",
			facts:       []protocol.Fact{scoreFact("delta", 60), mustFact("epsilon"), blockFact("epsilon")},
			wantDropped: []string{"delta:dependency", "epsilon:exclusion"},
		},
		{
			name:        "dependent removed when its dependency lost a conflict",
			facts:       []protocol.Fact{scoreFact("eta", 50), scoreFact("alpha", 90), scoreFact("beta", 10)},
			wantTools:   []string{"alpha:90:flesh"},
			wantDropped: []string{"beta:conflict", "eta:dependency"},
		},
		{
			name:        "an added dependency does not bring back a conflict",
			facts:       []protocol.Fact{scoreFact("eta", 50), scoreFact("alpha", 90)},
			wantTools:   []string{"alpha:90:flesh"},
			wantDropped: []string{"eta:dependency"},
		},
		{
			name:        "two added dependencies do not conflict",
			facts:       []protocol.Fact{scoreFact("eta", 50), scoreFact("theta", 40)},
			wantDropped: []string{"eta:dependency", "theta:dependency"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			intent := tt.intent
			if intent == "" {
				intent = "fix"
			}
			res, err := p.Evaluate(context.Background(), Request{Intent: intent, Facts: tt.facts, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000})
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			tools, dropped := outcome(res)
			if !reflect.DeepEqual(tools, tt.wantTools) || !reflect.DeepEqual(dropped, tt.wantDropped) {
				t.Fatalf("selected %q dropped %q\nwant     %q dropped %q", tools, dropped, tt.wantTools, tt.wantDropped)
			}
			if intent == "fix" {
				checkContracts(t, res, tt.facts)
			}
		})
	}
}

// checkContracts checks the contracts as properties of any result of the
// contracts domain for intent "fix".
func checkContracts(t *testing.T, res *Result, facts []protocol.Fact) {
	t.Helper()
	blocked := map[string]bool{}
	for _, f := range facts {
		if f.Pred == "block" {
			blocked[f.Args[0].(string)] = true
		}
	}
	selected := map[string]bool{}
	for _, tool := range res.Tools {
		selected[tool.Name] = true
		if blocked[tool.Name] {
			t.Errorf("Contract 2: prohibited tool %s selected", tool.Name)
		}
		if tool.Name == "other_tool" {
			t.Errorf("Contract 1: other_tool selected for fix")
		}
	}
	if selected["alpha"] && selected["beta"] {
		t.Errorf("Contract 3: conflicting alpha and beta both selected")
	}
	requires := map[string]string{"delta": "epsilon", "epsilon": "zeta", "eta": "beta", "theta": "alpha"}
	for tool, dep := range requires {
		if selected[tool] && !selected[dep] {
			t.Errorf("Contract 4: %s selected without its dependency %s", tool, dep)
		}
	}
}

// TestDeterminism runs one request 100 times (Spec 10 section 6.2) and
// requires identical results, order included.
func TestDeterminism(t *testing.T) {
	tests := []struct {
		name   string
		rules  string
		intent string
		facts  []protocol.Fact
	}{
		{
			name:   "contracts domain",
			rules:  contractsRules,
			intent: "fix",
			facts: []protocol.Fact{
				scoreFact("alpha", 50), scoreFact("beta", 50), scoreFact("gamma", 70), scoreFact("delta", 60),
				scoreFact("epsilon", 60), mustFact("zeta"), blockFact("gamma"),
			},
		},
		{name: "browser diagnose_error", rules: browserRules, intent: "diagnose_error", facts: browserFacts()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustLoad(t, tt.rules)
			req := Request{Intent: tt.intent, Facts: tt.facts, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000}
			first, err := p.Evaluate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(first.Tools) < 2 {
				t.Fatalf("the request selects %d tools; a determinism test needs several", len(first.Tools))
			}
			for i := 1; i < 100; i++ {
				res, err := p.Evaluate(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(res, first) {
					t.Fatalf("run %d differs:\n%+v\nfirst:\n%+v", i, res, first)
				}
			}
		})
	}
}

// TestRenderingDeterminism: when rules derive several values for an
// attribute that renders as one (parameter type, description, default,
// action), every run must still pick the same one.
func TestRenderingDeterminism(t *testing.T) {
	p := mustLoad(t, "testdata/ambiguous")
	req := Request{Intent: "pick", EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000}
	seen := map[string]int{}
	for i := 0; i < 100; i++ {
		res, err := p.Evaluate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 1 {
			t.Fatalf("got %d tools, want 1", len(res.Tools))
		}
		seen[fmt.Sprintf("action=%s params=%+v", res.Tools[0].Action, res.Tools[0].Params)]++
	}
	if len(seen) != 1 {
		var variants []string
		for v, c := range seen {
			variants = append(variants, fmt.Sprintf("%3d× %s", c, v))
		}
		t.Fatalf("rendering differs between runs (Contract 6):\n%s", strings.Join(variants, "\n"))
	}
}

// TestConcurrentEvaluations shares one Program between goroutines (run
// with -race): every result equals the sequential one.
func TestConcurrentEvaluations(t *testing.T) {
	p := mustLoad(t, browserRules)
	req := Request{Intent: "diagnose_error", Facts: browserFacts(), EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000}
	want, err := p.Evaluate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	const workers, runs = 4, 10
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < runs; i++ {
				got, err := p.Evaluate(context.Background(), req)
				if err == nil && !reflect.DeepEqual(got, want) {
					err = fmt.Errorf("concurrent result differs:\n%+v\nwant\n%+v", got, want)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
