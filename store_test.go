package manglecp_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// sharedStore hides the in-memory store's type, so servers take the path
// every shared store takes: encoded definitions, decoded on invoke.
type sharedStore struct{ manglecp.Store }

// TestServersShareAStore: two servers with one store behave as one for
// macro-tools (including ownership) and confirmation tokens.
func TestServersShareAStore(t *testing.T) {
	store := sharedStore{manglecp.NewMemoryStore(0)}
	ids := []manglecp.Identity{
		{Name: "alice", Token: "alice-token-0123456789", Permissions: []string{"*"}},
		{Name: "bob", Token: "bob-token-0123456789ab", Permissions: []string{"*"}},
	}
	mut := func(o *manglecp.Options) { o.Store, o.Identities = store, ids }
	a, b := newHarness(t, nil, mut), newHarness(t, nil, mut)
	alice := map[string]string{"Authorization": "Bearer " + ids[0].Token}
	bob := map[string]string{"Authorization": "Bearer " + ids[1].Token}

	resp := a.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "e", diagnoseRequest()), alice).intentResponse(t)
	chain := tool(t, resp, "diagnose_causal_chain")
	inv := map[string]any{"macro_id": chain.MacroID, "args": map[string]any{"request_id": "r42"}}
	out := b.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "i1", inv), alice).invokeResponse(t)
	if len(out.Observability.Events) == 0 && out.Observability.Summary == "" {
		t.Errorf("empty invoke response on the other server: %+v", out)
	}
	if e := b.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "i2", inv), bob).errorPayload(t); e.Code != protocol.CodeAuthInsufficient {
		t.Errorf("bob on the other server: %s", e.Code)
	}

	report := tool(t, resp, "write_diagnosis_report")
	conf := map[string]any{"macro_id": report.MacroID, "args": map[string]any{"request_id": "r42"}, "confirmation_token": a.srv.ConfirmationToken(report.MacroID)}
	b.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "w1", conf), alice).invokeResponse(t)
	if e := a.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "w2", conf), alice).errorPayload(t); e.Code != protocol.CodeConfirmationInvalid || !strings.Contains(e.Message, "already used") {
		t.Errorf("replay on the first server: %+v", e)
	}
}
