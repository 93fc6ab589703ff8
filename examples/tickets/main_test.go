package main

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/serve"
)

// TestTickets serves the example domain over HTTP with serve.Serve and
// drives it with the client library: the rules propose escalate_ticket for
// the severe ticket only, and the typed handler runs.
func TestTickets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- serve.Serve(ctx, ln, Domain(), &serve.Options{Ready: func(net.Addr) { close(ready) }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	<-ready

	s, err := client.Dial(ctx, "http://"+ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := s.Evaluate(ctx, &protocol.IntentRequest{
		Intent: protocol.Intent{Name: "triage"},
		Facts:  []protocol.Fact{protocol.NewFact("ticket", "T-1", 2), protocol.NewFact("ticket", "T-2", 5)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.MacroTools) != 1 || resp.MacroTools[0].Name != "escalate_ticket" {
		t.Fatalf("tools = %+v, want escalate_ticket", resp.MacroTools)
	}
	if _, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: resp.MacroTools[0].MacroID, Args: map[string]any{"ticket_id": "T-1"}}); !errors.Is(err, &protocol.Error{Code: protocol.CodeSchemaValidationFailed}) {
		t.Errorf("invoking with the non-severe ticket: err = %v, want schema_validation_failed", err)
	}
	out, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: resp.MacroTools[0].MacroID, Args: map[string]any{"ticket_id": "T-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result["escalated"] != "T-2" || out.Result["queue"] != "on-call" {
		t.Errorf("result = %v", out.Result)
	}

	// No severe ticket: the rules propose nothing.
	resp, err = s.Evaluate(ctx, &protocol.IntentRequest{
		Intent: protocol.Intent{Name: "triage"},
		Facts:  []protocol.Fact{protocol.NewFact("ticket", "T-1", 2)},
	})
	if err != nil || len(resp.MacroTools) != 0 {
		t.Errorf("with no severe ticket: tools %v, err %v", resp, err)
	}
}
