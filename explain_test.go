package manglecp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

func TestProofHints(t *testing.T) {
	h := newHarness(t, nil, nil)
	req := diagnoseRequest()
	req["options"] = map[string]any{"include_proof_hints": true, "disclosure_preference": "full"}
	req["facts"] = append(diagnoseFacts(), map[string]any{"pred": "interactive_element", "args": []any{"e1", "button", "Go"}})
	var first string
	for i := range 20 {
		resp := h.evaluate("p", req).intentResponse(t)
		raw, _ := json.Marshal(resp.ProofHints)
		if i == 0 {
			first = string(raw)
			ph := resp.ProofHints
			if ph == nil || len(ph.Derivations) != len(resp.MacroTools) {
				t.Fatalf("proof hints %s", raw)
			}
			byID := map[string]protocol.Derivation{}
			for _, d := range ph.Derivations {
				byID[d.MacroID] = d
			}
			chain := byID[tool(t, resp, "diagnose_causal_chain").MacroID]
			if chain.SelectedBy != "skeleton" || chain.Score != 100 || chain.Tree == nil || chain.Tree.Type != "derived" {
				t.Errorf("derivation %s", mustJSON(chain))
			}
			preds := map[string]bool{}
			for _, f := range chain.SupportingFacts {
				preds[f.Pred] = true
			}
			if !preds["console_event"] || !preds["net_response"] || preds["current_url"] {
				t.Errorf("supporting facts %s", mustJSON(chain.SupportingFacts))
			}
			for _, p := range []string{"mandatory_for_intent", "failure_followed_by_error", "recent_console_error"} {
				if !strings.Contains(strings.Join(chain.RuleChain, ","), p) {
					t.Errorf("rule chain %v lacks %s", chain.RuleChain, p)
				}
			}
			if len(ph.UnmatchedFacts) != 0 {
				t.Errorf("unmatched %s (interactive_element is read by automate rules)", mustJSON(ph.UnmatchedFacts))
			}
			scanForLeaks(t, [][]byte{raw})
			for _, bad := range []string{"browser/", ".mg", "confirm_effect"} {
				if strings.Contains(first, bad) {
					t.Errorf("proof hints expose %q", bad)
				}
			}
			continue
		}
		if string(raw) != first {
			t.Fatalf("run %d: proof hints differ", i)
		}
	}
	// Without the option: none.
	plain := diagnoseRequest()
	if r := h.evaluate("q", plain).intentResponse(t); r.ProofHints != nil {
		t.Error("proof hints without include_proof_hints")
	}
}

func TestProofHintsExclusions(t *testing.T) {
	h := newHarness(t, nil, nil)
	resp := h.evaluate("x", map[string]any{
		"intent": map[string]any{"name": "automate"},
		"facts": []any{
			map[string]any{"pred": "current_url", "args": []any{"https://pay"}},
			map[string]any{"pred": "automation_goal", "args": []any{"pay"}},
			map[string]any{"pred": "interactive_element", "args": []any{"card", "payment", "Card"}},
			map[string]any{"pred": "interactive_element", "args": []any{"ok", "button", "Pay"}},
		},
		"options": map[string]any{"include_proof_hints": true},
	}).intentResponse(t)
	if len(resp.MacroTools) != 0 {
		t.Fatalf("prohibited tool returned: %s", mustJSON(resp.MacroTools))
	}
	ex := resp.ProofHints.Excluded
	if len(ex) != 1 || ex[0].Candidate != "plan_automation" || ex[0].ExcludedBy != "exclusion" || strings.Contains(ex[0].Reason, "payment") {
		t.Errorf("excluded %s (the policy's own reason stays private)", mustJSON(ex))
	}
}

func TestRuleCoverage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server bool
		option bool
		want   bool
	}{
		{"off", false, false, false},
		{"per request", false, true, true},
		{"server configuration", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, func(o *manglecp.Options) { o.RuleCoverage = tc.server })
			req := diagnoseRequest()
			req["intent"] = map[string]any{"name": "observe"}
			req["options"] = map[string]any{"x-include_rule_coverage": tc.option}
			resp := h.evaluate("c", req).intentResponse(t)
			rc := resp.Diagnostics.RuleCoverage
			if (rc != nil) != tc.want {
				t.Fatalf("coverage present %v, want %v", rc != nil, tc.want)
			}
			if resp.Diagnostics.RulesFired == 0 {
				t.Error("rules_fired is zero")
			}
			if rc == nil {
				return
			}
			statuses := map[string]int{}
			for _, d := range rc.DormantDetails {
				statuses[d.Status]++
				if d.Status == "dead" && len(d.MissingPredicates) == 0 {
					t.Errorf("dead rule %s without missing predicates", d.Rule)
				}
			}
			if rc.RulesFired != int(resp.Diagnostics.RulesFired) || rc.TotalRules != rc.RulesFired+rc.RulesDormant+rc.RulesInapplicable ||
				statuses["inapplicable"] == 0 || statuses["dead"] == 0 || statuses["partially_alive"] == 0 {
				t.Errorf("coverage %s", mustJSON(rc))
			}
		})
	}
}
