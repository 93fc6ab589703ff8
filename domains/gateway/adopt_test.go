package gateway_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/upstream"
)

// TestAdoptGroups: tools are grouped by their annotations, or, without
// any, by their names and descriptions; destructive ones need
// confirmation; a tool nothing says is safe is a change.
func TestAdoptGroups(t *testing.T) {
	ro := upstream.Tool{Annotated: true, ReadOnly: true, Idempotent: true}
	tools := []upstream.Tool{
		withName(ro, "status"),
		{Name: "wipe", Annotated: true, Destructive: true, OpenWorld: true},
		{Name: "post_tweet", Annotated: true, OpenWorld: true},
		{Name: "ping", Annotated: true},
		{Name: "list_issues", Destructive: true, OpenWorld: true},
		{Name: "delete_issue", Destructive: true, OpenWorld: true},
		{Name: "summarize", Description: "Fetch a URL and summarize it.", Destructive: true, OpenWorld: true},
		{Name: "frobnicate", Destructive: true, OpenWorld: true},
	}
	domain, policy := gateway.Adopt("x", tools)
	for _, tc := range []struct{ intent, tool string }{
		{"x_read", "x_status"}, {"x_read", "x_list_issues"},
		{"x_change", "x_wipe"}, {"x_change", "x_delete_issue"}, {"x_change", "x_frobnicate"},
		{"x_web", "x_post_tweet"}, {"x_web", "x_summarize"},
		{"x_act", "x_ping"},
	} {
		if !strings.Contains(domain, `relevant_to_intent("`+tc.intent+`", "`+tc.tool+`", `) {
			t.Errorf("%s is not offered by %s:\n%s", tc.tool, tc.intent, domain)
		}
	}
	for _, tool := range []string{"x_wipe", "x_delete_issue", "x_frobnicate"} {
		if !strings.Contains(policy, `requires_confirmation("`+tool+`").`) {
			t.Errorf("%s needs no confirmation:\n%s", tool, policy)
		}
	}
	if strings.Contains(policy, "x_status") || strings.Contains(policy, "x_list_issues") {
		t.Errorf("a read-only tool needs confirmation:\n%s", policy)
	}
}

func withName(t upstream.Tool, name string) upstream.Tool {
	t.Name = name
	return t
}
