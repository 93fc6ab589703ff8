package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/protocol"
)

// withIdentities configures the server's identities.
func withIdentities(ids ...manglecp.Identity) func(*manglecp.Options) {
	return func(o *manglecp.Options) { o.Identities = ids }
}

// notesPack offers the notes upstream's tools.
var notesPack = fstest.MapFS{"domain/notes.mg": {Data: []byte(`
decl_intent("use_notes", "Keep and read notes.").
mandatory_for_intent("use_notes", T) :- upstream_tool("notes", T, "note_add").
mandatory_for_intent("use_notes", T) :- upstream_tool("notes", T, "note_list").
`)}}

var (
	alice = manglecp.Identity{Name: "alice", Token: "alice-token-0123456789", Permissions: []string{"intent:use_notes", "upstream:notes"}}
	bob   = manglecp.Identity{Name: "bob", Token: "bob-token-0123456789ab", Permissions: []string{"intent:use_notes", "upstream:notes"}}
)

// TestIdentitiesDoNotShareUpstreamState (issue 35 item 1): a stateful
// notes server run as a command behind the gateway: what alice keeps is
// never in bob's answers.
func TestIdentitiesDoNotShareUpstreamState(t *testing.T) {
	f := newFixtureWith(t, gateway.Config{Upstreams: []gateway.Upstream{command(t, "notes", "notes")}, Rules: notesPack}, withIdentities(alice, bob))
	a, b := f.as(alice.Token), f.as(bob.Token)
	a.OK("use_notes", nil, "notes_note_add", map[string]any{"text": "alice-secret-key"}, false)
	if got := answer(b.OK("use_notes", nil, "notes_note_list", nil, false)); strings.Contains(got, "alice-secret") {
		t.Fatalf("bob reads alice's note: %q", got)
	}
	if got := answer(a.OK("use_notes", nil, "notes_note_list", nil, false)); !strings.Contains(got, "alice-secret-key") {
		t.Fatalf("alice lost her note: %q", got)
	}
	if st := f.gw.Status()["notes"]; st.Sessions != 2 {
		t.Errorf("status %+v: want 2 sessions", st)
	}
}

// TestPlaywrightIdentitiesSeparate (issue 35 item 1): Playwright MCP
// behind the gateway: bob's snapshot never shows the page alice opened.
func TestPlaywrightIdentitiesSeparate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/account" {
			w.Write([]byte(`<html><body><h1>Alice's account</h1><p>API key: sk-alice-98765</p></body></html>`))
			return
		}
		w.Write([]byte(`<html><body><h1>Welcome</h1></body></html>`))
	}))
	defer page.Close()
	up := playwrightUpstream(t)
	perms := []string{"intent:browse", "intent:inspect_page", "upstream:pw"}
	pa := manglecp.Identity{Name: "alice", Token: alice.Token, Permissions: perms}
	pb := manglecp.Identity{Name: "bob", Token: bob.Token, Permissions: perms}
	f := newFixtureWith(t, gateway.Config{Upstreams: []gateway.Upstream{up}}, withIdentities(pa, pb))
	a, b := f.as(pa.Token), f.as(pb.Token)
	a.OK("browse", nil, "pw_browser_navigate", map[string]any{"url": page.URL + "/account"}, false)
	if got := answer(a.OK("browse", nil, "pw_browser_snapshot", map[string]any{}, false)); !strings.Contains(got, "sk-alice-98765") {
		t.Fatalf("alice's snapshot: %.500s", got)
	}
	if got := answer(b.OK("browse", nil, "pw_browser_snapshot", map[string]any{}, false)); strings.Contains(got, "sk-alice") || strings.Contains(got, "/account") {
		t.Fatalf("bob's snapshot shows alice's page: %.300s", got)
	}
}

// TestGatewayPermissions (issue 35 item 2): gateway intents and upstream
// tools need a grant, denied by default: an identity holding only
// intent:observe evaluates no gateway intent and runs no upstream tool,
// even with a confirmation token; intent:NAME without upstream:NAME
// offers none of that upstream's tools; "*" holds both.
func TestGatewayPermissions(t *testing.T) {
	observer := manglecp.Identity{Name: "observer", Token: "observer-token-012345", Permissions: []string{"intent:observe"}}
	intentOnly := manglecp.Identity{Name: "intent-only", Token: "intent-token-01234567", Permissions: []string{"intent:use_fake"}}
	granted := manglecp.Identity{Name: "granted", Token: "granted-token-0123456", Permissions: []string{"intent:use_fake", "upstream:fake"}}
	admin := manglecp.Identity{Name: "admin", Token: "admin-token-012345678", Permissions: []string{"*"}}
	f := newFixtureWith(t, gateway.Config{Upstreams: []gateway.Upstream{inMemory("fake", "normal")}, Rules: fakePack},
		withIdentities(observer, intentOnly, granted, admin))

	_, err := f.as(observer.Token).sess.Evaluate(context.Background(), &protocol.IntentRequest{Intent: protocol.Intent{Name: "use_fake"}})
	if err == nil || !strings.Contains(err.Error(), string(protocol.CodeAuthInsufficient)) {
		t.Fatalf("intent:observe evaluated use_fake: %v, want auth_insufficient", err)
	}
	if tools := f.as(intentOnly.Token).Eval("use_fake"); len(tools) != 0 {
		t.Errorf("intent:use_fake without upstream:fake is offered %v", keys(tools))
	}
	g := f.as(granted.Token)
	if r := g.OK("use_fake", nil, "fake_echo", map[string]any{"text": "hi"}, false); answer(r) != "hi" {
		t.Errorf("granted echo = %q", answer(r))
	}
	g.OK("use_fake", nil, "fake_delete_everything", nil, true)
	f.as(admin.Token).OK("use_fake", nil, "fake_echo", map[string]any{"text": "x"}, false)
}

// TestIntentPermission: a pack may reserve an intent further to callers
// with a permission of its own (intent_permission in its policy): they
// need it beside intent:NAME.
func TestIntentPermission(t *testing.T) {
	pack := fakePackWith("policy/who.mg", `intent_permission("use_fake", "fake:use").`)
	for _, tc := range []struct {
		perms []string
		ok    bool
	}{
		{[]string{"files:read"}, false},
		{[]string{"fake:use"}, false},
		{[]string{"intent:use_fake"}, false},
		{[]string{"intent:use_fake", "fake:use"}, true},
		{[]string{"*"}, true},
	} {
		f := newFixtureWith(t, gateway.Config{Upstreams: []gateway.Upstream{inMemory("fake", "normal")}, Rules: pack},
			func(o *manglecp.Options) { o.AnonymousPermissions = tc.perms })
		_, err := f.sess.Evaluate(context.Background(), &protocol.IntentRequest{Intent: protocol.Intent{Name: "use_fake"}})
		if tc.ok != (err == nil) {
			t.Errorf("permissions %v: %v", tc.perms, err)
		}
		if err != nil && !strings.Contains(err.Error(), string(protocol.CodeAuthInsufficient)) {
			t.Errorf("permissions %v: %v, want auth_insufficient", tc.perms, err)
		}
	}
}
