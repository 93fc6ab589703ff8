package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestEvaluateBrowser evaluates the browser domain's intents and compares
// every rendered attribute with golden files (go test -update rewrites
// them).
func TestEvaluateBrowser(t *testing.T) {
	p := mustLoad(t, browserRules)
	automate := func(elements ...protocol.Fact) []protocol.Fact {
		return append([]protocol.Fact{
			protocol.NewFact("current_url", "https://shop.example.com/checkout"),
			protocol.NewFact("automation_goal", "submit the form"),
		}, elements...)
	}
	tests := []struct {
		name      string
		intent    string
		facts     []protocol.Fact
		wantTools []string // names in result order; the golden file has the rest
	}{
		{
			name:      "diagnose_error",
			intent:    "diagnose_error",
			facts:     browserFacts(),
			wantTools: []string{"diagnose_causal_chain", "inspect_console_errors", "write_diagnosis_report"},
		},
		{
			name:      "diagnose_error_no_failure",
			intent:    "diagnose_error",
			facts:     browserFacts()[:5], // r42 and its 404 left out
			wantTools: []string{"inspect_console_errors"},
		},
		{
			name:      "observe",
			intent:    "observe",
			facts:     browserFacts(),
			wantTools: []string{"summarize_observation", "inspect_console_errors"},
		},
		{
			name:   "automate",
			intent: "automate",
			facts: automate(
				protocol.NewFact("interactive_element", "btn-1", "button", "Save"),
				protocol.NewFact("interactive_element", "in-2", "input", "Name"),
			),
			wantTools: []string{"plan_automation"},
		},
		{
			name:   "automate_payment_page",
			intent: "automate",
			facts: automate(
				protocol.NewFact("interactive_element", "btn-1", "button", "Save"),
				protocol.NewFact("interactive_element", "card", "payment", "Card number"),
			),
			wantTools: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := p.Evaluate(context.Background(), Request{Intent: tt.intent, Facts: tt.facts, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantTools, ",") {
				t.Errorf("tools = %v, want %v", names, tt.wantTools)
			}
			if res.Work <= 0 {
				t.Errorf("Work = %d, want the work spent", res.Work)
			}
			checkGolden(t, "browser_"+tt.name+".json", res)
		})
	}
}

// TestEvaluateStatistics checks the diagnostics of Spec 05 section 4.4.
func TestEvaluateStatistics(t *testing.T) {
	tests := []struct {
		name   string
		rules  string
		intent string
		params map[string]any
		facts  []protocol.Fact
	}{
		{name: "browser", rules: browserRules, intent: "diagnose_error", facts: browserFacts()},
		{
			name: "browser with params", rules: browserRules, intent: "diagnose_error", facts: browserFacts(),
			params: map[string]any{"severity": "critical", "limit": jn(3)},
		},
		{name: "contracts", rules: contractsRules, intent: "fix", facts: []protocol.Fact{scoreFact("delta", 60), scoreFact("alpha", 30), scoreFact("beta", 70)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustLoad(t, tt.rules)
			// The store at evaluation start holds the server facts and the
			// kernel's request facts (intent/1, ...), whatever the client
			// sends; each parameter and each client fact adds one.
			empty, err := p.Evaluate(context.Background(), Request{Intent: tt.intent, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000})
			if err != nil {
				t.Fatal(err)
			}
			if empty.FactsEvaluated <= int64(p.BaseFactCount()) {
				t.Errorf("FactsEvaluated without client facts = %d, want more than the %d base facts (intent/1 at least)", empty.FactsEvaluated, p.BaseFactCount())
			}
			res, err := p.Evaluate(context.Background(), Request{Intent: tt.intent, Params: tt.params, Facts: tt.facts, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000})
			if err != nil {
				t.Fatal(err)
			}
			want := empty.FactsEvaluated + int64(len(tt.params)+len(tt.facts))
			if res.FactsEvaluated != want {
				t.Errorf("FactsEvaluated = %d, want %d (%d without client input + params %d + facts %d)",
					res.FactsEvaluated, want, empty.FactsEvaluated, len(tt.params), len(tt.facts))
			}
			if res.FactsDerived <= 0 {
				t.Errorf("FactsDerived = %d, want > 0", res.FactsDerived)
			}
			if res.RulesFired <= 0 || res.RulesFired > int64(p.RuleCount()) {
				t.Errorf("RulesFired = %d, want 1..RuleCount() = %d", res.RulesFired, p.RuleCount())
			}
			if res.PhasesCompleted != 6 {
				t.Errorf("PhasesCompleted = %d, want 6", res.PhasesCompleted)
			}
		})
	}
}

// TestEvaluateDuplicateFacts: duplicate client facts are one fact.
func TestEvaluateDuplicateFacts(t *testing.T) {
	p := mustLoad(t, contractsRules)
	once, err := p.Evaluate(context.Background(), Request{Intent: "fix", Facts: []protocol.Fact{scoreFact("gamma", 10)}, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000})
	if err != nil {
		t.Fatal(err)
	}
	twice, err := p.Evaluate(context.Background(), Request{Intent: "fix", Facts: []protocol.Fact{scoreFact("gamma", 10), scoreFact("gamma", 10)}, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if once.FactsEvaluated != twice.FactsEvaluated || once.FactsDerived != twice.FactsDerived {
		t.Errorf("duplicate fact counted: %d/%d vs %d/%d", once.FactsEvaluated, once.FactsDerived, twice.FactsEvaluated, twice.FactsDerived)
	}
}

// TestEvaluateFreshStore: nothing a request asserts or derives leaks into
// the next request (Spec 05 section 3.1, step 2).
func TestEvaluateFreshStore(t *testing.T) {
	p := mustLoad(t, contractsRules)
	base := p.BaseFactCount()
	if _, err := p.Evaluate(context.Background(), Request{Intent: "fix", Facts: []protocol.Fact{blockFact("gamma"), scoreFact("gamma", 90)}, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Evaluate(context.Background(), Request{Intent: "fix", Facts: []protocol.Fact{scoreFact("gamma", 90)}, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if tools, _ := outcome(res); strings.Join(tools, ",") != "gamma:90:flesh" {
		t.Errorf("second request selected %v; the first request's block leaked", tools)
	}
	if p.BaseFactCount() != base {
		t.Errorf("BaseFactCount changed from %d to %d", base, p.BaseFactCount())
	}
}

// TestEvaluateInvalidFact: a fact that has no atom (not validated first)
// is invalid_facts, not a crash.
func TestEvaluateInvalidFact(t *testing.T) {
	p := mustLoad(t, contractsRules)
	_, err := p.Evaluate(context.Background(), Request{Intent: "fix", Facts: []protocol.Fact{scoreFact("gamma", 1), protocol.NewFact("score", nil, jn(1))}, EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10000})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidFacts {
		t.Fatalf("err = %v, want invalid_facts", err)
	}
	if !strings.Contains(pe.Message, "fact 1") {
		t.Errorf("message %q does not name fact 1", pe.Message)
	}
}

// ExampleProgram_Evaluate loads a domain from disk and selects tools.
func ExampleProgram_Evaluate() {
	p, err := Load(
		Layer{Name: "policy", FS: os.DirFS("testdata/contracts/policy")},
		Layer{Name: "domain", FS: os.DirFS("testdata/contracts/domain")},
	)
	if err != nil {
		panic(err)
	}
	res, err := p.Evaluate(context.Background(), Request{
		Intent: "fix",
		Facts: []protocol.Fact{
			protocol.NewFact("score", "delta", jn(60)),
			protocol.NewFact("must", "gamma"),
			protocol.NewFact("block", "gamma"),
		},
		EvalTime:        testEvalTime,
		MaxFactsCreated: 1000,
	})
	if err != nil {
		panic(err)
	}
	for _, t := range res.Tools {
		fmt.Println(t.Name, t.Score, t.Phase)
	}
	for _, d := range res.Dropped {
		fmt.Println("dropped", d.Tool, "in", d.Phase)
	}
	// Output:
	// epsilon 80 dependency
	// zeta 80 dependency
	// delta 60 flesh
	// dropped gamma in exclusion
}

// TestRulesFiredTemporal: a rule whose body reads a temporal predicate
// counts as fired like its plain twin, in RulesFired and in Coverage.
func TestRulesFiredTemporal(t *testing.T) {
	plain := mustLoad(t, "testdata/rulesfired/plain")
	timed := mustLoad(t, "testdata/rulesfired/timed")
	if plain.RuleCount() != timed.RuleCount() {
		t.Fatalf("RuleCount: plain %d, timed %d", plain.RuleCount(), timed.RuleCount())
	}
	for _, coverage := range []bool{false, true} {
		t.Run(fmt.Sprintf("coverage=%v", coverage), func(t *testing.T) {
			req := Request{Intent: "watch", Facts: []protocol.Fact{protocol.NewFact("ping", "a")}, EvalTime: testEvalTime, MaxFactsCreated: 1000, Coverage: coverage}
			want, err := plain.Evaluate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := timed.Evaluate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if tools, _ := outcome(got); strings.Join(tools, ",") != "watcher:100:skeleton" {
				t.Fatalf("temporal variant selected %v", tools)
			}
			if got.RulesFired != want.RulesFired {
				t.Fatalf("RulesFired = %d with a temporal premise, %d without", got.RulesFired, want.RulesFired)
			}
			if coverage && !reflect.DeepEqual(got.Coverage, want.Coverage) {
				t.Errorf("Coverage differs:\ntimed %+v\nplain %+v", got.Coverage, want.Coverage)
			}
		})
	}
}

// TestIntentPermissions: the browser policy lets a caller use an intent
// only with permission "*" or "intent:<name>"; otherwise the result is
// IntentDenied with no tools.
func TestIntentPermissions(t *testing.T) {
	p := mustLoad(t, browserRules)
	tests := []struct {
		name        string
		permissions []string
		wantDenied  bool
	}{
		{name: "everything", permissions: []string{"*"}},
		{name: "this intent", permissions: []string{"intent:diagnose_error"}},
		{name: "this intent among others", permissions: []string{"intent:observe", "intent:diagnose_error"}},
		{name: "another intent", permissions: []string{"intent:observe"}, wantDenied: true},
		{name: "no permission", permissions: nil, wantDenied: true},
		{name: "a prefix is not a match", permissions: []string{"intent:diagnose"}, wantDenied: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := p.Evaluate(context.Background(), Request{Intent: "diagnose_error", Facts: browserFacts(), EvalTime: testEvalTime,
				Caller: "someone", Permissions: tt.permissions, MaxFactsCreated: 10000})
			if err != nil {
				t.Fatal(err)
			}
			if res.IntentDenied != tt.wantDenied {
				t.Fatalf("IntentDenied = %v, want %v", res.IntentDenied, tt.wantDenied)
			}
			if tt.wantDenied && len(res.Tools) > 0 {
				t.Errorf("denied intent returned tools %v", res.Tools)
			}
			if !tt.wantDenied && len(res.Tools) == 0 {
				t.Error("permitted intent returned no tools")
			}
		})
	}
}
