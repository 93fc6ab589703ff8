package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp/kernel/analyse"
	"github.com/manglecp/manglecp/protocol"
)

// wantLoadError is one problem Load must report. File and Line must match
// exactly (Line -1: any line of the file); Message must contain every string
// of Contains.
type wantLoadError struct {
	File     string
	Line     int
	Contains []string
}

// TestLoadErrors loads each rule directory under testdata/load (policy/ and
// domain/, read with os.DirFS) and checks the problems Load reports: each
// must name the file and line an operator has to edit.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string // directory under testdata/load
		want []wantLoadError
	}{
		{name: "valid"},
		{
			name: "syntax_error",
			want: []wantLoadError{{File: "domain/b_broken.mg", Line: 5, Contains: []string{"syntax error"}}},
		},
		{
			name: "undeclared_body",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 6, Contains: []string{"could not find predicate mystery"}}},
		},
		{
			name: "kernel_intent",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 5, Contains: []string{"intent is asserted by the kernel"}}},
		},
		{
			name: "kernel_tool_rank",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 4, Contains: []string{"tool_rank is asserted by the kernel"}}},
		},
		{
			name: "policy_domain_overlap",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 4, Contains: []string{"prohibited", "policy layer", "policy/policy.mg:3", "domain layer"}}},
		},
		{
			// The kernel's pipeline file is blamed; the message names the
			// domain file that has to change.
			name: "domain_defines_pipeline",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 3, Contains: []string{"excluded", "kernel/pipeline/02_exclusion.mg:4"}}},
		},
		{
			name: "intent_fact_undeclared",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 5, Contains: []string{"unknown", "not in the facts profile"}}},
		},
		{
			name: "intent_fact_bad_intent",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 4, Contains: []string{"intent repair is not declared"}}},
		},
		{
			name: "bad_need",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 4, Contains: []string{`need "maybe"`}}},
		},
		{
			name: "bad_arg_type",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 4, Contains: []string{`type "float"`}}},
		},
		{
			name: "arg_gap",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 4, Contains: []string{"sig", "without gaps"}}},
		},
		{
			name: "arg_duplicate",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 4, Contains: []string{"argument 0 of sig declared twice"}}},
		},
		{
			name: "arg_undeclared_predicate",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 2, Contains: []string{"undeclared predicate sig"}}},
		},
		{
			name: "bad_direction",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 2, Contains: []string{`direction "sideways"`}}},
		},
		{
			name: "empty_domain",
			want: []wantLoadError{{File: "domain", Contains: []string{"no .mg files"}}},
		},
		{
			name: "profile_kernel_predicate",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 2, Contains: []string{"intent is asserted by the kernel"}}},
		},
		{
			name: "profile_policy_predicate",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 5, Contains: []string{"prohibited is defined by the policy layer"}}},
		},
		{
			name: "negation_cycle",
			want: []wantLoadError{{File: "domain/domain.mg", Line: -1, Contains: []string{"cannot be stratified"}}},
		},
		{
			name: "aggregation_cycle",
			want: []wantLoadError{{File: "domain/domain.mg", Line: -1, Contains: []string{"cannot be stratified"}}},
		},
		// Patterns that fail every evaluation reaching them (issue 9 item 8).
		{name: "bounded_recursion"},
		{
			name: "string_constant_comparison",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 12, Contains: []string{`comparison with "10"`, "int64"}}},
		},
		{
			name: "float_constant_comparison",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 12, Contains: []string{"comparison with 0.5"}}},
		},
		{
			name: "string_argument_comparison",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 12, Contains: []string{"comparison of T, a string argument of block"}}},
		},
		{
			name: "unbounded_recursion",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 13, Contains: []string{"unbounded recursion", "step depends on step", "fn:plus"}}},
		},
		{
			name: "unbounded_recursion_head_fn",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 13, Contains: []string{"unbounded recursion", "fn:list:cons"}}},
		},
		{
			name: "unbounded_mutual_recursion",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 13, Contains: []string{"unbounded recursion", "pong depends on ping"}}},
		},
		{
			name: "requires_cycle",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 19, Contains: []string{"tool_requires is cyclic", "[a b c]"}}},
		},
		{
			name: "requires_self",
			want: []wantLoadError{{File: "domain/domain.mg", Line: 12, Contains: []string{"tool_requires is cyclic", "[fixer]"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Load(domainLayers(filepath.Join("testdata", "load", tt.name))...)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if p.RuleCount() == 0 {
					t.Fatal("loadedPrograms program has no rules")
				}
				return
			}
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			var les LoadErrors
			if !errors.As(err, &les) {
				t.Fatalf("Load error is %T, want LoadErrors: %v", err, err)
			}
			for _, w := range tt.want {
				match := findLoadError(les, w)
				if match == nil {
					t.Fatalf("no problem mentions %q; got:\n%v", w.Contains, err)
				}
				lineOK := match.Line == w.Line || (w.Line < 0 && match.Line > 0)
				if match.File != w.File || !lineOK {
					t.Errorf("problem %q is at %s:%d, want %s:%d", match.Message, match.File, match.Line, w.File, w.Line)
				}
				if w.Line != 0 && !strings.HasPrefix(match.Error(), w.File+":") {
					t.Errorf("Error() = %q, want it to start with the file name", match.Error())
				}
			}
		})
	}
}

func findLoadError(les LoadErrors, w wantLoadError) *LoadError {
	for _, e := range les {
		ok := true
		for _, s := range w.Contains {
			ok = ok && strings.Contains(e.Message, s)
		}
		if ok {
			return e
		}
	}
	return nil
}

// TestLoadRealRules loads every rule set that ships: the kernel's embedded
// layers on their own and with the browser domain read from disk.
func TestLoadRealRules(t *testing.T) {
	tests := []struct {
		name      string
		layers    []Layer
		externals []External
	}{
		{name: "kernel layers only"},
		{name: "browser domain", layers: domainLayers(browserRules), externals: externals[browserRules]},
		{name: "browser domain without policy", layers: domainLayers(browserRules)[1:], externals: externals[browserRules]},
		{name: "contracts test domain", layers: domainLayers("testdata/contracts")},
		{name: "closure test domain", layers: domainLayers("testdata/closure")},
		{name: "ambiguous test domain", layers: domainLayers("testdata/ambiguous")},
		{name: "rulesfired plain test domain", layers: domainLayers("testdata/rulesfired/plain")},
		{name: "rulesfired timed test domain", layers: domainLayers("testdata/rulesfired/timed")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadWithExternals(tt.externals, tt.layers...)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if p.RuleCount() == 0 {
				t.Error("RuleCount() = 0")
			}
			if p.BaseFactCount() == 0 {
				t.Error("BaseFactCount() = 0; the pipeline has phase_name facts")
			}
		})
	}
}

// TestBrowserDeclarations checks what the manifest advertises for the
// browser domain: sorted intents, profile, tools and actions, against a
// golden file.
func TestBrowserDeclarations(t *testing.T) {
	p := mustLoad(t, browserRules)
	intents := p.Intents()
	profile := p.FactsProfile()
	tools := p.Tools()
	actions := p.ActionNames()

	if !sort.SliceIsSorted(intents, func(i, j int) bool { return intents[i].Name < intents[j].Name }) {
		t.Errorf("Intents() not sorted: %v", intents)
	}
	for _, in := range intents {
		if !sort.StringsAreSorted(in.RequiredFacts) || !sort.StringsAreSorted(in.OptionalFacts) {
			t.Errorf("intent %s facts not sorted: %v %v", in.Name, in.RequiredFacts, in.OptionalFacts)
		}
	}
	if !sort.SliceIsSorted(profile.Predicates, func(i, j int) bool { return profile.Predicates[i].Predicate < profile.Predicates[j].Predicate }) {
		t.Errorf("FactsProfile().Predicates not sorted")
	}
	if !sort.StringsAreSorted(tools) || !sort.StringsAreSorted(actions) {
		t.Errorf("Tools() or ActionNames() not sorted: %v %v", tools, actions)
	}

	// Spot checks that do not depend on the golden file.
	wantTools := []string{"act_on_element", "answer_dialog", "click_element", "close_session", "close_tab", "diagnose_causal_chain", "fill_field", "fill_form",
		"find_on_page", "hover", "inspect_console_errors", "navigate", "open_page", "plan_automation", "press_key", "run_script",
		"screenshot_page", "summarize_observation", "switch_tab", "take_screenshot", "upload_file", "wait_for", "write_diagnosis_report"}
	if strings.Join(tools, ",") != strings.Join(wantTools, ",") {
		t.Errorf("Tools() = %v, want %v", tools, wantTools)
	}
	wantActions := []string{"automation_plan", "browser_click", "browser_close", "browser_close_tab", "browser_dialog", "browser_fill",
		"browser_fill_form", "browser_find", "browser_hover", "browser_interact", "browser_key", "browser_navigate", "browser_open", "browser_screenshot",
		"browser_script", "browser_snapshot_png", "browser_switch_tab", "browser_upload", "browser_wait", "causal_chain",
		"console_errors", "observe_summary", "write_report"}
	if strings.Join(actions, ",") != strings.Join(wantActions, ",") {
		t.Errorf("ActionNames() = %v, want %v", actions, wantActions)
	}
	var ce *protocol.PredicateSchema
	for i := range profile.Predicates {
		if profile.Predicates[i].Predicate == "console_event" {
			ce = &profile.Predicates[i]
		}
	}
	if ce == nil || ce.Arity != 4 || strings.Join(ce.ArgNames, ",") != "session_id,level,message,timestamp" ||
		strings.Join(ce.ArgTypes, ",") != "string,string,string,number" || ce.Direction != protocol.DirectionBoth {
		t.Errorf("console_event schema = %+v", ce)
	}

	// The accessors return copies: changing them does not change the program.
	tools[0] = "changed"
	intents[0].Name = "changed"
	profile.Predicates[0].Predicate = "changed"
	if p.Tools()[0] == "changed" || p.Intents()[0].Name == "changed" || p.FactsProfile().Predicates[0].Predicate == "changed" {
		t.Error("an accessor returned the program's own slice")
	}

	checkGolden(t, "browser_declarations.json", map[string]any{
		"intents":       p.Intents(),
		"facts_profile": p.FactsProfile(),
		"tools":         p.Tools(),
		"action_names":  p.ActionNames(),
		"rule_count":    p.RuleCount(),
	})
}

// TestActionRefs checks that the actions tool_action facts name carry the
// file and line of their first fact, from a loaded program and from a
// parse-only read (which needs no external predicates).
func TestActionRefs(t *testing.T) {
	p := mustLoad(t, browserRules)
	read, err := analyse.Actions(domainLayers(browserRules)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		refs []ActionRef
	}{
		{"Program.ActionRefs", p.ActionRefs()},
		{"Actions", read},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := make([]string, len(tc.refs))
			for i, r := range tc.refs {
				names[i] = r.Name
				if !strings.HasPrefix(r.File, "domain/") || r.Line == 0 || r.Tool == "" {
					t.Errorf("%s at %s:%d (tool %q), want a line of a domain/ file", r.Name, r.File, r.Line, r.Tool)
				}
			}
			if got, want := strings.Join(names, ","), strings.Join(p.ActionNames(), ","); got != want {
				t.Errorf("names = %s, want %s", got, want)
			}
		})
	}
	for _, r := range read {
		src, _ := os.ReadFile(filepath.Join(browserRules, r.File))
		lines := strings.Split(string(src), "\n")
		if r.Line > len(lines) || !strings.HasPrefix(lines[r.Line-1], fmt.Sprintf("tool_action(%q, %q)", r.Tool, r.Name)) {
			t.Errorf("%s:%d is not the tool_action fact of %s", r.File, r.Line, r.Name)
		}
	}
	if _, err := analyse.Actions(Layer{Name: "domain", FS: fstest.MapFS{"x.mg": {Data: []byte("tool_action(\"t\", \n")}}, Prefix: "domain"}); err == nil {
		t.Error("Actions of a file with a syntax error: no error")
	}
}
