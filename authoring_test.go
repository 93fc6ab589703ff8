package manglecp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// TestRuleDefectIsInternalError: a defect of the rules that load cannot
// see (here a parameter type the rules derive from a fact, "integr") is
// the server's, never the client's: invoking the tool answers
// internal_error (500, not recoverable, masked) and the cause is logged
// with the request id; before, it was schema_validation_failed (400,
// recoverable) "the tool's input schema is unavailable".
func TestRuleDefectIsInternalError(t *testing.T) {
	rules := `
decl_intent("triage", "Triage.").
decl_predicate("mode_type", "input", "The type of the mode parameter.").
decl_arg("mode_type", 0, "type", "string").
tool("show_logs").
tool_action("show_logs", "show").
tool_param("show_logs", "mode", Type, "The mode.") :- mode_type(Type).
mandatory_for_intent("triage", "show_logs").
`
	var logs testenv.Buffer
	srv, err := manglecp.NewServer(manglecp.Domain{
		ID: "incidents", Description: "d", Rules: fstest.MapFS{"domain/d.mg": {Data: []byte(rules)}},
		Actions: map[string]manglecp.ActionSpec{"show": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
			t.Error("the action ran with a schema that does not compile")
			return &manglecp.Outcome{}, nil
		}}},
	}, &manglecp.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	send := func(typ protocol.MessageType, id string, payload any) *protocol.Envelope {
		env, _ := protocol.NewEnvelope(typ, id, payload)
		data, _ := env.Encode()
		return srv.Handle(ctx, &protocol.Inbound{Data: data})
	}
	resp := send(protocol.TypeIntentRequest, "e1", protocol.IntentRequest{
		Intent:  protocol.Intent{Name: "triage"},
		Facts:   []protocol.Fact{protocol.NewFact("mode_type", "integr")},
		Options: &protocol.Options{DisclosurePreference: protocol.DisclosureFull},
	})
	var ir protocol.IntentResponse
	if err := json.Unmarshal(resp.Payload, &ir); err != nil || len(ir.MacroTools) != 1 {
		t.Fatalf("evaluate: %s", resp.Payload)
	}
	out := send(protocol.TypeInvokeRequest, "inv-42", protocol.InvokeRequest{MacroID: ir.MacroTools[0].MacroID, Args: map[string]any{"mode": "x"}})
	var pe protocol.Error
	if err := json.Unmarshal(out.Payload, &pe); err != nil {
		t.Fatalf("invoke: %s", out.Payload)
	}
	if pe.Code != protocol.CodeInternalError || pe.Recoverable {
		t.Fatalf("invoke answered %s (recoverable %v): %s; want internal_error, not recoverable", pe.Code, pe.Recoverable, out.Payload)
	}
	if strings.Contains(string(out.Payload), "integr") || strings.Contains(string(out.Payload), "schema") {
		t.Errorf("the answer leaks the cause: %s", out.Payload)
	}
	if l := logs.String(); !strings.Contains(l, "inv-42") || !strings.Contains(l, "does not compile") {
		t.Errorf("the log does not name the request and the cause:\n%s", l)
	}
}

// TestDefaultConfirmationKey: a server with no ConfirmationKey uses
// MANGLECP_CONFIRMATION_KEY, else the user's key file (created on first
// use), the key `manglecp invoke --confirm` signs with; before, it made a
// random key at every start, so tokens from the CLI were
// confirmation_invalid.
func TestDefaultConfirmationKey(t *testing.T) {
	rules := fstest.MapFS{
		"domain/t.mg": {Data: []byte(typedRules)},
		"policy/p.mg": {Data: []byte(`requires_confirmation("escalate_ticket").` + "\n")},
	}
	for _, tt := range []struct {
		name, env string
		opts      *manglecp.Options
	}{
		{"environment, nil options", "key from the environment", nil},
		{"key file, nil options", "", nil},
		{"key file, zero options", "", &manglecp.Options{Logger: slog.New(slog.DiscardHandler)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			t.Setenv("MANGLECP_CONFIRMATION_KEY", tt.env)
			srv, err := manglecp.NewServer(manglecp.Domain{ID: "tickets", Description: "t", Rules: rules,
				Actions: map[string]manglecp.ActionSpec{"escalate": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
					return &manglecp.Outcome{Summary: "escalated"}, nil
				}}}}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			key := []byte(tt.env)
			if tt.env == "" {
				dir, _ := os.UserConfigDir()
				raw, err := os.ReadFile(filepath.Join(dir, "manglecp", "confirmation.key"))
				if err != nil {
					t.Fatalf("no key file: %v", err)
				}
				key = bytes.TrimSpace(raw)
			}
			ctx := context.Background()
			send := func(typ protocol.MessageType, payload any) *protocol.Envelope {
				env, _ := protocol.NewEnvelope(typ, "r1", payload)
				data, _ := env.Encode()
				return srv.Handle(ctx, &protocol.Inbound{Data: data})
			}
			resp := send(protocol.TypeIntentRequest, protocol.IntentRequest{Intent: protocol.Intent{Name: "triage"},
				Facts: []protocol.Fact{protocol.NewFact("ticket", "T-1", 5)}})
			var ir protocol.IntentResponse
			if err := json.Unmarshal(resp.Payload, &ir); err != nil || len(ir.MacroTools) != 1 {
				t.Fatalf("evaluate: %s", resp.Payload)
			}
			id := ir.MacroTools[0].MacroID
			out := send(protocol.TypeInvokeRequest, protocol.InvokeRequest{MacroID: id, Args: map[string]any{"ticket_id": "T-1"},
				ConfirmationToken: protocol.ConfirmationToken(key, id, time.Now().Add(time.Minute))})
			if out.Type != protocol.TypeInvokeResponse {
				t.Fatalf("a token signed with the default key was refused: %s", out.Payload)
			}
		})
	}
}

// TestMain points the user config directory at a temporary one: servers
// with no ConfirmationKey create their key file there, never in the
// home directory of whoever runs the tests.
func TestMain(m *testing.M) { os.Exit(testenv.RunInConfigHome(m)) }

// TestReloadChecksTheContract: a reload loads rules exactly as the start
// does, so a contract mistake (here a misspelled contract predicate and
// an intent nobody declared) is refused naming file and line, and the
// previous rules keep serving.
func TestReloadChecksTheContract(t *testing.T) {
	srv, err := manglecp.NewServer(manglecp.Domain{ID: "tickets", Description: "t", RulesName: "mine",
		Rules: fstest.MapFS{"domain/t.mg": {Data: []byte(typedRules)}},
		Actions: map[string]manglecp.ActionSpec{"escalate": {Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
			return &manglecp.Outcome{}, nil
		}}}}, &manglecp.Options{ConfirmationKey: []byte("k"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	broken := typedRules + "tool_descripton(\"escalate_ticket\", \"Escalate.\").\nrelevant_to_intent(\"triag\", \"escalate_ticket\", 10).\n"
	err = srv.Reload(fstest.MapFS{"domain/t.mg": {Data: []byte(broken)}})
	for _, want := range []string{"mine/domain/t.mg:15: tool_descripton is not a contract predicate", "did you mean tool_description?",
		"mine/domain/t.mg:16: relevant_to_intent names the intent \"triag\""} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Reload: %v\nwant %q", err, want)
		}
	}
	if got := srv.Manifest().Intents; len(got) != 1 || got[0].Name != "triage" {
		t.Errorf("the previous rules stopped serving: %v", got)
	}
}
