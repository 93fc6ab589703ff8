package manglecp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// TestSessionAuthenticate: on a session transport with auth on, requests
// before a successful authenticate get auth_required, a wrong token gets
// auth_invalid, and authenticate_response carries identity and permissions.
func TestSessionAuthenticate(t *testing.T) {
	h := newHarness(t, nil, func(o *manglecp.Options) {
		o.Identities = []manglecp.Identity{{Name: "bot", Token: "bot-token-0123456789abcdef", Permissions: []string{"*"},
			TrustLevel: "automated", AutoConfirmEffects: []string{"filesystem"}}}
	})
	w := memorySession(t, h)
	code := func(env protocol.Envelope) protocol.Code {
		var e protocol.Error
		_ = json.Unmarshal(env.Payload, &e)
		return e.Code
	}
	if got := w.roundTrip(t, "", envelope(t, protocol.TypeIntentRequest, "early", diagnoseRequest())); code(got) != protocol.CodeAuthRequired || got.IDString() != "early" {
		t.Fatalf("before authenticate: %s %s", got.Type, got.Payload)
	}
	if got := w.roundTrip(t, "", envelope(t, protocol.TypeAuthenticate, "a1", protocol.Authenticate{Scheme: "bearer", Token: "nope"})); code(got) != protocol.CodeAuthInvalid {
		t.Fatalf("wrong token: %s %s", got.Type, got.Payload)
	}
	got := w.roundTrip(t, "", envelope(t, protocol.TypeAuthenticate, "a2", protocol.Authenticate{Scheme: "bearer", Token: "bot-token-0123456789abcdef"}))
	var ar protocol.AuthenticateResponse
	_ = json.Unmarshal(got.Payload, &ar)
	if got.Type != protocol.TypeAuthenticateResponse || ar.Status != "authenticated" || ar.Identity == nil || *ar.Identity != "bot" ||
		ar.TrustLevel != "automated" || len(ar.AutoConfirmEffects) != 1 {
		t.Fatalf("authenticate_response %s", got.Payload)
	}
	ev := w.roundTrip(t, "", envelope(t, protocol.TypeIntentRequest, "e", diagnoseRequest()))
	if ev.Type != protocol.TypeIntentResponse {
		t.Fatalf("after authenticate: %s %s", ev.Type, ev.Payload)
	}
	// trust_level automated with filesystem listed: the report tool runs without a token.
	var ir protocol.IntentResponse
	_ = json.Unmarshal(ev.Payload, &ir)
	m := tool(t, &ir, "write_diagnosis_report")
	// Its progress messages come first, then the final response.
	if err := w.write(envelope(t, protocol.TypeInvokeRequest, "w", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}})); err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for {
		env := w.next(t)
		if env.Type == protocol.TypeProgress {
			var p protocol.Progress
			_ = json.Unmarshal(env.Payload, &p)
			statuses = append(statuses, p.Status)
			continue
		}
		if env.Type != protocol.TypeInvokeResponse || env.IDString() != "w" {
			t.Fatalf("automated identity without a token: %s %s", env.Type, env.Payload)
		}
		break
	}
	if strings.Join(statuses, ",") != "started,running,finalizing" {
		t.Errorf("progress %v", statuses)
	}
}

// TestAutomatedTrustIsExplicit: without trust_level automated, or with the
// effect not listed, confirmation is still required.
func TestAutomatedTrustIsExplicit(t *testing.T) {
	for _, id := range []manglecp.Identity{
		{Name: "plain", Token: "plain-token-0123456789abc", Permissions: []string{"*"}},
		{Name: "narrow", Token: "narrow-token-0123456789ab", Permissions: []string{"*"}, TrustLevel: "automated", AutoConfirmEffects: []string{"network"}},
	} {
		h := newHarness(t, nil, func(o *manglecp.Options) { o.Identities = []manglecp.Identity{id} })
		hdr := map[string]string{"Authorization": "Bearer " + id.Token}
		r := h.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "e", diagnoseRequest()), hdr)
		m := tool(t, r.intentResponse(t), "write_diagnosis_report")
		e := h.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "i", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}}), hdr).errorPayload(t)
		if e.Code != protocol.CodeConfirmationRequired {
			t.Errorf("%s: %s, want confirmation_required", id.Name, e.Code)
		}
	}
}
