package mcpbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// withIntents returns the fake with n intents: its diagnose and observe,
// then inspect_1, inspect_2, ... reading url.
func withIntents(n int) *fakeServer {
	f := newFake()
	for i := len(f.manifest.Intents); i < n; i++ {
		f.manifest.Intents = append(f.manifest.Intents, protocol.IntentDecl{
			Name: fmt.Sprintf("inspect_%d", i-1), Description: "Inspect something", OptionalFacts: []string{"url"},
		})
	}
	return f
}

// TestIntentToolsModes checks the tool list of each IntentTools choice:
// per-intent lists one tool per intent, single the one evaluate_intent
// tool, and auto picks by the number of intents (per-intent up to
// MaxPerIntentTools).
func TestIntentToolsModes(t *testing.T) {
	tests := []struct {
		name       string
		mode       mcpbridge.IntentTools
		intents    int
		wantSingle bool
	}{
		{"per-intent", mcpbridge.IntentToolsPerIntent, 2, false},
		{"per-intent with many intents", mcpbridge.IntentToolsPerIntent, 5, false},
		{"single", mcpbridge.IntentToolsSingle, 2, true},
		{"auto, 2 intents", mcpbridge.IntentToolsAuto, 2, false},
		{"auto, 3 intents", mcpbridge.IntentToolsAuto, 3, false},
		{"auto, 4 intents", mcpbridge.IntentToolsAuto, 4, true},
		{"default (auto), 5 intents", "", 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := withIntents(tt.intents)
			h := newHarness(t, fake, &mcpbridge.Options{Mode: mcpbridge.ModeDynamic, IntentTools: tt.mode}, hostOptions{protocolVersion: "2025-11-25"})
			tools := h.toolNames(t)
			var names []string
			for n := range tools {
				names = append(names, n)
			}
			slices.Sort(names)
			if !tt.wantSingle {
				want := []string{}
				for _, in := range fake.manifest.Intents {
					want = append(want, in.Name)
				}
				slices.Sort(want)
				if !slices.Equal(names, want) {
					t.Fatalf("tools %v, want one per intent %v", names, want)
				}
				return
			}
			if !slices.Equal(names, []string{mcpbridge.IntentToolName}) {
				t.Fatalf("tools %v, want only %s", names, mcpbridge.IntentToolName)
			}
			tl := tools[mcpbridge.IntentToolName]
			if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
				t.Error("the intent tool is not read-only")
			}
			if !strings.Contains(tl.Description, "\ndiagnose: Diagnose a page (needs url)") || !strings.Contains(tl.Description, "\nobserve: Observe a page") {
				t.Errorf("description %q does not name each intent with its purpose", tl.Description)
			}
			raw, _ := json.Marshal(tl.InputSchema)
			var schema struct {
				Properties struct {
					Intent struct {
						Enum []string `json:"enum"`
					} `json:"intent"`
					Facts struct {
						Description string `json:"description"`
					} `json:"facts"`
				} `json:"properties"`
				Required []string `json:"required"`
			}
			if err := json.Unmarshal(raw, &schema); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, in := range fake.manifest.Intents {
				want = append(want, in.Name)
			}
			slices.Sort(want)
			if !slices.Equal(schema.Properties.Intent.Enum, want) || !slices.Equal(schema.Required, []string{"intent"}) {
				t.Errorf("schema %s: want the intents %v as the enum of a required intent", raw, want)
			}
			if got := schema.Properties.Facts.Description; got != `["url",u]; ["status",code]; ["seen",x]` {
				t.Errorf("facts %q: want every predicate spelled once", got)
			}
		})
	}
}

// TestSingleIntentToolCalls checks calls of the single intent tool: it
// evaluates the intent it names (the selected macro-tools join the list
// as with the per-intent tools), and an unknown or missing intent is
// x-bridge_invalid_arguments with the closest intent suggested, without
// an evaluation.
func TestSingleIntentToolCalls(t *testing.T) {
	fake := withIntents(5)
	// A macro-tool named like the intent tool gets another name.
	fake.setEvaluate(selects(tool("trace_request", false), tool(mcpbridge.IntentToolName, false)))
	h := newHarness(t, fake, nil, hostOptions{protocolVersion: "2025-11-25"})

	res := h.call(t, mcpbridge.IntentToolName, map[string]any{"intent": "diagnose", "facts": diagnoseArgs["facts"]})
	if res.IsError {
		t.Fatalf("evaluate_intent: %s", text(res))
	}
	if !strings.HasPrefix(text(res), "diagnose: the rules selected 2 tools.") || !strings.Contains(text(res), "\n- "+mcpbridge.IntentToolName+"_2(") {
		t.Fatalf("answer = %s", text(res))
	}
	req := fake.lastEval(t)
	if req.Intent.Name != "diagnose" || len(req.Facts) != 2 || req.Facts[1].Pred != "status" {
		t.Fatalf("intent request = %+v", req)
	}
	if res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": mcpbridge.IntentToolName + "_2", "arguments": map[string]any{"target": "r1"}}); res.IsError {
		t.Fatalf("trace_request: %s", text(res))
	}

	tests := []struct {
		name       string
		args       map[string]any
		message    string
		suggestion string
	}{
		{"misspelt", map[string]any{"intent": "diagnoze", "facts": []any{}}, `unknown intent "diagnoze"`, `did you mean "diagnose"?`},
		{"prefix", map[string]any{"intent": "obs"}, `unknown intent "obs"`, `did you mean "observe"?`},
		{"far off", map[string]any{"intent": "zzzzzzzzzzzz"}, `unknown intent`, "the intents are: diagnose, observe, inspect_1"},
		{"missing", map[string]any{"facts": []any{}}, "needs an intent", "the intents are: diagnose, observe, inspect_1"},
		{"facts not facts", map[string]any{"intent": "observe", "facts": []any{7}}, "facts[0]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake.mu.Lock()
			before := len(fake.evals)
			fake.mu.Unlock()
			e := errorOf(t, h.call(t, mcpbridge.IntentToolName, tt.args))
			if e.Code != protocol.CodeBridgeInvalidArguments || !e.Recoverable || !strings.Contains(e.Message, tt.message) {
				t.Errorf("error %+v, want %s with %q", e, protocol.CodeBridgeInvalidArguments, tt.message)
			}
			if tt.suggestion != "" && (e.Details == nil || e.Details.Field != "intent" || !strings.Contains(e.Details.Suggestion, tt.suggestion)) {
				t.Errorf("details %+v, want field intent and a suggestion with %q", e.Details, tt.suggestion)
			}
			fake.mu.Lock()
			after := len(fake.evals)
			fake.mu.Unlock()
			if after != before {
				t.Error("the server was asked to evaluate")
			}
		})
	}
}

// TestIntentToolsOptionChecked: New refuses an unknown IntentTools.
func TestIntentToolsOptionChecked(t *testing.T) {
	fake := newFake()
	_, err := mcpbridge.New(context.Background(), func(ctx context.Context) (*client.Session, error) { return dialFake(ctx, t, fake) }, &mcpbridge.Options{IntentTools: "some"})
	if e := mcpbridge.ErrorOf(err); e == nil || e.Code != protocol.CodeBridgeInvalidArguments {
		t.Errorf("New with an unknown IntentTools: %v", err)
	}
}
