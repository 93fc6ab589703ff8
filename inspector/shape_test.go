package inspector

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; run go test ./inspector -update and review the diff\ngot:\n%s", name, got)
	}
}

func readResponse(t *testing.T) *protocol.IntentResponse {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "diagnose_response.json"))
	if err != nil {
		t.Fatal(err)
	}
	var resp protocol.IntentResponse
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&resp); err != nil {
		t.Fatal(err)
	}
	return &resp
}

// TestShapeGolden: the page's view of a real intent response (the
// README's evaluation, with proof hints and rule coverage) is stable.
func TestShapeGolden(t *testing.T) {
	resp := readResponse(t)
	view := map[string]any{
		"groups":   toolGroups(resp),
		"proofs":   proofViews(resp),
		"coverage": coverageView(resp),
	}
	got, err := json.MarshalIndent(view, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "diagnose_view.golden.json", append(got, '\n'))
}

func TestPredicateForms(t *testing.T) {
	m := &protocol.Manifest{
		Intents: []protocol.IntentDecl{{Name: "go", RequiredFacts: []string{"b"}, OptionalFacts: []string{"a"}}},
		FactsProfile: protocol.FactsProfile{Predicates: []protocol.PredicateSchema{
			{Predicate: "b", Arity: 2, ArgTypes: []string{"number"}, ArgNames: []string{"n"}, Temporal: true},
			{Predicate: "a", Arity: 1, Direction: protocol.DirectionOutput},
		}},
	}
	got := predicateForms(m)
	want := []PredicateForm{
		{Predicate: "a", Direction: "output", Args: []ArgField{{"arg1", "any"}}, Input: false, OptionalFor: []string{"go"}},
		{Predicate: "b", Direction: "input", Temporal: true, Args: []ArgField{{"n", "number"}, {"arg2", "any"}}, Input: true, RequiredBy: []string{"go"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("predicateForms:\n got %+v\nwant %+v", got, want)
	}
	if predicateForms(nil) != nil {
		t.Error("nil manifest")
	}
}

func TestFormFields(t *testing.T) {
	schema := map[string]any{
		"type":     "object",
		"required": []any{"id", "mode"},
		"properties": map[string]any{
			"id":      map[string]any{"type": "string", "enum": []any{"r1", "r2"}, "description": "which"},
			"mode":    map[string]any{"const": "fast"},
			"verbose": map[string]any{"type": "boolean", "default": true},
			"count":   map[string]any{"type": "integer"},
			"ratio":   map[string]any{"type": "number"},
			"label":   map[string]any{"type": []any{"null", "string"}},
			"opts":    map[string]any{"type": "object"},
			"any":     map[string]any{},
		},
	}
	got := formFields(schema)
	var names, widgets []string
	for _, f := range got {
		names = append(names, f.Name)
		widgets = append(widgets, f.Widget)
	}
	wantNames := []string{"id", "mode", "any", "count", "label", "opts", "ratio", "verbose"}
	wantWidgets := []string{"select", "select", "json", "number", "text", "json", "number", "checkbox"}
	if !reflect.DeepEqual(names, wantNames) || !reflect.DeepEqual(widgets, wantWidgets) {
		t.Errorf("fields %v %v, want %v %v", names, widgets, wantNames, wantWidgets)
	}
	if !got[0].Required || got[0].Description != "which" || got[2].Required {
		t.Errorf("required/description: %+v", got[:3])
	}
	if got[7].Default != true {
		t.Errorf("default: %+v", got[7])
	}
	if f := formFields(nil); len(f) != 0 {
		t.Errorf("nil schema gives %v", f)
	}
}

func TestToolGroups(t *testing.T) {
	resp := &protocol.IntentResponse{
		MacroTools: []protocol.MacroTool{
			{MacroID: "m1", Name: "a", DisclosureLevel: "minimal"},
			{MacroID: "m2", Name: "b", DisclosureLevel: "full", Safety: &protocol.Safety{RequiresUserConfirmation: true}},
			{MacroID: "m3", Name: "c", DisclosureLevel: "x-custom"},
			{MacroID: "m4", Name: "d", DisclosureLevel: "condensed"},
			{MacroID: "m5", Name: "e", DisclosureLevel: "full"},
		},
		ProofHints: &protocol.ProofHints{Derivations: []protocol.Derivation{{MacroID: "m5"}}},
	}
	got := toolGroups(resp)
	var levels []string
	for _, g := range got {
		levels = append(levels, g.Level)
	}
	if !reflect.DeepEqual(levels, []string{"full", "condensed", "minimal", "x-custom"}) {
		t.Fatalf("levels %v", levels)
	}
	full := got[0].Cards
	if len(full) != 2 || full[0].Tool.Name != "b" || !full[0].NeedsConfirmation || full[0].HasProof || !full[1].HasProof {
		t.Errorf("full group: %+v", full)
	}
}

func TestProofView(t *testing.T) {
	shared := func() *protocol.ProofNode {
		return &protocol.ProofNode{Fact: `r("x")`, Type: "derived", Children: []*protocol.ProofNode{{Fact: `s("x")`, Type: "session"}}}
	}
	d := protocol.Derivation{
		MacroID: "m1", SelectedBy: "skeleton", Score: 9, RuleChain: []string{"top", "r"},
		Tree: &protocol.ProofNode{Fact: `top(1)`, Type: "derived", Children: []*protocol.ProofNode{
			shared(), shared(),
			{Fact: `!gone("x")`, Type: "absent"},
			{Fact: `phase(1)`, Type: "server"},
		}},
	}
	v := proofView(d, "tool")
	want := TreeStats{Nodes: 6, Rules: 3, Facts: 2, Absent: 1, Shared: 1, Depth: 3}
	if v.Stats != want {
		t.Errorf("stats %+v, want %+v", v.Stats, want)
	}
	kids := v.Root.Children
	if v.Root.Kind != "rule" || v.Root.Pred != "top" || len(kids) != 4 {
		t.Fatalf("root %+v", v.Root)
	}
	if kids[0].Ref != 0 || len(kids[0].Children) != 1 || kids[1].Ref != kids[0].ID || kids[1].Children != nil {
		t.Errorf("shared subtree: first %+v, second %+v", kids[0], kids[1])
	}
	if kids[2].Kind != "absent" || kids[2].Pred != "gone" || kids[3].Kind != "fact" || kids[3].Type != "server" {
		t.Errorf("leaves %+v %+v", kids[2], kids[3])
	}
	if v.Synthesized || v.Truncated {
		t.Errorf("flags %+v", v)
	}
}

func TestProofViewWithoutTree(t *testing.T) {
	d := protocol.Derivation{
		MacroID: "m1", SelectedBy: "flesh", RuleChain: []string{"final_selected", "proposed"},
		SupportingFacts: []protocol.Fact{protocol.NewFact("net_response", "s1", "r42", json.Number("404"))},
	}
	v := proofView(d, "t")
	if !v.Synthesized {
		t.Fatal("not marked synthesized")
	}
	n := v.Root
	var path []string
	for n != nil {
		path = append(path, n.Kind+":"+n.Pred)
		if len(n.Children) == 0 {
			break
		}
		n = n.Children[0]
	}
	want := []string{"rule:flesh", "rule:final_selected", "rule:proposed", "fact:net_response"}
	if !reflect.DeepEqual(path, want) {
		t.Errorf("path %v, want %v", path, want)
	}
	if n.Fact != `net_response("s1","r42",404)` || n.Type != "session" {
		t.Errorf("leaf %+v", n)
	}
}

func TestProofViewTruncated(t *testing.T) {
	root := &protocol.ProofNode{Fact: "n(0)", Type: "derived"}
	cur := root
	for i := 1; i < maxProofNodes+50; i++ {
		c := &protocol.ProofNode{Fact: "n(" + strings.Repeat("i", i%7) + ")" + string(rune('a'+i%26)) + string(rune(i)), Type: "derived"}
		cur.Children = []*protocol.ProofNode{c}
		cur = c
	}
	v := proofView(protocol.Derivation{MacroID: "m", Tree: root}, "t")
	if !v.Truncated || v.Stats.Nodes != maxProofNodes {
		t.Errorf("truncated %v with %d nodes", v.Truncated, v.Stats.Nodes)
	}
}

func TestCoverageView(t *testing.T) {
	resp := &protocol.IntentResponse{
		Diagnostics: &protocol.Diagnostics{RuleCoverage: &protocol.RuleCoverage{
			TotalRules: 10, RulesFired: 6, RulesDormant: 3, RulesInapplicable: 1,
			DormantDetails: []protocol.RuleStatus{
				{Rule: "b#2", Status: "dead", MissingPredicates: []string{"x"}},
				{Rule: "a", Status: "partially_alive"},
				{Rule: "b#1", Status: "dead"},
			},
		}},
		ProofHints: &protocol.ProofHints{Derivations: []protocol.Derivation{{Tree: &protocol.ProofNode{
			Fact: "b(1)", Type: "derived", Children: []*protocol.ProofNode{
				{Fact: "c(1)", Type: "derived", Children: []*protocol.ProofNode{{Fact: "s(1)", Type: "session"}}},
				{Fact: "d(1)", Type: "derived"}, // a derived leaf proves no rule here
			}}}}},
	}
	v := coverageView(resp)
	if v.FiredPercent != 60 || v.FiredUnnamed != 4 {
		t.Errorf("percent %d unnamed %d", v.FiredPercent, v.FiredUnnamed)
	}
	var rows []string
	for _, r := range v.Rows {
		var cells []string
		for _, c := range r.Cells {
			cells = append(cells, c.Rule+"="+c.Status)
		}
		rows = append(rows, r.Head+": "+strings.Join(cells, " "))
	}
	want := []string{"a: a=partially_alive", "b: b#2=dead b#1=dead b=fired", "c: c=fired"}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows\n got %q\nwant %q", rows, want)
	}
	if coverageView(&protocol.IntentResponse{}) != nil {
		t.Error("coverage without diagnostics")
	}
}

func TestPredOf(t *testing.T) {
	for in, want := range map[string]string{
		`final_selected("a",1)`: "final_selected",
		`!excluded("a")`:        "excluded",
		`plain`:                 "plain",
		` spaced ( 1 )`:         "spaced",
	} {
		if got := predOf(in); got != want {
			t.Errorf("predOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorViewShape(t *testing.T) {
	v := errorView(protocol.Errorf(protocol.CodeTooManyFacts, "too many"), 0, "c7", 2, false)
	if v.Status != 400 || v.Registry == nil || v.Registry.Category != "fact_validation" || *v.Envelope.ID != "c7" || v.Envelope.Type != protocol.TypeError {
		t.Errorf("%+v", v)
	}
	custom := errorView(&protocol.Error{Code: "x-domain_thing", Message: "m"}, 0, "", 0, false)
	if custom.Registry != nil || custom.Status != 500 || custom.Envelope.ID != nil {
		t.Errorf("custom code: %+v", custom)
	}
}
