package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/upstream"
)

// TestToolsAreActions: each upstream tool is a macro-tool named
// UPSTREAM_TOOL with the upstream's parameters, reachable through the
// pack's intent, and calls reach the upstream.
func TestToolsAreActions(t *testing.T) {
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{inMemory("fake", "normal")}, Rules: fakePack})
	tools := f.Eval("use_fake")
	for _, name := range []string{"fake_echo", "fake_add", "fake_delete_everything", "fake_fetch_url"} {
		if _, ok := tools[name]; !ok {
			t.Errorf("use_fake does not offer %s (offers %v)", name, keys(tools))
		}
	}
	echo := tools["fake_echo"]
	if echo.Safety == nil || echo.Safety.RequiresUserConfirmation || !contains(echo.Safety.SideEffects, "none") {
		t.Errorf("echo safety = %+v, want no side effects, no confirmation", echo.Safety)
	}
	props, _ := echo.InputSchema["properties"].(map[string]any)
	if _, ok := props["text"]; !ok {
		t.Errorf("echo input schema %v lacks text", echo.InputSchema)
	}
	resp := f.OK("use_fake", nil, "fake_echo", map[string]any{"text": "hello"}, false)
	if answer(resp) != "hello" {
		t.Errorf("echo result = %v", resp.Result)
	}
	fetch := tools["fake_fetch_url"]
	if fetch.Safety == nil || !contains(fetch.Safety.SideEffects, "none") {
		t.Errorf("fetch_url (read-only, open world) safety = %+v", fetch.Safety)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDestructiveNeedsConfirmation: destructiveHint -> confirmation, and a
// pack's policy can waive it.
func TestDestructiveNeedsConfirmation(t *testing.T) {
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{inMemory("fake", "normal")}, Rules: fakePack})
	del := f.Eval("use_fake")["fake_delete_everything"]
	if del.Safety == nil || !del.Safety.RequiresUserConfirmation || !contains(del.Safety.SideEffects, "upstream") {
		t.Fatalf("delete-everything safety = %+v, want confirmation and side effect upstream", del.Safety)
	}
	f.Fails("use_fake", nil, "fake_delete_everything", nil, false, protocol.CodeConfirmationRequired)
	if r := f.OK("use_fake", nil, "fake_delete_everything", nil, true); answer(r) != "deleted" {
		t.Errorf("confirmed: %v", r.Result)
	}

	waived := fakePackWith("policy/waive.mg", `confirmation_waived(T) :- upstream_tool("fake", T, "delete-everything").`)
	g := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{inMemory("fake", "normal")}, Rules: waived})
	if r := g.OK("use_fake", nil, "fake_delete_everything", nil, false); answer(r) != "deleted" {
		t.Errorf("waived: %v", r.Result)
	}
}

// fakePackWith is fakePack plus one file.
func fakePackWith(name, src string) fstest.MapFS {
	out := fstest.MapFS{name: {Data: []byte(src)}}
	for k, v := range fakePack {
		out[k] = v
	}
	return out
}

// TestArgumentsValidatedBeforeTheCall: the upstream's full schema (nested
// items, maxLength) is enforced before the call: the macro-tool's input
// schema carries it, so the server refuses such arguments before any
// confirmation (the gateway checks the whole upstream schema again).
func TestArgumentsValidatedBeforeTheCall(t *testing.T) {
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{inMemory("fake", "normal")}, Rules: fakePack})
	e := f.Fails("use_fake", nil, "fake_add", map[string]any{"a": 1, "b": 2, "tags": []any{map[string]any{"x": "no k"}}}, false, protocol.CodeSchemaValidationFailed)
	if e.Details == nil || len(e.Details.SchemaErrors) == 0 || !strings.Contains(e.Details.SchemaErrors[0].Path, "tags") {
		t.Fatalf("details = %+v, want a schema error at /tags/0", e.Details)
	}
	e = f.Fails("use_fake", nil, "fake_echo", map[string]any{"text": strings.Repeat("a", 1001)}, false, protocol.CodeSchemaValidationFailed)
	if e.Details == nil || e.Details.SchemaErrors[0].Keyword != "maxLength" {
		t.Fatalf("details = %+v, want maxLength", e.Details)
	}
	if r := f.OK("use_fake", nil, "fake_add", map[string]any{"a": 2, "b": 3, "tags": []any{map[string]any{"k": "v"}}}, false); answer(r) != "5" {
		t.Errorf("add = %v", r.Result)
	}
}

// TestUpstreamErrorsAreCodes: failures become the gateway's registered
// codes, the upstream's message bounded, without stack or paths; answers
// are bounded.
func TestUpstreamErrorsAreCodes(t *testing.T) {
	up := inMemory("fake", "normal")
	// The call timeout is the subject only for fake_slow, which outlasts it
	// tenfold; on a busy machine the other calls get the measured budget.
	up.CallTimeout = testenv.Budget(300 * time.Millisecond)
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{up}, Rules: fakePack, MaxResultBytes: 1000})
	e := f.Fails("use_fake", nil, "fake_fail", nil, false, gateway.CodeToolFailed)
	for _, leak := range []string{"/home/alice", "openSync", "/srv/app", "\u0007"} {
		if strings.Contains(e.Message, leak) {
			t.Errorf("message %q leaks %q", e.Message, leak)
		}
	}
	if !strings.Contains(e.Message, "ENOENT") || !strings.Contains(e.Message, "notes.txt") {
		t.Errorf("message %q lost the upstream's reason", e.Message)
	}
	f.Fails("use_fake", nil, "fake_slow", map[string]any{"ms": 10 * up.CallTimeout.Milliseconds()}, false, gateway.CodeTimeout)
	r := f.OK("use_fake", nil, "fake_huge", map[string]any{"n": 100000}, false)
	text := answer(r)
	if len(text) > 1100 || r.Result["truncated"] != true {
		t.Errorf("huge: %d bytes, truncated %v", len(text), r.Result["truncated"])
	}
}

// TestKilledMidCallThroughTheGateway: an upstream process killed during a
// call answers x-upstream_unreachable, the server is degraded while it
// restarts, and it serves again afterwards.
func TestKilledMidCallThroughTheGateway(t *testing.T) {
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{command(t, "fake", "normal")}, Rules: fakePack})
	f.Fails("use_fake", nil, "fake_crash", nil, false, gateway.CodeUnreachable)
	w := testenv.NewWait(20 * time.Second)
	for {
		_, err := f.Call("use_fake", nil, "fake_echo", map[string]any{"text": "again"}, false)
		if err == nil {
			break
		}
		if err.Code() != gateway.CodeUnreachable || !w.Next() {
			t.Fatalf("after the crash: %v", err)
		}
	}
	if st := f.gw.Status()["fake"]; st.State != "up" || st.Restarts < 1 {
		t.Errorf("status %+v", st)
	}
}

// TestOneUpstreamDown: an upstream that does not start leaves the server
// degraded with the reason (readyz 503, manifest x-upstreams); the other
// keeps serving.
func TestOneUpstreamDown(t *testing.T) {
	down := gateway.Upstream{Config: upstream.Config{Name: "gone", Command: []string{"/nonexistent/server"}, MinBackoff: time.Hour, MaxBackoff: time.Hour}}
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{inMemory("fake", "normal"), down}, Rules: fakePack})
	if r := f.OK("use_fake", nil, "fake_echo", map[string]any{"text": "up"}, false); answer(r) != "up" {
		t.Errorf("echo: %v", r.Result)
	}
	m := f.srv.Manifest()
	reason, _ := m.Extensions["x-degraded_reason"].(string)
	if m.Status != protocol.StatusDegraded || !strings.Contains(reason, "upstream gone is down") {
		t.Errorf("manifest status %s, reason %q: want degraded naming upstream gone", m.Status, reason)
	}
	if strings.Contains(reason, "/nonexistent") {
		t.Errorf("the reason leaks the command path: %s", reason)
	}
	raw, _ := json.Marshal(m.Extensions["x-upstreams"])
	var ups map[string]upstream.Status
	if err := json.Unmarshal(raw, &ups); err != nil || ups["gone"].State != "down" || ups["fake"].State != "up" || ups["fake"].Tools != 8 {
		t.Errorf("x-upstreams = %s", raw)
	}
}

// TestHostileUpstream: invalid schemas and names that try to write rules
// are left out or escaped; the rules load and the good tools serve.
func TestHostileUpstream(t *testing.T) {
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{inMemory("fake", "badschema")}, Rules: fakePack})
	tools := f.Eval("use_fake")
	if _, ok := tools["fake_broken"]; ok {
		t.Error("a tool with an invalid schema is offered")
	}
	if _, ok := tools["fake_weird_param"]; ok {
		t.Error("a tool with an impossible parameter name is offered")
	}
	if _, ok := tools["fake_echo"]; !ok {
		t.Errorf("echo not offered: %v", keys(tools))
	}
	if _, ok := tools["x"]; ok {
		t.Error("a tool name wrote a rule")
	}
	if m, ok := tools["fake_escapes"]; !ok || !strings.Contains(m.Description, `a\b`) || !strings.Contains(m.Description, "é中") {
		t.Errorf("escapes: %q (offered %v)", m.Description, ok)
	}
	if !strings.Contains(f.logs.String(), "upstream tool left out") {
		t.Error("skipped tools are not logged")
	}
	_ = context.Background
}

// TestLateUpstreamJoins: an upstream down at start serves without its
// tools, degraded; when it comes up, the gateway rebuilds the rules and
// reloads the server, and its tools are offered.
func TestLateUpstreamJoins(t *testing.T) {
	var tries atomic.Int32
	late := inMemory("late", "normal")
	dial := late.Dial
	late.Dial = func(ctx context.Context) (mcp.Transport, func(), error) {
		if tries.Add(1) <= 2 {
			return nil, nil, errors.New("not yet")
		}
		return dial(ctx)
	}
	late.MinBackoff, late.MaxBackoff = 50*time.Millisecond, 100*time.Millisecond
	pack := fstest.MapFS{"domain/any.mg": {Data: []byte(`
decl_intent("use_any", "Use any upstream.").
mandatory_for_intent("use_any", T) :- upstream_tool(_, T, "echo").
`)}}
	f := newFixture(t, gateway.Config{Upstreams: []gateway.Upstream{inMemory("fake", "normal"), late}, Rules: pack})
	f.gw.SetReload(f.srv.Reload)
	if !testenv.Poll(10*time.Second, func() bool { _, ok := f.Eval("use_any")["late_echo"]; return ok }) {
		t.Fatalf("late_echo never offered; tries %d, status %+v", tries.Load(), f.gw.Status())
	}
	if r := f.OK("use_any", nil, "late_echo", map[string]any{"text": "joined"}, false); answer(r) != "joined" {
		t.Errorf("late echo = %q", answer(r))
	}
	if m := f.srv.Manifest(); m.Status != protocol.StatusReady {
		t.Errorf("status %s after the upstream joined", m.Status)
	}
}
