package manglecp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// versioned is a small domain whose two tools carry the rule version in
// their descriptions, so a response shows which rules evaluated it.
func versioned(version string) fstest.MapFS {
	return fstest.MapFS{"domain/d.mg": {Data: []byte(`
decl_intent("ask", "Ask.").
decl_intent_fact("ask", "topic", "optional").
decl_predicate("topic", "input", "A topic.").
decl_arg("topic", 0, "name", "string").
tool("first").
tool("second").
tool_action("first", "noop").
tool_action("second", "noop").
mandatory_for_intent("ask", "first").
mandatory_for_intent("ask", "second").
tool_description("first", "` + version + `").
tool_description("second", "` + version + `").
`)}}
}

func versionedDomain() *manglecp.Domain {
	return &manglecp.Domain{ID: "v", Rules: versioned("v1"), Actions: map[string]manglecp.ActionSpec{
		"noop": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) { return &manglecp.Outcome{}, nil }},
	}}
}

func TestReload(t *testing.T) {
	h := newHarness(t, versionedDomain(), nil)
	ask := map[string]any{"intent": map[string]any{"name": "ask"}, "options": map[string]any{"disclosure_preference": "full"}}
	desc := func() string { return h.evaluate("a", ask).intentResponse(t).MacroTools[0].Description }
	if got := desc(); got != "v1" {
		t.Fatalf("before: %s", got)
	}
	if err := h.srv.Reload(versioned("v2")); err != nil {
		t.Fatal(err)
	}
	if got := desc(); got != "v2" {
		t.Fatalf("after reload: %s", got)
	}
	bad := fstest.MapFS{"domain/d.mg": {Data: []byte("tool(\"x\").\nbroken(:-.\n")}}
	err := h.srv.Reload(bad)
	m := h.srv.Manifest()
	reason, _ := m.Extensions["x-degraded_reason"].(string)
	if err == nil || !strings.Contains(err.Error(), "domain/d.mg:2") || m.Status != protocol.StatusDegraded || reason == "" || strings.Contains(reason, ".mg") {
		t.Fatalf("bad rules: %v, status %s, reason %q (public: no file names)", err, m.Status, reason)
	}
	if !strings.Contains(h.logs.String(), "domain/d.mg:2") {
		t.Errorf("the log does not name the file and line: %s", h.logs.String())
	}
	if got := desc(); got != "v2" {
		t.Fatalf("the previous rules must keep serving: %s", got)
	}
	if err := h.srv.Reload(versioned("v3")); err != nil || h.srv.Status() != protocol.StatusReady || desc() != "v3" {
		t.Fatalf("recovery: %v %s", err, h.srv.Status())
	}
}

// TestReloadUnderLoad: while the rules are swapped 50 times, concurrent
// requests all succeed and each response was evaluated by one version.
func TestReloadUnderLoad(t *testing.T) {
	h := newHarness(t, versionedDomain(), nil)
	ask := envelope(t, protocol.TypeIntentRequest, "l", map[string]any{"intent": map[string]any{"name": "ask"}, "options": map[string]any{"disclosure_preference": "full"}})
	var failures, mixed, total atomic.Int64
	stop := testenv.Repeat(8, func(int, int) {
		r := h.post("/manglecp/evaluate", ask, nil)
		total.Add(1)
		if r.status != http.StatusOK {
			failures.Add(1)
			return
		}
		var p protocol.IntentResponse
		_ = json.Unmarshal(r.env.Payload, &p)
		if len(p.MacroTools) != 2 || p.MacroTools[0].Description != p.MacroTools[1].Description {
			mixed.Add(1)
		}
	})
	for i := range 50 {
		v := "v-a"
		if i%2 == 1 {
			v = "v-b"
		}
		if err := h.srv.Reload(versioned(v)); err != nil {
			t.Fatal(err)
		}
		// Requests run between two reloads.
		n := total.Load()
		testenv.Eventually(t, 10*time.Second, "a request after a reload", func() bool { return total.Load() >= n+2 })
	}
	stop()
	if failures.Load() != 0 || mixed.Load() != 0 || total.Load() == 0 {
		t.Errorf("%d requests, %d failed, %d mixed versions", total.Load(), failures.Load(), mixed.Load())
	}
}
