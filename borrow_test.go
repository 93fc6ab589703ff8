package manglecp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

var _ transport.Handler = (*manglecp.Server)(nil)

// TestHandleKeepsNoData: the server keeps nothing of a message's bytes once
// Handle has returned (the transport.Handler contract: the HTTP binding
// reuses the buffer): after every answer the bytes are
// overwritten, and what the server kept (cached answers, macro-tools and
// their facts) still answers exactly as before.
func TestHandleKeepsNoData(t *testing.T) {
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), &manglecp.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	handle := func(data []byte) *protocol.Envelope {
		out := srv.Handle(ctx, &protocol.Inbound{Data: data})
		for i := range data {
			data[i] = 'x'
		}
		return out
	}
	large := diagnoseRequest()
	facts := diagnoseFacts()
	for i := range 3000 { // above every threshold of the large-request path
		facts = append(facts, map[string]any{"pred": "console_event", "args": []any{"s1", "info", fmt.Sprintf("message %d", i), 1771511300000 + i}})
	}
	large["facts"] = facts
	for _, tc := range []struct {
		name    string
		request map[string]any
	}{{"small", diagnoseRequest()}, {"large", large}} {
		t.Run(tc.name, func(t *testing.T) {
			first := handle(envelope(t, protocol.TypeIntentRequest, "e1", tc.request))
			if first.Type != protocol.TypeIntentResponse {
				t.Fatalf("%s: %s", first.Type, first.Payload)
			}
			var resp protocol.IntentResponse
			if err := protocol.DecodePayload(first.Payload, &resp); err != nil {
				t.Fatal(err)
			}
			// The result cache answers the same request from what it kept.
			again := handle(envelope(t, protocol.TypeIntentRequest, "e2", tc.request))
			var cached protocol.IntentResponse
			if err := protocol.DecodePayload(again.Payload, &cached); err != nil {
				t.Fatal(err)
			}
			resp.EvalDurationMS, cached.EvalDurationMS = 0, 0
			if a, b := mustJSON(resp), mustJSON(cached); a != b {
				t.Fatalf("the cached answer differs:\n%s\n%s", a, b)
			}
			// The macro-tool runs on the facts the server kept.
			m := tool(t, &resp, "diagnose_causal_chain")
			out := handle(envelope(t, protocol.TypeInvokeRequest, "i1", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}}))
			var inv protocol.InvokeResponse
			if out.Type != protocol.TypeInvokeResponse || protocol.DecodePayload(out.Payload, &inv) != nil {
				t.Fatalf("invoke: %s %s", out.Type, out.Payload)
			}
			got := mustJSON(inv.Result)
			for _, want := range []string{`"root_cause":"GET https://api.example.com/users returned HTTP 404"`, `"TypeError: Cannot read properties of null"`, `"request_id":"r42"`} {
				if !strings.Contains(got, want) {
					t.Errorf("the result lacks %s (bytes of a message kept?): %s", want, got)
				}
			}
		})
	}
}
