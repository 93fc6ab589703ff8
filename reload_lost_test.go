package manglecp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
)

// twoTools is a small domain whose tools first and second both run the
// action noop; extra rule lines are appended (e.g. a third tool).
func twoTools(tools []string, extra string) fstest.MapFS {
	var b strings.Builder
	b.WriteString(`decl_intent("ask", "Ask.").
decl_intent_fact("ask", "topic", "optional").
decl_predicate("topic", "input", "A topic.").
decl_arg("topic", 0, "name", "string").
`)
	for _, t := range tools {
		b.WriteString(`tool("` + t + `").
tool_action("` + t + `", "noop").
tool_description("` + t + `", "A tool.").
mandatory_for_intent("ask", "` + t + `").
`)
	}
	b.WriteString(extra)
	return fstest.MapFS{"domain/d.mg": {Data: []byte(b.String())}}
}

// spare is a tool no request selects.
const spare = `tool("spare").
tool_action("spare", "noop").
tool_description("spare", "Never selected.").
`

func twoToolsDomain() *manglecp.Domain {
	return &manglecp.Domain{ID: "two", RulesName: "two", Rules: twoTools([]string{"first", "second"}, ""),
		Samples: fstest.MapFS{"ask.json": {Data: []byte(`{"type": "intent_request", "id": "s", "manglecp": "2026-02-draft",
  "payload": {"intent": {"name": "ask"}, "facts": [{"pred": "topic", "args": ["x"]}]}}`)}},
		Actions: map[string]manglecp.ActionSpec{
			"noop": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) { return &manglecp.Outcome{}, nil }},
		}}
}

// TestReloadRefusesLostTools: a reload whose rules load and pass the
// samples but lose a tool the running rules serve (a deleted rule file, the
// only tool of a registered action, a tool a sample selects) is refused:
// the previous rules keep serving, the status is degraded with a public
// reason naming the tools (no files), and the log names the file. Issue 26
// item 12: deleting domain/tools.mg left the server ready and invocations
// failed.
func TestReloadRefusesLostTools(t *testing.T) {
	tests := []struct {
		name   string
		domain func() *manglecp.Domain // nil: the browser domain
		rules  func(t *testing.T) fstest.MapFS
		refuse bool
		// loadMay: the load may refuse the rules first (the contract checks
		// see a tool named and not declared), with its own reason.
		loadMay bool
		wantLog []string
	}{
		{
			name: "browser rule file domain/tools.mg deleted",
			rules: func(t *testing.T) fstest.MapFS {
				r := browserRulesWith(t, nil)
				delete(r, "domain/tools.mg")
				return r
			},
			refuse:  true,
			loadMay: true,
			wantLog: []string{"browser/domain/tools.mg"},
		},
		{
			name: "browser action observe_summary run by no tool any more",
			rules: func(t *testing.T) fstest.MapFS {
				r := browserRulesWith(t, nil)
				src := strings.Replace(string(r["domain/tools.mg"].Data),
					`tool_action("summarize_observation", "observe_summary")`, `tool_action("summarize_observation", "console_errors")`, 1)
				r["domain/tools.mg"] = &fstest.MapFile{Data: []byte(src)}
				return r
			},
			refuse:  true,
			wantLog: []string{`browser/domain/tools.mg:5: tool_action(\"summarize_observation\", \"observe_summary\") is gone`},
		},
		{
			name: "browser tool summarize_observation renamed, the observe sample selects it",
			rules: func(t *testing.T) fstest.MapFS {
				r := browserRulesWith(t, nil)
				for name, f := range r {
					r[name] = &fstest.MapFile{Data: []byte(strings.ReplaceAll(string(f.Data), `"summarize_observation"`, `"summarize_page"`))}
				}
				return r
			},
			refuse:  true,
			wantLog: []string{`the sample request observe.json selects tool \"summarize_observation\" on the running rules; the new rules do not declare it (they select summarize_page`},
		},
		{
			name:    "a tool the sample selects is dropped, its action still runs",
			domain:  twoToolsDomain,
			rules:   func(*testing.T) fstest.MapFS { return twoTools([]string{"first"}, "") },
			refuse:  true,
			wantLog: []string{"the sample request ask.json selects tool \\\"second\\\""},
		},
		{
			name:   "a tool is added",
			domain: twoToolsDomain,
			rules:  func(*testing.T) fstest.MapFS { return twoTools([]string{"first", "second", "third"}, "") },
		},
		{
			name: "a tool no sample selects is dropped, its action still runs",
			domain: func() *manglecp.Domain {
				d := twoToolsDomain()
				d.Rules = twoTools([]string{"first", "second"}, spare)
				return d
			},
			rules: func(*testing.T) fstest.MapFS { return twoTools([]string{"first", "second"}, "") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d *manglecp.Domain
			if tt.domain != nil {
				d = tt.domain()
			}
			h := newHarness(t, d, nil)
			err := h.srv.Reload(tt.rules(t))
			m := h.srv.Manifest()
			reason, _ := m.Extensions["x-degraded_reason"].(string)
			if !tt.refuse {
				if err != nil || m.Status != protocol.StatusReady {
					t.Fatalf("reload refused: %v, status %s", err, m.Status)
				}
				return
			}
			if err == nil {
				t.Fatalf("the reload was accepted; status %s", m.Status)
			}
			if m.Status != protocol.StatusDegraded || (!tt.loadMay && !strings.Contains(reason, "lose tools")) || strings.Contains(reason, ".mg") {
				t.Errorf("status %s, reason %q; want degraded naming the lost tools and no file", m.Status, reason)
			}
			for _, want := range tt.wantLog {
				if !strings.Contains(h.logs.String(), want) {
					t.Errorf("the log lacks %s:\n%s", want, h.logs.String())
				}
			}
			if tt.domain == nil {
				// Every tool still answers: evaluate and invoke on the
				// previous rules.
				resp := h.evaluate("after", diagnoseRequest()).intentResponse(t)
				mt := tool(t, resp, "inspect_console_errors")
				if r := h.invoke("inv", map[string]any{"macro_id": mt.MacroID, "args": map[string]any{}}); r.status != http.StatusOK {
					t.Errorf("invoke after the refused reload: %d %s", r.status, r.raw)
				}
				if err := h.srv.Reload(browser.Rules()); err != nil || h.srv.Status() != protocol.StatusReady {
					t.Errorf("reload of the full rules: %v, status %s", err, h.srv.Status())
				}
			}
		})
	}
}
