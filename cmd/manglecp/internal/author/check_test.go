package author

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/domains/browser"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		extra map[string]string
		args  []string
		code  int
		want  []string
	}{
		{"valid rules", nil, nil, 0, []string{"ok: ", "3 intents"}},
		{"syntax error", map[string]string{"domain/zz.mg": "ok(1).\nbad(:-.\n"}, nil, 1, []string{"domain/zz.mg:2: syntax error"}},
		{"undeclared predicate", map[string]string{"domain/zz.mg": "\nx(S) :- nowhere(S).\n"}, nil, 1, []string{"domain/zz.mg:2:", "nowhere"}},
		{"pitfalls are warnings", map[string]string{"domain/zz.mg": "x(S) :- console_event(S, \"error\", M, T)@[_, _].\n"}, nil, 0,
			[]string{"warning: ", "zz.mg:1: console_event(...)@[_, _] matches only eternal facts"}},
		// What fails every evaluation reaching it is an error (issue 9 item 8).
		{"string comparison", map[string]string{"domain/zz.mg": "\ny(N) :- response(_, _, N, _), N < \"a\".\n"}, nil, 1,
			[]string{"error: ", "zz.mg:2: comparison with \"a\"", "1 error\n"}},
		{"string argument comparison", map[string]string{"domain/zz.mg": "y(L) :- console_event(_, L, _, _), L > 3.\n"}, nil, 1,
			[]string{"error: ", "zz.mg:1: comparison of L, a string argument of console_event"}},
		{"unbounded recursion", map[string]string{"domain/zz.mg": "n(0).\nn(M) :- n(N), M = fn:plus(N, 1).\n"}, nil, 1,
			[]string{"error: ", "zz.mg:2: unbounded recursion"}},
		{"sample request fails", map[string]string{"domain/zz.mg": "level_text(M) :- console_error(_, M, _).\nloud(1) :- level_text(M), M > 3.\n"}, nil, 1,
			[]string{"error: diagnose_error.json:4: the sample request diagnose_error.json fails on these rules with evaluation_failed", "1 error\n"}},
		{"cyclic tool_requires", map[string]string{"domain/zz.mg": "\n\ntool_requires(\"inspect_console_errors\", \"write_diagnosis_report\").\n"}, nil, 1,
			[]string{"error: ", "zz.mg:3: tool_requires is cyclic"}},
		// Rules the kernel hands to the engine are information, at the rule.
		{"engine strata", map[string]string{"domain/zz.mg": "hop(A, B) :- net_request(_, A, _, B, _).\nreach(A, B) :- hop(A, B).\nreach(A, C) :- reach(A, B), reach(B, C).\n"}, nil, 0,
			[]string{"info: ", "zz.mg:3: the Mangle engine evaluates reach/2, 5-10 times slower per fact than the kernel: for reach/2, a rule has 2 premises of its own stratum (non-linear recursion", "ok: "}},
		{"json with rules", nil, []string{"--json", "--show-rules"}, 0, []string{`"ok": true`, `"clauses": [`, `"predicate": "confirm_effect"`}},
		{"json with errors", map[string]string{"domain/zz.mg": "bad(:-.\n"}, []string{"--json"}, 1, []string{`"ok": false`, `"line": 1`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := clitest.CopyFS(t, browser.Rules(), tc.extra)
			var out, errOut bytes.Buffer
			code := commands.Main(context.Background(), clitest.Env(t), append(append([]string{"check"}, tc.args...), dir), nil, &out, &errOut)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if strings.Contains(strings.Join(tc.args, " "), "--json") && !json.Valid(out.Bytes()) {
				t.Errorf("not JSON: %s", out.String())
			}
		})
	}
}

// TestCheckActions checks rules of any domain: the actions the rules name
// are listed without --actions, checked against --actions with the
// tool_action fact's file:line, and a built-in domain's rules are checked
// as that domain's.
func TestCheckActions(t *testing.T) {
	t.Parallel()
	const tickets = "../../../../examples/tickets/rules"
	// withExternal is the tickets rules plus a rule reading an external
	// predicate the Go program would compute.
	withExternal := t.TempDir()
	src, err := os.ReadFile(filepath.Join(tickets, "domain", "tickets.mg"))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(filepath.Join(withExternal, "domain"), 0o755)
	if err := os.WriteFile(filepath.Join(withExternal, "domain", "tickets.mg"), append(src, "mine(Id) :- ticket(Id, _), assigned(Id).\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		dir    string
		args   []string
		code   int
		want   []string
		reject []string
	}{
		{"custom domain lists its actions", tickets, nil, 0,
			[]string{"info: checked as a custom domain's rules", "the ones the rules need", ": escalate\n",
				"info: " + tickets + "/domain/tickets.mg:14: action \"escalate\" (tool \"escalate_ticket\")", "ok: ", "1 intents (triage)"}, []string{"error:"}},
		{"actions given", tickets, []string{"--actions", "escalate"}, 0, []string{"ok: "}, []string{"error:", "info:"}},
		{"actions given after others", tickets, []string{"--actions", "a, escalate ,b"}, 0, []string{"ok: "}, []string{"error:"}},
		{"action missing", tickets, []string{"--actions", "other"}, 1,
			[]string{"error: " + tickets + "/domain/tickets.mg:14: tool_action(\"escalate_ticket\", \"escalate\"): the domain registers no action \"escalate\"", "1 error\n"}, nil},
		{"empty action list", tickets, []string{"--actions", ""}, 1, []string{"tickets.mg:14: ", "1 error\n"}, nil},
		{"json lists actions", tickets, []string{"--json"}, 0,
			[]string{`"checked_as": "custom"`, `"name": "escalate"`, `"tool": "escalate_ticket"`, `"line": 14`}, nil},
		{"browser rules are the browser domain's", "../../../../domains/browser/rules", nil, 0,
			[]string{"info: checked as the browser domain's rules", "3 intents"}, []string{"error:"}},
		{"workspace rules are the workspace domain's", "../../../../domains/workspace/rules", nil, 0,
			[]string{"info: checked as the workspace domain's rules", "5 intents"}, []string{"error:"}},
		{"external predicate undeclared", withExternal, nil, 1, []string{"could not find predicate assigned"}, nil},
		{"external predicate declared", withExternal, []string{"--external", "assigned/1"}, 0,
			[]string{"info: checked as a custom domain's rules", "ok: 4 rules"}, []string{"error:"}},
		{"external predicate with actions", withExternal, []string{"--external", "assigned/1", "--actions", "escalate"}, 0, []string{"ok: "}, []string{"error:", "info:"}},
		{"external without arity", tickets, []string{"--external", "assigned"}, 2, nil, nil},
		{"missing directory", "../../../../no/such/dir", nil, 1, []string{"error: ../../../../no/such/dir does not exist"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := commands.Main(context.Background(), clitest.Env(t), append([]string{"check", tc.dir}, tc.args...), nil, &out, &errOut)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, r := range tc.reject {
				if strings.Contains(out.String(), r) {
					t.Errorf("output has %q:\n%s", r, out.String())
				}
			}
		})
	}
}

// TestCheckContractMistakes runs `manglecp check` on rules with the
// contract mistakes of issue 29 (a misspelled contract predicate, a name
// referring to no declared intent or tool, a parameter type that is not a
// JSON Schema type, a default of the wrong type): each is an error at its
// file:line, as the server reports it at start and reload.
func TestCheckContractMistakes(t *testing.T) {
	t.Parallel()
	base := "decl_intent(\"triage\", \"Triage.\").\ntool(\"show_logs\").\ntool_action(\"show_logs\", \"show_logs\").\n" +
		"tool_param(\"show_logs\", \"lines\", \"integer\", \"How many.\").\nmandatory_for_intent(\"triage\", \"show_logs\").\n"
	tests := []struct {
		name, extra, want string
	}{
		{"misspelled predicate", "tool_descripton(\"show_logs\", \"Logs.\").\n", "domain/d.mg:6: tool_descripton is not a contract predicate and no rule reads it, so the kernel ignores it: did you mean tool_description?"},
		{"unknown intent", "relevant_to_intent(\"triag\", \"show_logs\", 10).\n", "domain/d.mg:6: relevant_to_intent names the intent \"triag\", which is not declared"},
		{"unknown tool", "tool_param_enum(\"show_log\", \"lines\", 5).\n", "domain/d.mg:6: tool_param_enum names the tool \"show_log\", which is not declared"},
		{"bad type", "tool_param(\"show_logs\", \"n\", \"integr\", \"N.\").\n", "domain/d.mg:6: tool_param: \"integr\" is not a JSON Schema type"},
		{"bad default", "tool_param_default(\"show_logs\", \"lines\", \"fifty\").\n", "domain/d.mg:6: tool_param_default: the default \"fifty\" of parameter \"lines\" of tool \"show_logs\" is not of its type integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "domain"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "domain", "d.mg"), []byte(base+tt.extra), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := Check(context.Background(), nil, []string{dir, "--actions", "show_logs"}, nil, &out, &errb)
			if code != 1 || !strings.Contains(out.String(), dir+"/"+tt.want) {
				t.Fatalf("exit %d, want 1 and %q in:\n%s%s", code, tt.want, out.String(), errb.String())
			}
		})
	}
}
