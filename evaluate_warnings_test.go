package manglecp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// TestTimeErrorsNameTheField: a malformed or unusable eval_time, over
// HTTP, on evaluate and on invoke, is malformed_message naming the field
// eval_time in the message and in details.field (issue 29: the message
// said only "payload is invalid: time ...").
func TestTimeErrorsNameTheField(t *testing.T) {
	h := newHarness(t, nil, nil)
	for _, et := range []any{"yesterday", true, 12.5, "2026-13-01T00:00:00Z", "1500-01-01T00:00:00Z"} {
		req := diagnoseRequest()
		req["eval_time"] = et
		replies := []*reply{h.evaluate("e", req)}
		if et != "1500-01-01T00:00:00Z" { // invoke checks the macro first (Spec 07 section 2.3)
			replies = append(replies, h.invoke("i", map[string]any{"macro_id": "m", "args": map[string]any{}, "eval_time": et}))
		}
		for _, r := range replies {
			if r.status != http.StatusBadRequest {
				t.Errorf("eval_time %v: status %d: %s", et, r.status, r.raw)
				continue
			}
			e := r.errorPayload(t)
			if e.Code != protocol.CodeMalformedMessage || e.Details == nil || e.Details.Field != "eval_time" || !strings.Contains(e.Message, "eval_time") {
				t.Errorf("eval_time %v: %s", et, r.env.Payload)
			}
		}
	}
}

// TestUnknownIntentWarningSuggests: an intent the manifest does not declare
// gets the unknown_intent warning with the declared intent meant, as the
// CLI suggests it (issue 29).
func TestUnknownIntentWarningSuggests(t *testing.T) {
	h := newHarness(t, nil, nil)
	req := diagnoseRequest()
	req["intent"] = map[string]any{"name": "diagnose"}
	resp := h.evaluate("u", req).intentResponse(t)
	for _, w := range resp.Warnings {
		if w.Code == protocol.WarnUnknownIntent {
			if !strings.Contains(w.Message, `did you mean "diagnose_error"?`) || w.Details["did_you_mean"] != "diagnose_error" {
				t.Errorf("warning without the suggestion: %+v", w)
			}
			return
		}
	}
	t.Errorf("no unknown_intent warning: %+v", resp.Warnings)
}

// expiringDomain's tool is valid for one minute after eval_time.
func expiringDomain() *manglecp.Domain {
	return &manglecp.Domain{ID: "exp", Rules: fstest.MapFS{"domain/d.mg": {Data: []byte(`
decl_intent("ask", "Ask.").
tool("soon_stale").
tool_action("soon_stale", "noop").
tool_description("soon_stale", "Valid for a minute after eval_time.").
mandatory_for_intent("ask", "soon_stale").
tool_valid_until("soon_stale", Nanos) :- eval_time(Now),
  Until = fn:time:add(Now, fn:duration:parse("1m")), Nanos = fn:time:to_unix_nanos(Until).
`)}}, Actions: map[string]manglecp.ActionSpec{
		"noop": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) { return &manglecp.Outcome{}, nil }},
	}}
}

// TestWarningWhenEveryToolExpired: an eval_time so far in the past that
// every macro-tool's validity ended before the server's clock gets the
// tools_expired warning (invoking them would answer macro_expired); an
// eval_time whose tools are still valid, or none, gets no such warning
// (issue 29: the tools came back with no warning, and invoking said to
// evaluate again, which returned the same).
func TestWarningWhenEveryToolExpired(t *testing.T) {
	h := newHarness(t, expiringDomain(), nil)
	for _, tc := range []struct {
		name     string
		evalTime any // nil: none
		want     bool
	}{
		{"an hour ago", fixedNow.Add(-time.Hour).Format(time.RFC3339), true},
		{"ten seconds ago", fixedNow.Add(-10 * time.Second).Format(time.RFC3339), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := map[string]any{"intent": map[string]any{"name": "ask"}}
			if tc.evalTime != nil {
				req["eval_time"] = tc.evalTime
			}
			r := h.evaluate("x", req)
			resp := r.intentResponse(t)
			if len(resp.MacroTools) != 1 {
				t.Fatalf("tools: %s", r.raw)
			}
			got := false
			for _, w := range resp.Warnings {
				if w.Code == protocol.WarnToolsExpired {
					got = true
					if !strings.Contains(w.Message, "macro_expired") {
						t.Errorf("message: %s", w.Message)
					}
				}
			}
			if got != tc.want {
				t.Errorf("tools_expired warning %v, want %v: %s", got, tc.want, r.raw)
			}
			if tc.want {
				inv := h.invoke("i", map[string]any{"macro_id": resp.MacroTools[0].MacroID, "args": map[string]any{}})
				if e := inv.errorPayload(t); e.Code != protocol.CodeMacroExpired || !strings.Contains(e.Message, "with no eval_time or a recent one") {
					t.Errorf("invoking the expired tool: %s", inv.raw)
				}
			}
		})
	}
}
