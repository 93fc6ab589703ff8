package manglecp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// TestClientValueLoggedBounded: an action whose error repeats a 1 MiB
// argument (a client's value) fails as execution_failed, and the server's
// ERROR line keeps at most 16 KiB of that error, marked as cut; before,
// the whole value went to the log at ERROR on every request (issue 35
// item 25: 5 MiB of log from 5 requests).
func TestClientValueLoggedBounded(t *testing.T) {
	rules := `
decl_intent("store", "Store a note.").
tool("save_note").
tool_action("save_note", "save").
tool_param("save_note", "note", "string", "The note.").
mandatory_for_intent("store", "save_note").
`
	var logs testenv.Buffer
	srv, err := manglecp.NewServer(manglecp.Domain{
		ID: "notes", Description: "d", Rules: fstest.MapFS{"domain/d.mg": {Data: []byte(rules)}},
		Actions: map[string]manglecp.ActionSpec{"save": {Run: func(_ context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
			return nil, fmt.Errorf("cannot save note %v", c.Args["note"])
		}}},
	}, &manglecp.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	send := func(typ protocol.MessageType, id string, payload any) *protocol.Envelope {
		env, _ := protocol.NewEnvelope(typ, id, payload)
		data, _ := env.Encode()
		return srv.Handle(context.Background(), &protocol.Inbound{Data: data})
	}
	var ir protocol.IntentResponse
	if err := json.Unmarshal(send(protocol.TypeIntentRequest, "e1", protocol.IntentRequest{Intent: protocol.Intent{Name: "store"}}).Payload, &ir); err != nil || len(ir.MacroTools) != 1 {
		t.Fatalf("evaluate: %v %+v", err, ir)
	}
	huge := strings.Repeat("x", 1<<20)
	before := len(logs.String())
	out := send(protocol.TypeInvokeRequest, "i1", protocol.InvokeRequest{MacroID: ir.MacroTools[0].MacroID, Args: map[string]any{"note": huge}})
	var pe protocol.Error
	_ = json.Unmarshal(out.Payload, &pe)
	if pe.Code != protocol.CodeExecutionFailed || strings.Contains(string(out.Payload), "xxxx") {
		t.Fatalf("invoke: %.300s", out.Payload)
	}
	logged := logs.String()[before:]
	if len(logged) > 20<<10 || !strings.Contains(logged, "level=ERROR") || !strings.Contains(logged, "cannot save note xxx") {
		t.Errorf("%d bytes of log for one request (want the error, at most about 16 KiB of it): %.300s", len(logged), logged)
	}
}
