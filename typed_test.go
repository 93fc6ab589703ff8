package manglecp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

const typedRules = `
decl_intent("triage", "Triage tickets.").
decl_intent_fact("triage", "ticket", "required").
decl_predicate("ticket", "input", "A ticket.").
decl_arg("ticket", 0, "id", "string").
decl_arg("ticket", 1, "severity", "number").
tool("escalate_ticket").
tool_description("escalate_ticket", "Escalate a ticket.").
tool_summary("escalate_ticket", "Escalate a ticket.").
tool_action("escalate_ticket", "escalate").
tool_param("escalate_ticket", "ticket_id", "string", "The ticket.").
tool_param("escalate_ticket", "priority", "integer", "The priority.").
tool_param_required("escalate_ticket", "ticket_id").
mandatory_for_intent("triage", "escalate_ticket") :- ticket(_, _).
`

type escalateIn struct {
	TicketID string `json:"ticket_id"`
	Priority int64  `json:"priority,omitempty"`
}

type escalateOut struct {
	Escalated string `json:"escalated"`
	Priority  int64  `json:"priority"`
}

// typedCall evaluates triage and invokes escalate_ticket with args on a
// server whose escalate action is spec.
func typedCall(t *testing.T, spec manglecp.ActionSpec, args map[string]any) (protocol.MacroTool, *protocol.Envelope) {
	t.Helper()
	srv, err := manglecp.NewServer(manglecp.Domain{
		ID: "tickets", Description: "t", Rules: fstest.MapFS{"domain/t.mg": {Data: []byte(typedRules)}},
		Actions: map[string]manglecp.ActionSpec{"escalate": spec},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	send := func(typ protocol.MessageType, payload any) *protocol.Envelope {
		env, _ := protocol.NewEnvelope(typ, "r1", payload)
		data, _ := env.Encode()
		return srv.Handle(ctx, &protocol.Inbound{Data: data})
	}
	resp := send(protocol.TypeIntentRequest, protocol.IntentRequest{
		Intent:  protocol.Intent{Name: "triage"},
		Facts:   []protocol.Fact{protocol.NewFact("ticket", "T-1", 5)},
		Options: &protocol.Options{DisclosurePreference: protocol.DisclosureFull},
	})
	var ir protocol.IntentResponse
	if err := json.Unmarshal(resp.Payload, &ir); err != nil || len(ir.MacroTools) != 1 {
		t.Fatalf("evaluate: %s", resp.Payload)
	}
	return ir.MacroTools[0], send(protocol.TypeInvokeRequest, protocol.InvokeRequest{MacroID: ir.MacroTools[0].MacroID, Args: args})
}

func TestTyped(t *testing.T) {
	ok := manglecp.Typed(func(ctx context.Context, call *manglecp.Call, in escalateIn) (*manglecp.Outcome, escalateOut, error) {
		return &manglecp.Outcome{Summary: "done", Assert: []protocol.Fact{protocol.NewFact("escalated", in.TicketID)}},
			escalateOut{Escalated: in.TicketID, Priority: in.Priority}, nil
	})
	failing := manglecp.Typed(func(ctx context.Context, call *manglecp.Call, in escalateIn) (*manglecp.Outcome, escalateOut, error) {
		return nil, escalateOut{}, errors.New("ticket system down at /internal/path")
	})
	tests := []struct {
		name     string
		spec     manglecp.ActionSpec
		args     map[string]any
		wantCode protocol.Code
		want     map[string]any
	}{
		{"decoded and encoded", ok, map[string]any{"ticket_id": "T-1", "priority": 2}, "", map[string]any{"escalated": "T-1", "priority": json.Number("2")}},
		{"optional field absent", ok, map[string]any{"ticket_id": "T-1"}, "", map[string]any{"escalated": "T-1", "priority": json.Number("0")}},
		{"handler error is masked", failing, map[string]any{"ticket_id": "T-1"}, protocol.CodeExecutionFailed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, resp := typedCall(t, tt.spec, tt.args)
			if props, _ := tool.OutputSchema["properties"].(map[string]any); props["escalated"] == nil {
				t.Errorf("output_schema not inferred from the Out type: %v", tool.OutputSchema)
			}
			if tt.wantCode != "" {
				var perr protocol.Error
				_ = json.Unmarshal(resp.Payload, &perr)
				if resp.Type != protocol.TypeError || perr.Code != tt.wantCode {
					t.Fatalf("got %s %s, want error %s", resp.Type, resp.Payload, tt.wantCode)
				}
				if strings.Contains(string(resp.Payload), "/internal/path") || strings.Contains(string(resp.Payload), "ticket system") {
					t.Errorf("handler error text reached the client: %s", resp.Payload)
				}
				return
			}
			dec := json.NewDecoder(bytesReader(resp.Payload))
			dec.UseNumber()
			var out protocol.InvokeResponse
			if err := dec.Decode(&out); err != nil || resp.Type != protocol.TypeInvokeResponse {
				t.Fatalf("got %s %s", resp.Type, resp.Payload)
			}
			for k, v := range tt.want {
				if out.Result[k] != v {
					t.Errorf("result[%s] = %#v, want %#v", k, out.Result[k], v)
				}
			}
			if out.Observability.Summary != "done" || len(out.StateDelta.Assert) != 1 {
				t.Errorf("outcome fields lost: summary %q, assert %v", out.Observability.Summary, out.StateDelta.Assert)
			}
		})
	}
}

func TestTypedRejectsNonObjects(t *testing.T) {
	for name, register := range map[string]func(){
		"string input": func() {
			manglecp.Typed(func(context.Context, *manglecp.Call, string) (*manglecp.Outcome, escalateOut, error) {
				return nil, escalateOut{}, nil
			})
		},
		"slice output": func() {
			manglecp.Typed(func(context.Context, *manglecp.Call, escalateIn) (*manglecp.Outcome, []string, error) {
				return nil, nil, nil
			})
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Typed accepted a type that is not a JSON object")
				}
			}()
			register()
		})
	}
}

// TestTypedMismatchAtRegistration: a Typed handler whose struct does not
// fit the parameters the rules declare stops NewServer, naming the tool,
// the field and the tool_param's file:line; before, it failed only when
// invoked, as execution_failed.
func TestTypedMismatchAtRegistration(t *testing.T) {
	tests := []struct {
		name string
		spec manglecp.ActionSpec
		want []string // "" : NewServer succeeds
	}{
		{"string field for an integer parameter", manglecp.Typed(func(_ context.Context, _ *manglecp.Call, in struct {
			TicketID string `json:"ticket_id"`
			Priority string `json:"priority"`
		}) (*manglecp.Outcome, escalateOut, error) {
			return nil, escalateOut{}, nil
		}), []string{`mine/domain/t.mg:12: tool "escalate_ticket"`, `field .Priority (string) cannot hold parameter "priority", which is an integer`}},
		{"no field for a parameter", manglecp.Typed(func(_ context.Context, _ *manglecp.Call, in struct {
			TicketID string `json:"ticket_id"`
		}) (*manglecp.Outcome, escalateOut, error) {
			return nil, escalateOut{}, nil
		}), []string{`mine/domain/t.mg:12: tool "escalate_ticket"`, `has no field for parameter "priority"`}},
		{"int for a number is fine as float64", manglecp.Typed(func(_ context.Context, _ *manglecp.Call, in struct {
			TicketID string  `json:"ticket_id"`
			Priority float64 `json:"priority"`
		}) (*manglecp.Outcome, escalateOut, error) {
			return nil, escalateOut{}, nil
		}), nil},
		{"map input takes anything", manglecp.Typed(func(_ context.Context, _ *manglecp.Call, in map[string]any) (*manglecp.Outcome, escalateOut, error) {
			return nil, escalateOut{}, nil
		}), nil},
		{"the matching struct", manglecp.Typed(func(_ context.Context, _ *manglecp.Call, in escalateIn) (*manglecp.Outcome, escalateOut, error) {
			return nil, escalateOut{}, nil
		}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := manglecp.NewServer(manglecp.Domain{
				ID: "tickets", Description: "t", Rules: fstest.MapFS{"domain/t.mg": {Data: []byte(typedRules)}}, RulesName: "mine",
				Actions: map[string]manglecp.ActionSpec{"escalate": tt.spec},
			}, &manglecp.Options{ConfirmationKey: []byte("k")})
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("NewServer: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("NewServer accepted a Typed struct that does not fit the parameters")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
