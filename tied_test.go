package manglecp_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestTiedParameters: tool_param_pair ties rollback's version to its
// service (issue 39 item 5: two enums accepted checkout with a version of
// payments). The input schema says so (allOf/anyOf of const pairs), a
// version of another service is schema_validation_failed before the
// handler runs, and each deployed pair runs.
func TestTiedParameters(t *testing.T) {
	rules := fstest.MapFS{"domain/d.mg": {Data: []byte(`decl_intent("mitigate", "Mitigate an incident.").
decl_intent_fact("mitigate", "deploy", "required").
decl_predicate("deploy", "input", "A deployed version of a service.").
decl_arg("deploy", 0, "service", "string").
decl_arg("deploy", 1, "version", "string").
tool("rollback").
tool_action("rollback", "rollback").
tool_param("rollback", "service", "string", "The service.").
tool_param("rollback", "version", "string", "The version to go back to.").
tool_param_required("rollback", "service").
tool_param_required("rollback", "version").
tool_param_enum("rollback", "service", S) :- deploy(S, _).
tool_param_enum("rollback", "version", V) :- deploy(_, V).
tool_param_pair("rollback", "service", S, "version", V) :- deploy(S, V).
mandatory_for_intent("mitigate", "rollback") :- deploy(_, _).
`)}}
	ran := 0
	type in struct {
		Service string `json:"service"`
		Version string `json:"version"`
	}
	d := manglecp.Domain{ID: "oncall", Rules: rules, Actions: map[string]manglecp.ActionSpec{
		"rollback": manglecp.Typed(func(_ context.Context, _ *manglecp.Call, a in) (*manglecp.Outcome, map[string]string, error) {
			ran++
			return nil, map[string]string{"rolled_back": a.Service + "@" + a.Version}, nil
		})}}
	srv, err := manglecp.NewServer(d, &manglecp.Options{ConfirmationKey: []byte("tied test key"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()
	ctx := context.Background()
	s, err := client.Dial(ctx, hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Evaluate(ctx, &protocol.IntentRequest{Intent: protocol.Intent{Name: "mitigate"}, Facts: []protocol.Fact{
		protocol.NewFact("deploy", "checkout", "v41"), protocol.NewFact("deploy", "payments", "v7")}})
	if err != nil || len(res.MacroTools) != 1 {
		t.Fatalf("evaluate: %v %v", res, err)
	}
	m := res.MacroTools[0]
	if all, _ := m.InputSchema["allOf"].([]any); len(all) != 1 {
		t.Errorf("input_schema has no allOf of the pairs: %v", m.InputSchema)
	}
	invoke := func(service, version string) error {
		_, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: m.MacroID, Args: map[string]any{"service": service, "version": version}})
		return err
	}
	for _, bad := range [][2]string{{"checkout", "v7"}, {"payments", "v41"}} {
		err := invoke(bad[0], bad[1])
		if pe, ok := protocol.AsError(err); !ok || pe.Code != protocol.CodeSchemaValidationFailed {
			t.Errorf("rollback(%s, %s): %v, want schema_validation_failed", bad[0], bad[1], err)
		} else {
			t.Logf("rollback(%s, %s): %s", bad[0], bad[1], strings.TrimSpace(pe.Message))
		}
	}
	if ran != 0 {
		t.Errorf("the handler ran %d times for pairs that do not go together", ran)
	}
	for _, good := range [][2]string{{"checkout", "v41"}, {"payments", "v7"}} {
		if err := invoke(good[0], good[1]); err != nil {
			t.Errorf("rollback(%s, %s): %v", good[0], good[1], err)
		}
	}
	if ran != 2 {
		t.Errorf("the handler ran %d times, want 2", ran)
	}
	// A handler that says nothing (no Outcome): the summary says it ran,
	// not "rollback ran 0 steps." (issue 39 item 6).
	out, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: m.MacroID, Args: map[string]any{"service": "checkout", "version": "v41"}})
	if err != nil || out.Observability.Summary != "rollback ran." {
		t.Errorf("summary %q (%v), want \"rollback ran.\"", out.Observability.Summary, err)
	}
}
