package manglecp_test

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// sharedStore is a store given to the servers (as a shared store is):
// they store encoded definitions and decode them on invoke.
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

// TestUnknownRecordVersionIsNotFound: a replica reading a macro-tool
// stored in a record version it does not know (as a newer replica of a
// rolling upgrade writes) answers macro_not_found and logs why; it never
// reads the record into its own version's fields.
func TestUnknownRecordVersionIsNotFound(t *testing.T) {
	shared := manglecp.NewMemoryStore(0)
	mut := func(o *manglecp.Options) { o.Store = shared }
	a := newHarness(t, nil, mut)
	resp := a.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "e", diagnoseRequest()), nil).intentResponse(t)
	chain := tool(t, resp, "diagnose_causal_chain")
	ctx := context.Background()
	raw, err := shared.GetMacro(ctx, chain.MacroID)
	if err != nil || !bytes.HasPrefix(raw, []byte(`{"v":1,`)) {
		t.Fatalf("stored record %.40q %v", raw, err)
	}
	inv := map[string]any{"macro_id": chain.MacroID, "args": map[string]any{"request_id": "r42"}}
	for _, v := range []string{`{"v":2,`, `{"v":0,`, `{`} {
		next := append([]byte(v), raw[len(`{"v":1,`):]...)
		if err := shared.PutMacros(ctx, []manglecp.StoredMacro{{ID: chain.MacroID, Data: next, TTL: time.Hour}}); err != nil {
			t.Fatal(err)
		}
		b := newHarness(t, nil, mut) // nothing decoded yet: it reads the store
		if e := b.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "i1", inv), nil).errorPayload(t); e.Code != protocol.CodeMacroNotFound {
			t.Errorf("%s...: %s, want macro_not_found", v, e.Code)
		}
		if l := b.logs.String(); !strings.Contains(l, "stored macro-tool rejected") || !strings.Contains(l, `"request_id":"i1"`) {
			t.Errorf("%s...: the refusal is not logged with the request id:\n%s", v, l)
		}
	}
	// The evaluating server keeps its decoded definition: no store read.
	if r := a.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "i2", inv), nil); r.env.Type != protocol.TypeInvokeResponse {
		t.Errorf("the evaluating server: %s", r.raw)
	}
}

// countingStore counts the definitions read from the store it wraps.
type countingStore struct {
	manglecp.Store
	gets atomic.Int64
}

func (c *countingStore) GetMacro(ctx context.Context, id string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.GetMacro(ctx, id)
}

// TestDecodedCacheInFrontOfStore: whatever the store, a server keeps the
// definitions it evaluated or decoded: the evaluating server invokes
// without reading the store, another reads it once, then not again.
func TestDecodedCacheInFrontOfStore(t *testing.T) {
	st := &countingStore{Store: manglecp.NewMemoryStore(0)}
	mut := func(o *manglecp.Options) { o.Store = st }
	a, b := newHarness(t, nil, mut), newHarness(t, nil, mut)
	resp := a.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "e", diagnoseRequest()), nil).intentResponse(t)
	inv := map[string]any{"macro_id": tool(t, resp, "diagnose_causal_chain").MacroID, "args": map[string]any{"request_id": "r42"}}
	for i, c := range []struct {
		h     *harness
		reads int64
	}{{a, 0}, {a, 0}, {b, 1}, {b, 1}} {
		c.h.post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "i", inv), nil).invokeResponse(t)
		if n := st.gets.Load(); n != c.reads {
			t.Errorf("invoke %d: %d store reads, want %d", i, n, c.reads)
		}
	}
	if entries, bytes := b.srv.CacheStats(); entries != 1 || bytes <= 0 {
		t.Errorf("the other server keeps %d definitions (%d bytes), want the one it decoded", entries, bytes)
	}
}
