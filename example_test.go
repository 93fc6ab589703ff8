package manglecp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
)

// A server answers messages in process: evaluate an intent, then invoke the
// macro-tool the rules selected.
func ExampleServer_Handle() {
	dir, _ := os.MkdirTemp("", "reports")
	defer os.RemoveAll(dir)
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: dir}), nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	req, _ := protocol.NewEnvelope(protocol.TypeIntentRequest, "req-1", protocol.IntentRequest{
		Intent: protocol.Intent{Name: "diagnose_error"},
		Facts: []protocol.Fact{
			protocol.NewFact("current_url", "https://app.example.com"),
			protocol.NewFact("console_event", "s1", "error", "TypeError: x is null", 1771510200000),
			protocol.NewFact("net_response", "s1", "r42", 404, 1771510199500),
		},
		Options: &protocol.Options{DisclosurePreference: protocol.DisclosureFull},
	})
	data, _ := req.Encode()
	resp := srv.Handle(ctx, &protocol.Inbound{Data: data})
	var ir protocol.IntentResponse
	_ = json.Unmarshal(resp.Payload, &ir)
	var macroID string
	for _, m := range ir.MacroTools {
		fmt.Println(m.Name, m.Metadata.SelectionPhase, m.Metadata.Score)
		if m.Name == "diagnose_causal_chain" {
			macroID = m.MacroID
		}
	}

	inv, _ := protocol.NewEnvelope(protocol.TypeInvokeRequest, "inv-1", protocol.InvokeRequest{
		MacroID: macroID, Args: map[string]any{"request_id": "r42"},
	})
	data, _ = inv.Encode()
	resp = srv.Handle(ctx, &protocol.Inbound{Data: data})
	var out protocol.InvokeResponse
	_ = json.Unmarshal(resp.Payload, &out)
	fmt.Println(out.Result["root_cause"])
	// Output:
	// diagnose_causal_chain skeleton 100
	// inspect_console_errors skeleton 100
	// write_diagnosis_report flesh 60
	// request r42 returned HTTP 404
}
