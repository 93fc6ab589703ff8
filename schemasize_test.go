package manglecp_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestSchemaFromFactsTooLarge: an input schema built from a client's
// facts (an enum of 300 one-KiB fact values) is over the 256 KiB schema
// limit of internal/schema. Invoking its tool answered 500 internal_error
// ("a defect of the rules"); it is the client's input, so the answer is
// 413 derivation_limit_exceeded, recoverable, naming the tool and the
// sizes and never a fact's value, and the server logs no ERROR. A
// smaller evaluation's tool of the same rules still runs.
func TestSchemaFromFactsTooLarge(t *testing.T) {
	rules := fstest.MapFS{"domain/d.mg": {Data: []byte(`decl_intent("pick", "Pick a note.").
decl_intent_fact("pick", "note", "required").
decl_predicate("note", "input", "A note's name.").
decl_arg("note", 0, "name", "string").
tool("read_note").
tool_action("read_note", "read").
tool_param("read_note", "name", "string", "The note.").
tool_param_required("read_note", "name").
tool_param_enum("read_note", "name", N) :- note(N).
mandatory_for_intent("pick", "read_note") :- note(_).
`)}}
	type in struct {
		Name string `json:"name"`
	}
	d := manglecp.Domain{ID: "notes", Rules: rules, Actions: map[string]manglecp.ActionSpec{
		"read": manglecp.Typed(func(_ context.Context, _ *manglecp.Call, a in) (*manglecp.Outcome, map[string]string, error) {
			return nil, map[string]string{"read": a.Name}, nil
		})}}
	var log testenv.Buffer
	srv, err := manglecp.NewServer(d, &manglecp.Options{ConfirmationKey: []byte("schema size test key"),
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	ctx := context.Background()
	s, err := client.Dial(ctx, hs.URL, &client.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	pick := func(n int) (*protocol.MacroTool, string) {
		t.Helper()
		var facts []protocol.Fact
		for i := range n {
			facts = append(facts, protocol.NewFact("note", fmt.Sprintf("%04d-%s", i, strings.Repeat("secret", 170))))
		}
		res, err := s.Evaluate(ctx, &protocol.IntentRequest{Intent: protocol.Intent{Name: "pick"}, Facts: facts})
		if err != nil || len(res.MacroTools) != 1 {
			t.Fatalf("evaluate %d notes: %v %v", n, res, err)
		}
		return &res.MacroTools[0], facts[0].Args[0].(string)
	}

	m, name := pick(300)
	_, err = s.Invoke(ctx, &protocol.InvokeRequest{MacroID: m.MacroID, Args: map[string]any{"name": name}})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusRequestEntityTooLarge || ce.Payload.Code != protocol.CodeDerivationLimitExceeded || !ce.Payload.Recoverable {
		t.Fatalf("invoking a tool whose schema grew from 300 KiB of facts: %v, want 413 derivation_limit_exceeded", err)
	}
	msg := ce.Payload.Message
	if !strings.Contains(msg, "read_note") || !strings.Contains(msg, "over the limit of 262144") || strings.Contains(msg, "secret") {
		t.Errorf("message: %q", msg)
	}
	if ce.Payload.Details == nil || ce.Payload.Details.MacroID != m.MacroID {
		t.Errorf("details: %+v", ce.Payload.Details)
	}
	if strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("a client's oversized facts logged at ERROR:\n%.2000s", log.String())
	}
	t.Logf("413 %s: %s", ce.Payload.Code, msg)

	m, name = pick(3)
	if _, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: m.MacroID, Args: map[string]any{"name": name}}); err != nil {
		t.Errorf("a small evaluation's tool: %v", err)
	}
}
