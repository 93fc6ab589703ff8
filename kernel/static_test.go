package kernel

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp/protocol"
)

// mixedRules is a domain whose allowed/1 has a rule reading server facts
// only and a rule reading the request: the first runs once at load
// (kernel/eval/static.go), the second per request, and their facts meet
// in the same predicate.
const mixedRules = `
decl_intent("pick", "Pick the tools of the allowed keys.").
decl_intent_fact("pick", "want", "optional").
decl_predicate("want", "input", "A key the client wants.").
decl_arg("want", 0, "key", "string").

known("a").
allowed(K) :- known(K).
allowed(K) :- want(K).

tool("use_a").
tool_action("use_a", "use").
tool("use_c").
tool_action("use_c", "use").
mandatory_for_intent("pick", "use_a") :- allowed("a").
mandatory_for_intent("pick", "use_c") :- allowed("c").
`

// TestStaticRuleOfDynamicPredicate: a predicate mixing a static rule and a
// request-reading rule. The static rule is evaluated at load and marked
// so, the other is not; a request sees the facts of both (use_a from the
// static rule, use_c from the request's want("c")); rules_fired counts the
// static rule on every request, and rule coverage reports it fired
// whether or not the request rule did.
func TestStaticRuleOfDynamicPredicate(t *testing.T) {
	p, err := Load(Layer{Name: "domain", FS: fstest.MapFS{"mixed.mg": {Data: []byte(mixedRules)}}, Prefix: "domain"})
	if err != nil {
		t.Fatal(err)
	}
	names := p.e.RuleNames()
	index := func(name string) int {
		t.Helper()
		i := slices.Index(names, name)
		if i < 0 {
			t.Fatalf("no rule %s in %v", name, names)
		}
		return i
	}
	static, request := index("allowed#1"), index("allowed#2")
	if !p.e.StaticRule[static] || p.e.StaticRule[request] {
		t.Errorf("static rule marked %v, request rule %v; want true, false", p.e.StaticRule[static], p.e.StaticRule[request])
	}
	dynamic := false
	for _, ns := range p.e.DynStrata {
		for sym := range ns {
			dynamic = dynamic || sym.Symbol == "allowed"
		}
	}
	if !dynamic {
		t.Errorf("allowed/1 (a rule reads the request) is not in a request's strata")
	}
	evaluate := func(facts ...protocol.Fact) *Result {
		t.Helper()
		res, err := p.Evaluate(context.Background(), Request{Intent: "pick", Facts: facts, EvalTime: testEvalTime,
			Caller: "anonymous", Permissions: anyone, MaxFactsCreated: 10_000, Coverage: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	toolNames := func(res *Result) []string {
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	fired := func(res *Result, rule string) bool {
		for _, d := range res.Coverage.Details {
			if d.Rule == rule {
				return false
			}
		}
		return true
	}
	without, with := evaluate(), evaluate(protocol.NewFact("want", "c"))
	if got := toolNames(without); !slices.Equal(got, []string{"use_a"}) {
		t.Errorf("without want: tools %v, want [use_a]", got)
	}
	if got := toolNames(with); !slices.Equal(got, []string{"use_a", "use_c"}) {
		t.Errorf("with want(c): tools %v, want [use_a use_c]", got)
	}
	if !fired(without, "allowed#1") || fired(without, "allowed#2") || !fired(with, "allowed#1") || !fired(with, "allowed#2") {
		t.Errorf("coverage: without want %+v; with want %+v", without.Coverage.Details, with.Coverage.Details)
	}
	// want(c) fires the request rule and use_c's mandatory rule, and the
	// pipeline's rules that the second tool reaches; the static rule
	// counts in both.
	if with.RulesFired <= without.RulesFired || with.FactsDerived <= without.FactsDerived {
		t.Errorf("rules_fired %d -> %d, facts_derived %d -> %d with want(c)", without.RulesFired, with.RulesFired, without.FactsDerived, with.FactsDerived)
	}
}
