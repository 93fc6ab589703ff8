package mcpbridge_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// TestConsentSaysWhatItConsentsTo: every question to the user names the
// tool, what it does, its side effects and the arguments it will run
// with, whatever the disclosure level the server chose for the model
// (under the token budget a tool may come without its safety block: the
// bridge asks the server for it with disclosure_upgrade).
func TestConsentSaysWhatItConsentsTo(t *testing.T) {
	full := tool("write_report", true)
	tests := []struct {
		level    string
		undiscl  bool // the server never discloses the safety block
		wantText []string
	}{
		{protocol.DisclosureFull, false, []string{`Allow "write_report" to run? The write_report tool. Side effects: filesystem. It cannot be undone. Arguments: {"target":"r42"}`}},
		{protocol.DisclosureCondensed, false, []string{`Allow "write_report" to run? The write_report tool. Side effects: filesystem. It cannot be undone. Arguments: {"target":"r42"}`}},
		{protocol.DisclosureMinimal, false, []string{`Allow "write_report" to run? The write_report tool. Side effects: filesystem. It cannot be undone. Arguments: {"target":"r42"}`}},
		{protocol.DisclosureMinimal + " (never disclosed)", true, []string{`Allow "write_report" to run?`, "Side effects: not disclosed by the server; assume it changes things.", `Arguments: {"target":"r42"}`}},
	}
	for _, v := range hostVersions {
		for _, tt := range tests {
			t.Run(v+"/"+tt.level, func(t *testing.T) {
				fake := newFake()
				// As every profile of a real server has it (Spec 05 section 5.3).
				fake.manifest.FactsProfile.Predicates = append(fake.manifest.FactsProfile.Predicates, protocol.PredicateSchema{
					Predicate: "disclosure_upgrade", Arity: 1, ArgTypes: []string{"string"}, ArgNames: []string{"macro_id"}, Direction: protocol.DirectionInput})
				fake.setEvaluate(func(_ context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
					for _, f := range req.Facts {
						if f.Pred == "disclosure_upgrade" && f.Args[0] == full.MacroID && !tt.undiscl {
							return &protocol.IntentResponse{MacroTools: []protocol.MacroTool{full}}, nil
						}
					}
					shown := full
					if !strings.HasPrefix(tt.level, protocol.DisclosureFull) {
						shown.Safety, shown.InputSchema, shown.DisclosureLevel = nil, nil, strings.Fields(tt.level)[0]
						if shown.DisclosureLevel == protocol.DisclosureMinimal {
							shown.Description = ""
						}
					}
					return &protocol.IntentResponse{MacroTools: []protocol.MacroTool{shown}}, nil
				})
				fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
					if req.ConfirmationToken == "" {
						return nil, protocol.Errorf(protocol.CodeConfirmationRequired, "write_report requires user confirmation")
					}
					return &protocol.InvokeResponse{Result: map[string]any{"written": true}}, nil
				})
				var mu sync.Mutex
				var asked []string
				h := newHarness(t, fake, &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")}, hostOptions{protocolVersion: v, elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, r.Params.Message)
					mu.Unlock()
					return accept(ctx, r)
				}})
				h.call(t, "diagnose", diagnoseArgs)
				res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "write_report", "arguments": map[string]any{"target": "r42"}})
				if res.IsError {
					t.Fatalf("write_report: %s", text(res))
				}
				mu.Lock()
				defer mu.Unlock()
				if len(asked) != 1 {
					t.Fatalf("asked %d times, want 1", len(asked))
				}
				for _, w := range tt.wantText {
					if !strings.Contains(asked[0], w) {
						t.Errorf("the question %q lacks %q", asked[0], w)
					}
				}
			})
		}
	}
}

// TestUndisclosedToolFixedArguments: a tool the server condensed (no
// schema, no safety block) is fetched at full disclosure when called: the
// argument the rules fixed is filled in and the user is asked with it and
// the tool's side effects.
func TestUndisclosedToolFixedArguments(t *testing.T) {
	full := tool("write_report", true)
	full.InputSchema["properties"].(map[string]any)["target"] = map[string]any{"type": "string", "enum": []any{"r42"}}
	fake := newFake()
	fake.manifest.FactsProfile.Predicates = append(fake.manifest.FactsProfile.Predicates, protocol.PredicateSchema{
		Predicate: "disclosure_upgrade", Arity: 1, ArgTypes: []string{"string"}, ArgNames: []string{"macro_id"}, Direction: protocol.DirectionInput})
	var evalTimes []string
	var mu sync.Mutex
	fake.setEvaluate(func(_ context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		mu.Lock()
		if req.EvalTime != nil {
			evalTimes = append(evalTimes, req.EvalTime.Format("15:04:05"))
		}
		mu.Unlock()
		resp := selects(full)
		for _, f := range req.Facts {
			if f.Pred == "disclosure_upgrade" {
				return resp(context.Background(), req)
			}
		}
		condensed := full
		condensed.Safety, condensed.InputSchema, condensed.DisclosureLevel, condensed.Description = nil, nil, protocol.DisclosureMinimal, ""
		return selects(condensed)(context.Background(), req)
	})
	var asked string
	h := newHarness(t, fake, &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")}, hostOptions{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = r.Params.Message
		return accept(ctx, r)
	}})
	if res := h.call(t, "diagnose", diagnoseArgs); !strings.Contains(text(res), `write_report(target="r42")`) { // its parameters, the first time
		t.Fatalf("diagnose: %s", text(res))
	}
	if res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "write_report"}); res.IsError {
		t.Fatalf("write_report: %s", text(res))
	}
	if want := `Allow "write_report" to run? The write_report tool. Side effects: filesystem. It cannot be undone. Arguments: {"target":"r42"}`; asked != want {
		t.Errorf("asked %q, want %q", asked, want)
	}
	mu.Lock()
	defer mu.Unlock()
	// The upgrade asks at the evaluation time of the selection, to which
	// the macro_id is bound.
	if len(evalTimes) != 1 || evalTimes[0] != "14:10:05" {
		t.Errorf("eval times sent %v, want one, the selection's (14:10:05)", evalTimes)
	}
}
