package mcpbridge_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// TestToolsShowParametersTheFirstTime: a tool the server condensed (its
// token budget, a low score) is shown with the parameters of its full
// definition the first time the session offers it (issue 36: the first
// answer showed fill_form(...), find_on_page(...) and press_key(...)),
// fetched in one evaluation for all of them; later it is "(as before)",
// or its new signature alone when its parameters changed (a new page's
// fields).
func TestToolsShowParametersTheFirstTime(t *testing.T) {
	fill := tool("fill_form", false)
	fill.InputSchema["properties"] = map[string]any{"Email": map[string]any{"type": "string"}, "submit": map[string]any{"type": "string", "enum": []any{"Next"}}}
	fill.InputSchema["required"] = []any{}
	key := tool("press_key", false)
	key.InputSchema["properties"] = map[string]any{"key": map[string]any{"type": "string", "enum": []any{"Enter", "Tab"}}}
	key.InputSchema["required"] = []any{"key"}
	find := tool("find_on_page", false)
	condense := func(m protocol.MacroTool) protocol.MacroTool {
		m.Safety, m.InputSchema, m.DisclosureLevel, m.Description = nil, nil, protocol.DisclosureCondensed, "Condensed "+m.Name+"."
		return m
	}
	fake := newFake()
	fake.manifest.FactsProfile.Predicates = append(fake.manifest.FactsProfile.Predicates, protocol.PredicateSchema{
		Predicate: "disclosure_upgrade", Arity: 1, ArgTypes: []string{"string"}, ArgNames: []string{"macro_id"}, Direction: protocol.DirectionInput})
	var mu sync.Mutex
	upgrades := 0 // evaluations that asked for upgrades
	evals := 0
	fake.setEvaluate(func(_ context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		up := map[string]bool{}
		for _, f := range req.Facts {
			if f.Pred == "disclosure_upgrade" {
				up[f.Args[0].(string)] = true
			}
		}
		mu.Lock()
		if len(up) > 0 {
			upgrades++
		} else {
			evals++
		}
		fill := fill
		if evals > 1 { // the next page: other fields
			fill.MacroID = "fill_form-0002"
			fill.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"Country": map[string]any{"type": "string"}}}
		}
		mu.Unlock()
		var out []protocol.MacroTool
		for _, m := range []protocol.MacroTool{fill, key, find} {
			if m.Name == "find_on_page" || up[m.MacroID] {
				out = append(out, m) // full
			} else {
				out = append(out, condense(m))
			}
		}
		return selects(out...)(context.Background(), req)
	})
	h := newHarness(t, fake, &mcpbridge.Options{}, hostOptions{})
	first := text(h.call(t, "diagnose", diagnoseArgs))
	for _, want := range []string{
		`fill_form(Email: string, submit: "Next"): Condensed fill_form.`,
		`press_key(key*: "Enter"|"Tab"): Condensed press_key.`,
		`find_on_page(target*: string): The find_on_page tool.`,
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first answer lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "(...)") {
		t.Errorf("first answer shows a tool without its parameters:\n%s", first)
	}
	second := text(h.call(t, "diagnose", diagnoseArgs))
	for _, want := range []string{"\n- fill_form(Country: string)\n", "\n- press_key, find_on_page (as before)"} {
		if !strings.Contains(second, want) {
			t.Errorf("second answer lacks %q:\n%s", want, second)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if upgrades != 2 {
		t.Errorf("%d evaluations asked for upgrades, want 2 (both condensed tools at once, in each answer)", upgrades)
	}
}
