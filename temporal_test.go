package manglecp_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// TestFiveMinuteWindow is the example of Spec 03 section 4.6 on the
// default domain: a console error at 14:30 makes diagnose_error return its
// tools at 14:34, not at 14:36, and the tools expire at 14:35.
func TestFiveMinuteWindow(t *testing.T) {
	h := newHarness(t, nil, nil)
	for _, tc := range []struct {
		name     string
		t        any // the error's "t"; nil = no annotation (always true)
		evalTime string
		tools    bool
		expires  string
	}{
		{"4 minutes before eval_time", map[string]any{"at": "2026-02-19T14:30:00Z"}, "2026-02-19T14:34:00Z", true, "2026-02-19T14:35:00Z"},
		{"6 minutes before eval_time", map[string]any{"at": "2026-02-19T14:30:00Z"}, "2026-02-19T14:36:00Z", false, ""},
		{"exactly 5 minutes (inclusive)", map[string]any{"at": "2026-02-19T14:30:00Z"}, "2026-02-19T14:35:00Z", true, "2026-02-19T14:35:00Z"},
		{"epoch milliseconds", map[string]any{"at": 1771511400000}, "2026-02-19T14:34:00Z", true, "2026-02-19T14:35:00Z"},
		{"interval ending 2 minutes ago", map[string]any{"start": "2026-02-19T14:00:00Z", "end": "2026-02-19T14:32:00Z"}, "2026-02-19T14:34:00Z", true, "2026-02-19T14:37:00Z"},
		{"open interval (still going on)", map[string]any{"start": "2026-02-19T14:00:00Z", "end": "_"}, "2026-02-19T14:34:00Z", true, ""},
		{"until now", map[string]any{"start": "_", "end": "now"}, "2026-02-19T14:34:00Z", true, "2026-02-19T14:39:00Z"},
		{"no annotation: always true", nil, "2026-02-19T14:34:00Z", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := map[string]any{"pred": "console_event", "args": []any{"s1", "error", "TypeError", 1}}
			if tc.t != nil {
				ev["t"] = tc.t
			}
			resp := h.evaluate("w", map[string]any{
				"intent":    map[string]any{"name": "diagnose_error"},
				"facts":     []any{map[string]any{"pred": "current_url", "args": []any{"https://x"}}, ev},
				"eval_time": tc.evalTime,
				"options":   map[string]any{"disclosure_preference": "full"},
			}).intentResponse(t)
			if got := len(resp.MacroTools) > 0; got != tc.tools {
				t.Fatalf("tools returned: %v, want %v (%s)", got, tc.tools, mustJSON(resp.MacroTools))
			}
			if !tc.tools {
				return
			}
			m := tool(t, resp, "inspect_console_errors")
			switch {
			case tc.expires == "" && m.Validity != nil && m.Validity.ExpiresAt != nil:
				t.Errorf("expires_at %v, want none", m.Validity.ExpiresAt)
			case tc.expires != "" && (m.Validity == nil || m.Validity.ExpiresAt == nil || m.Validity.ExpiresAt.Format("2006-01-02T15:04:05Z07:00") != tc.expires):
				t.Errorf("validity %s, want expires_at %s", mustJSON(m.Validity), tc.expires)
			}
		})
	}
}

func TestTemporalFactValidation(t *testing.T) {
	h := newHarness(t, nil, nil)
	e := h.evaluate("v", map[string]any{
		"intent": map[string]any{"name": "observe"},
		"facts": []any{
			map[string]any{"pred": "current_url", "args": []any{"https://x"}, "t": map[string]any{"at": "2026-02-19T14:30:00Z"}},
			map[string]any{"pred": "console_event", "args": []any{"s1", "error", "m", 1}, "t": map[string]any{"at": "yesterday"}},
			map[string]any{"pred": "console_event", "args": []any{"s1", "error", "m", 1}, "t": map[string]any{"start": "2026-02-19T15:00:00Z", "end": "2026-02-19T14:00:00Z"}},
		},
	}).errorPayload(t)
	issues := []protocol.Code{}
	for _, v := range e.Details.Violations {
		issues = append(issues, v.Issue)
	}
	if mustJSON(issues) != `["temporal_not_supported","invalid_temporal","invalid_temporal"]` {
		t.Errorf("violations %s", mustJSON(e.Details.Violations))
	}
}

// TestLoadTimeCodes: rules Mangle v0.5.0 would evaluate wrongly stop
// start-up, naming file, line and predicate (invalid_temporal_pattern).
func TestLoadTimeCodes(t *testing.T) {
	profile := "decl_predicate(\"ev\", \"input\", \"e\").\ndecl_arg(\"ev\", 0, \"x\", \"string\").\ndecl_temporal(\"ev\").\n"
	for _, tc := range []struct {
		name, rules, want string
	}{
		{"recursive temporal head", "a(X)@[T] :- ev(X)@[T].\na(X)@[T2] :- a(X)@[T], T2 = fn:time:add(T, fn:duration:parse(\"1s\")).\n", "r/domain/a.mg:5: invalid_temporal_pattern: a has a temporal head"},
		{"recursion through a temporal operator", "b(X) :- ev(X)@[S, E].\nb(X) :- <-[0m, 5m] c(X).\nc(X)@[T] :- b(X), ev(X)@[T].\n", "invalid_temporal_pattern"},
		{"two aggregations into one head (v0.5.0 shares their relation)", "e(X, N) :- ev(X)@[S, E], N = 1.\ns(X, T) :- e(X, N) |> do fn:group_by(X), let T = fn:sum(N).\ns(X, T) :- e(X, N), e(X, M) |> do fn:group_by(X), let T = fn:max(N).\n", "r/domain/a.mg:6: s has 2 aggregation (do) rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manglecp.NewServer(manglecp.Domain{ID: "t", RulesName: "r", Rules: fstest.MapFS{"domain/a.mg": {Data: []byte(profile + tc.rules)}}}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestNonDeterministicExternal: report_exists reads the report directory.
// Writing a report changes its answer, and with it the macro_id of the
// report tool, which must never be reused for a different composition.
func TestNonDeterministicExternal(t *testing.T) {
	h := newHarness(t, nil, nil)
	m := h.srv.Manifest()
	found := false
	for _, e := range m.Capabilities.ExternalPredicates {
		found = found || (e.Predicate == "report_exists" && !e.Deterministic)
	}
	if !found {
		t.Fatalf("external predicates %+v", m.Capabilities.ExternalPredicates)
	}
	before := tool(t, h.evaluate("a", diagnoseRequest()).intentResponse(t), "write_diagnosis_report")
	again := tool(t, h.evaluate("b", diagnoseRequest()).intentResponse(t), "write_diagnosis_report")
	if before.MacroID != again.MacroID {
		t.Fatal("equal requests, equal external answers: macro_ids differ")
	}
	h.invoke("w", map[string]any{"macro_id": before.MacroID, "args": map[string]any{"request_id": "r42"},
		"confirmation_token": h.srv.ConfirmationToken(before.MacroID)}).invokeResponse(t)
	after := tool(t, h.evaluate("c", diagnoseRequest()).intentResponse(t), "write_diagnosis_report")
	if after.MacroID == before.MacroID || after.ContextInjection == nil || !strings.Contains(after.ContextInjection.Instructions, "already on the server") {
		t.Errorf("after writing: %s", mustJSON(after))
	}
}

// TestFutureOperator: future operators work in domain rules too. A
// maintenance window starting within ten minutes of eval_time selects a
// tool; one starting later does not.
func TestFutureOperator(t *testing.T) {
	rules := fstest.MapFS{"domain/d.mg": {Data: []byte(`
decl_intent("plan", "Plan around maintenance.").
decl_intent_fact("plan", "maintenance", "optional").
decl_predicate("maintenance", "input", "A maintenance window of a system.").
decl_arg("maintenance", 0, "system", "string").
decl_temporal("maintenance").
tool("postpone_deploy").
tool_action("postpone_deploy", "noop").
tool_description("postpone_deploy", "Postpone the deploy: maintenance is coming.").
upcoming(System) :- <+[0m, 10m] maintenance(System).
mandatory_for_intent("plan", "postpone_deploy") :- upcoming(_).
`)}}
	d := manglecp.Domain{ID: "future", Rules: rules, Actions: map[string]manglecp.ActionSpec{"noop": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
		return &manglecp.Outcome{}, nil
	}}}}
	h := newHarness(t, &d, nil)
	for _, tc := range []struct {
		start string
		want  int
	}{{"2026-02-19T14:35:00Z", 1}, {"2026-02-19T14:45:00Z", 0}} {
		resp := h.evaluate("f", map[string]any{
			"intent":    map[string]any{"name": "plan"},
			"facts":     []any{map[string]any{"pred": "maintenance", "args": []any{"db"}, "t": map[string]any{"start": tc.start, "end": "2026-02-19T16:00:00Z"}}},
			"eval_time": "2026-02-19T14:30:00Z",
		}).intentResponse(t)
		if len(resp.MacroTools) != tc.want {
			t.Errorf("maintenance from %s: %d tools, want %d", tc.start, len(resp.MacroTools), tc.want)
		}
	}
}
