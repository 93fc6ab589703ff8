package manglecp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// A complete custom domain: one intent, one predicate, one tool with a
// typed handler. The rules decide when the tool is proposed and which
// tickets it accepts; the handler gets a Go struct and returns one.
func ExampleTyped() {
	rules := fstest.MapFS{"domain/tickets.mg": {Data: []byte(`
decl_intent("triage", "Triage open support tickets.").
decl_intent_fact("triage", "ticket", "required").
decl_predicate("ticket", "input", "An open support ticket and its severity (1-5).").
decl_arg("ticket", 0, "id", "string").
decl_arg("ticket", 1, "severity", "integer").

tool("escalate_ticket").
tool_description("escalate_ticket", "Escalate a severe ticket to the on-call queue.").
tool_summary("escalate_ticket", "Escalate a severe ticket.").
tool_action("escalate_ticket", "escalate").
tool_param("escalate_ticket", "ticket_id", "string", "The ticket to escalate.").
tool_param_required("escalate_ticket", "ticket_id").

severe(Id) :- ticket(Id, Severity), Severity >= 4.
mandatory_for_intent("triage", "escalate_ticket") :- severe(_).
tool_param_enum("escalate_ticket", "ticket_id", Id) :- severe(Id).
`)}}

	type in struct {
		TicketID string `json:"ticket_id"`
	}
	type out struct {
		Escalated string `json:"escalated"`
	}
	escalate := func(ctx context.Context, call *manglecp.Call, args in) (*manglecp.Outcome, out, error) {
		return nil, out{Escalated: args.TicketID}, nil
	}

	srv, err := manglecp.NewServer(manglecp.Domain{
		ID: "tickets", Description: "Support ticket triage.", Rules: rules,
		Actions: map[string]manglecp.ActionSpec{"escalate": manglecp.Typed(escalate)},
	}, nil)
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	send := func(typ protocol.MessageType, payload, into any) {
		env, _ := protocol.NewEnvelope(typ, "r1", payload)
		data, _ := env.Encode()
		resp := srv.Handle(ctx, &protocol.Inbound{Data: data})
		_ = json.Unmarshal(resp.Payload, into)
	}
	var ir protocol.IntentResponse
	send(protocol.TypeIntentRequest, protocol.IntentRequest{
		Intent: protocol.Intent{Name: "triage"},
		Facts:  []protocol.Fact{protocol.NewFact("ticket", "T-1", 2), protocol.NewFact("ticket", "T-2", 5)},
	}, &ir)
	tool := ir.MacroTools[0]
	fmt.Println(tool.Name, tool.InputSchema["properties"].(map[string]any)["ticket_id"].(map[string]any)["enum"])

	var res protocol.InvokeResponse
	send(protocol.TypeInvokeRequest, protocol.InvokeRequest{MacroID: tool.MacroID, Args: map[string]any{"ticket_id": "T-2"}}, &res)
	fmt.Println(res.Result["escalated"])
	// Output:
	// escalate_ticket [T-2]
	// T-2
}
