package mcpbridge

import (
	"encoding/json"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestIntentToolsRefer checks the facts encoding of the intent tools: each
// predicate as the JSON array the model sends, required ones starred, and
// a long predicate spelled out once and referred to by later tools.
func TestIntentToolsRefer(t *testing.T) {
	profile := &protocol.FactsProfile{Predicates: []protocol.PredicateSchema{
		{Predicate: "url", Arity: 1, ArgNames: []string{"u"}},
		{Predicate: "net_response", Arity: 4, ArgNames: []string{"session_id", "request_id", "status", "timestamp"}},
	}}
	tools := intentTools([]protocol.IntentDecl{
		{Name: "observe", RequiredFacts: []string{"url"}, OptionalFacts: []string{"net_response"}},
		{Name: "diagnose", RequiredFacts: []string{"url"}, OptionalFacts: []string{"net_response"}},
	}, profile)
	tests := []struct{ intent, want string }{
		{"diagnose", `["url",u]*; ["net_response",session_id,request_id,status,timestamp]`},
		{"observe", `["url",u]*; net_response as in diagnose`},
	}
	for _, tt := range tests {
		props := tools[tt.intent].InputSchema.(map[string]any)["properties"].(map[string]any)
		got := props["facts"].(map[string]any)["description"]
		if got != tt.want {
			t.Errorf("%s facts: got %q, want %q", tt.intent, got, tt.want)
		}
	}
}

// TestObjectSchemaEnums checks that a string enum loses its redundant
// type and that other properties keep theirs.
func TestObjectSchemaEnums(t *testing.T) {
	in := map[string]any{
		"$schema": draft202012, "type": "object", "additionalProperties": false,
		"properties": map[string]any{
			"path":  map[string]any{"type": "string", "enum": []any{"a.go", "b.go"}},
			"level": map[string]any{"type": "integer", "enum": []any{1, 2}},
			"text":  map[string]any{"type": "string", "description": "Literal."},
		},
		"required": []any{"path"},
	}
	raw, _ := json.Marshal(objectSchema(in))
	want := `{"properties":{"level":{"enum":[1,2],"type":"integer"},"path":{"enum":["a.go","b.go"]},"text":{"description":"Literal.","type":"string"}},"required":["path"],"type":"object"}`
	if string(raw) != want {
		t.Errorf("got  %s\nwant %s", raw, want)
	}
	if in["properties"].(map[string]any)["path"].(map[string]any)["type"] != "string" {
		t.Error("objectSchema changed the server's schema")
	}
}

// TestSingleIntentTool checks the single intent tool's text: one line per
// intent (name: purpose, required facts), and every predicate the intents
// read spelled once, in the order the intents (by name) first read it.
func TestSingleIntentTool(t *testing.T) {
	profile := &protocol.FactsProfile{Predicates: []protocol.PredicateSchema{
		{Predicate: "url", Arity: 1, ArgNames: []string{"u"}},
		{Predicate: "net_response", Arity: 4, ArgNames: []string{"session_id", "request_id", "status", "timestamp"}},
	}}
	tl := singleIntentTool([]protocol.IntentDecl{
		{Name: "observe", Description: "Observe\n  the page.", OptionalFacts: []string{"url", "net_response"}},
		{Name: "diagnose", Description: "Diagnose errors.", RequiredFacts: []string{"url"}, OptionalFacts: []string{"net_response", "other"}},
	}, profile)
	raw, _ := json.Marshal(tl)
	want := `{"annotations":{"idempotentHint":true,"readOnlyHint":true},` +
		`"description":"Evaluate an intent with facts:\ndiagnose: Diagnose errors. (needs url)\nobserve: Observe the page.",` +
		`"inputSchema":{"properties":{"facts":{"description":"[\"url\",u]; [\"net_response\",session_id,request_id,status,timestamp]; [\"other\",...]","type":"array"},` +
		`"intent":{"enum":["diagnose","observe"]}},"required":["intent"],"type":"object"},"name":"evaluate_intent"}`
	if string(raw) != want {
		t.Errorf("got  %s\nwant %s", raw, want)
	}
}
