package render

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/internal/macros"
	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// quadraticFitBudget is FitBudget as it was before issue 30: it summed
// every tool's cost again before each step (O(n^2) measurements). It is
// kept as the oracle the linear version must agree with, and as the
// "before" of BenchmarkFitBudget.
func quadraticFitBudget(shown []*Tool, budget int64, cost func(*Tool) int64) *protocol.Warning {
	total := func() int64 {
		n := int64(0)
		for _, st := range shown {
			n += cost(st)
		}
		return n
	}
	for pass := 0; pass < 2 && total() > budget; pass++ {
		for _, upgradedPass := range []bool{false, true} {
			for i := len(shown) - 1; i >= 0 && total() > budget; i-- {
				st := shown[i]
				if st.Upgraded != upgradedPass {
					continue
				}
				switch st.Level {
				case protocol.DisclosureFull:
					st.Level = protocol.DisclosureCondensed
				case protocol.DisclosureCondensed:
					st.Level = protocol.DisclosureMinimal
				}
			}
		}
	}
	for i := len(shown) - 1; i >= 0 && total() > budget; i-- {
		shown[i].ByRef = true
	}
	for i := len(shown) - 1; i >= 0 && total() > budget; i-- {
		st := shown[i]
		for st.Resources = len(st.Def.Tool.Resources) - 1; st.Resources >= 0 && total() > budget; st.Resources-- {
		}
		st.Resources = max(st.Resources, 0)
	}
	if t := total(); t > budget {
		return &protocol.Warning{Code: protocol.WarnTokenBudgetExceeded,
			Message: fmt.Sprintf("even at the lowest disclosure the macro-tools need about %d tokens, over max_tokens_budget %d", t, budget),
			Details: map[string]any{"budget": budget, "estimated": t}}
	}
	return nil
}

// budgetTools returns n selected tools of random levels, upgrades and
// context resources (no skills: they need a program).
func budgetTools(rng *rand.Rand, n int) []*Tool {
	levels := []string{protocol.DisclosureFull, protocol.DisclosureCondensed, protocol.DisclosureMinimal}
	out := make([]*Tool, n)
	for i := range out {
		t := kernel.Tool{
			Name:         fmt.Sprintf("tool_%d", i),
			Description:  strings.Repeat("does a thing. ", 1+rng.IntN(20)),
			Instructions: strings.Repeat("mind the step. ", rng.IntN(10)),
			Score:        int64(n - i),
		}
		for r := range rng.IntN(4) {
			t.Resources = append(t.Resources, kernel.Resource{URI: fmt.Sprintf("file:///docs/%d/%d.md", i, r), Relevance: "high", Priority: int64(10 - r)})
		}
		schema := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
		out[i] = &Tool{
			Def:       &macros.Def{ID: fmt.Sprintf("m_%04d", i), Tool: t, Schema: schema},
			Level:     levels[rng.IntN(len(levels))],
			Upgraded:  rng.IntN(4) == 0,
			Resources: -1,
		}
	}
	return out
}

// jsonCost is the server's estimate (Tool.Tokens) at 4 characters
// per token.
func jsonCost(st *Tool) int64 {
	raw, _ := json.Marshal(st.Render(nil))
	return int64(len(raw)+3) / 4
}

func cloneShown(in []*Tool) []*Tool {
	out := make([]*Tool, len(in))
	for i, st := range in {
		c := *st
		out[i] = &c
	}
	return out
}

func totalCost(shown []*Tool) int64 {
	n := int64(0)
	for _, st := range shown {
		n += jsonCost(st)
	}
	return n
}

// TestFitBudgetUnchanged (issue 30): the linear FitBudget leaves every
// tool at the level, skill delivery and resources the quadratic one did,
// with the same warning, for budgets from 0 to over the total.
func TestFitBudgetUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	for c := range 300 {
		tools := budgetTools(rng, rng.IntN(40))
		full := totalCost(tools)
		budget := rng.Int64N(full + 2)
		if c%10 == 0 {
			budget = 0
		}
		want, got := cloneShown(tools), cloneShown(tools)
		ww := quadraticFitBudget(want, budget, jsonCost)
		gw := FitBudget(got, budget, jsonCost)
		if !reflect.DeepEqual(ww, gw) {
			t.Fatalf("case %d (%d tools, budget %d of %d): warning %+v, want %+v", c, len(tools), budget, full, gw, ww)
		}
		for i := range want {
			w, g := want[i], got[i]
			if w.Level != g.Level || w.ByRef != g.ByRef || w.Resources != g.Resources {
				t.Fatalf("case %d (%d tools, budget %d of %d), tool %d: level %s byRef %v resources %d, want %s %v %d",
					c, len(tools), budget, full, i, g.Level, g.ByRef, g.Resources, w.Level, w.ByRef, w.Resources)
			}
		}
	}
}

// TestFitBudgetLinear (issue 30): fitting 256 tools into a budget none of
// them meets measures each tool a bounded number of times (once, and once
// after each step that changed it), where the version before measured
// every tool before every step.
func TestFitBudgetLinear(t *testing.T) {
	const n = 256
	tools := budgetTools(rand.New(rand.NewPCG(30, 2)), n)
	// At most: once at first, two demotions, skills by reference, each
	// resource dropped (at most 3) and the last one: 8 per tool.
	const bound = 8 * n
	for _, tc := range []struct {
		name string
		fit  func([]*Tool, int64, func(*Tool) int64) *protocol.Warning
		over bool
	}{
		{"linear", FitBudget, false},
		{"quadratic (before issue 30)", quadraticFitBudget, true},
	} {
		calls := 0
		count := func(st *Tool) int64 { calls++; return jsonCost(st) }
		if w := tc.fit(cloneShown(tools), 0, count); w == nil {
			t.Fatalf("%s: budget 0 met", tc.name)
		}
		if over := calls > bound; over != tc.over {
			t.Errorf("%s: %d measurements for %d tools (bound %d)", tc.name, calls, n, bound)
		}
	}
}

// BenchmarkFitBudget measures fitting n tools into a third of their
// cost, before (quadratic) and after (linear) issue 30.
func BenchmarkFitBudget(b *testing.B) {
	for _, n := range []int{10, 100, 256} {
		tools := budgetTools(rand.New(rand.NewPCG(30, 3)), n)
		budget := totalCost(tools) / 3
		for _, v := range []struct {
			name string
			fit  func([]*Tool, int64, func(*Tool) int64) *protocol.Warning
		}{{"before", quadraticFitBudget}, {"after", FitBudget}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, v.name), func(b *testing.B) {
				for b.Loop() {
					v.fit(cloneShown(tools), budget, jsonCost)
				}
			})
		}
	}
}
