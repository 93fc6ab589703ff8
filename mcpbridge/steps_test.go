package mcpbridge_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// decided is a macro-tool the rules made mandatory with its one required
// parameter bound to one value.
func decided(name string, values ...any) protocol.MacroTool {
	t := tool(name, false)
	t.Metadata = &protocol.ToolMetadata{SelectionPhase: "skeleton", Score: 100}
	t.InputSchema = map[string]any{"type": "object", "properties": map[string]any{
		"request_id": map[string]any{"type": "string", "enum": values},
		"verbose":    map[string]any{"type": "boolean", "default": false},
	}, "required": []any{"request_id"}}
	return t
}

// TestAutoRun: a tool the rules fully decided (the only mandatory tool,
// no confirmation, no side effect, each required parameter with one
// possible value) runs in the call that selected it; otherwise the model
// chooses.
func TestAutoRun(t *testing.T) {
	confirm := decided("trace", "r2")
	confirm.Safety = &protocol.Safety{RequiresUserConfirmation: true, SideEffects: []string{"filesystem"}}
	writes := decided("trace", "r2")
	writes.Safety = &protocol.Safety{SideEffects: []string{"filesystem"}, Reversible: true}
	flesh := decided("trace", "r2")
	flesh.Metadata.SelectionPhase = "flesh"
	hidden := decided("trace", "r2")
	hidden.Safety = nil
	free := decided("trace", "r2")
	free.InputSchema["properties"].(map[string]any)["text"] = map[string]any{"type": "string"}
	tests := []struct {
		name  string
		tools []protocol.MacroTool
		runs  bool
	}{
		{"one mandatory, one value", []protocol.MacroTool{decided("trace", "r2"), tool("other", false)}, true},
		{"two values", []protocol.MacroTool{decided("trace", "r2", "r3")}, false},
		{"two mandatory", []protocol.MacroTool{decided("trace", "r2"), decided("trace2", "r2")}, false},
		{"asks the user", []protocol.MacroTool{confirm}, false},
		{"side effect", []protocol.MacroTool{writes}, false},
		{"not mandatory", []protocol.MacroTool{flesh}, false},
		{"safety not disclosed", []protocol.MacroTool{hidden}, false},
		{"an optional parameter without a value", []protocol.MacroTool{free}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake()
			fake.setEvaluate(selects(tt.tools...))
			fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
				return &protocol.InvokeResponse{Result: map[string]any{"root_cause": "404"}, Observability: protocol.Observability{Summary: "Traced r2."}}, nil
			})
			h := newHarness(t, fake, nil, hostOptions{})
			res := h.call(t, "diagnose", diagnoseArgs)
			ran := strings.Contains(text(res), `Ran trace(request_id="r2") at once (the rules fixed its arguments):`+"\nTraced r2.\n{\"root_cause\":\"404\"}")
			if ran != tt.runs || (fake.invokeCount() == 1) != tt.runs {
				t.Fatalf("ran = %v (%d invocations), want %v: %s", ran, fake.invokeCount(), tt.runs, text(res))
			}
			if tt.runs {
				if got := fake.lastInvoke(t); got.MacroID != "trace-0001" || got.Args["request_id"] != "r2" || len(got.Args) != 1 {
					t.Errorf("invoke request %+v", got)
				}
			}
		})
	}
}

// TestReachEvaluatesWhatItNeeds: invoke_macro_tool with a tool the
// current selection lacks evaluates the intent that selects it in the same
// call (the one that selected it before, else each intent in turn) rather
// than failing; a tool no intent selects is x-bridge_unknown_tool.
func TestReachEvaluatesWhatItNeeds(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(perIntent(map[string][]protocol.MacroTool{"observe": {tool("look", false)}}, tool("trace_request", false)))
	h := newHarness(t, fake, nil, hostOptions{})
	call := func(name string) string {
		return text(h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": name, "arguments": map[string]any{"target": "x"}}))
	}
	// No evaluation yet: diagnose, then observe, is evaluated.
	if got := call("look"); got != "look: done\n{\"ok\":true}" {
		t.Fatalf("look before any evaluation: %s", got)
	}
	if got := fake.lastInvoke(t); got.MacroID != "look-0001" {
		t.Errorf("invoked %s", got.MacroID)
	}
	// Another evaluation replaced the selection; look is reached again
	// through the intent that selected it (one evaluation).
	h.call(t, "diagnose", diagnoseArgs)
	fake.mu.Lock()
	before := len(fake.evals)
	fake.mu.Unlock()
	if got := call("look"); got != "look: done\n{\"ok\":true}" {
		t.Fatalf("look after diagnose: %s", got)
	}
	fake.mu.Lock()
	evals, last := len(fake.evals)-before, fake.evals[len(fake.evals)-1].Intent.Name
	fake.mu.Unlock()
	if evals != 1 || last != "observe" {
		t.Errorf("%d evaluations, the last of %s; want 1 of observe", evals, last)
	}
	res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "nothing"})
	if e := errorOf(t, res); e.Code != protocol.CodeBridgeUnknownTool || e.Details == nil || !strings.Contains(e.Details.Suggestion, "trace_request") && !strings.Contains(e.Details.Suggestion, "look") {
		t.Errorf("unknown tool: %+v", e)
	}
}

// TestNextIntentSelectingNothingLeftOut: a suggested intent whose rules
// select nothing now is not worth a line of the answer.
func TestNextIntentSelectingNothingLeftOut(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(perIntent(map[string][]protocol.MacroTool{"observe": {tool("look", false)}})) // diagnose: nothing fits
	fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		return &protocol.InvokeResponse{Result: map[string]any{}, Observability: protocol.Observability{Summary: "ok"},
			Next: &protocol.Next{SuggestedIntents: []protocol.SuggestedIntent{{Name: "observe"}, {Name: "diagnose"}},
				ContinuationFacts: []protocol.Fact{protocol.NewFact("url", "http://127.0.0.1/")}}}, nil
	})
	h := newHarness(t, fake, nil, hostOptions{})
	res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "look", "arguments": map[string]any{"target": "x"}})
	if want := "ok\nnext observe:\n- look(target*: string): The look tool."; text(res) != want {
		t.Fatalf("answer %q, want %q", text(res), want)
	}
}

// TestNextIntentsSelectionInAnswer: a macro-tool's answer lists the tools
// of the intent it suggests next, which the model then calls without
// calling the intent; an intent that cannot be evaluated yet is named.
func TestNextIntentsSelectionInAnswer(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(func(_ context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		if req.Intent.Name == "observe" {
			return &protocol.IntentResponse{MacroTools: []protocol.MacroTool{tool("look", false)}}, nil
		}
		for _, f := range req.Facts {
			if f.Pred == "url" {
				return &protocol.IntentResponse{MacroTools: []protocol.MacroTool{tool("trace_request", false)}}, nil
			}
		}
		return nil, protocol.Errorf(protocol.CodeInvalidFacts, "diagnose needs url")
	})
	fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		return &protocol.InvokeResponse{Result: map[string]any{}, Observability: protocol.Observability{Summary: "ok"},
			Next: &protocol.Next{SuggestedIntents: []protocol.SuggestedIntent{{Name: "observe"}, {Name: "diagnose"}}}}, nil
	})
	h := newHarness(t, fake, nil, hostOptions{})
	res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "look", "arguments": map[string]any{"target": "x"}})
	if want := "ok\nnext observe:\n- look(target*: string): The look tool.\nnext: diagnose (needs url)"; text(res) != want {
		t.Fatalf("answer %q, want %q", text(res), want)
	}
	fake.mu.Lock()
	before := len(fake.evals)
	fake.mu.Unlock()
	if res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "look", "arguments": map[string]any{"target": "y"}}); res.IsError {
		t.Fatalf("look: %s", text(res))
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	// Only the answer's own look-ahead reached the server (observe;
	// diagnose lacks its required url, which the client checks first).
	if n := len(fake.evals) - before; n != 1 {
		t.Errorf("%d evaluations for the second call, want 1 (its look-ahead only)", n)
	}
}

// TestFixedArgumentsFilled: a required parameter the rules fixed (an enum
// of one value) may be left out: the bridge fills it in before it checks
// the arguments, asks the user (who sees it) and calls the server.
func TestFixedArgumentsFilled(t *testing.T) {
	fake := newFake()
	apply := tool("apply_edit", true)
	apply.InputSchema = map[string]any{"type": "object", "properties": map[string]any{
		"diff": map[string]any{"type": "string", "enum": []any{"--- a/src/x.go\n+++ b/src/x.go\n@@ -1 +1 @@\n-old line\n+new line\n"}},
	}, "required": []any{"diff"}, "additionalProperties": false}
	fake.setEvaluate(selects(apply))
	var asked string
	h := newHarness(t, fake, &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")}, hostOptions{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = r.Params.Message
		return accept(ctx, r)
	}})
	if res := h.call(t, "diagnose", diagnoseArgs); !strings.Contains(text(res), "apply_edit(diff=fixed)") {
		t.Errorf("signature: %s", text(res))
	}
	if res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "apply_edit"}); res.IsError {
		t.Fatalf("apply_edit without its fixed argument: %s", text(res))
	}
	if got := fake.lastInvoke(t); got.Args["diff"] != "--- a/src/x.go\n+++ b/src/x.go\n@@ -1 +1 @@\n-old line\n+new line\n" {
		t.Errorf("invoked with %+v", got.Args)
	}
	if !strings.Contains(asked, `+new line`) {
		t.Errorf("the user was asked %q, without the diff", asked)
	}
}

// TestFollowsAtOnce: in a macro-tool's answer, the one tool the rules
// decided for the intent it suggests follows in the same call: a pure one
// runs; one that requires confirmation is asked of the user (the question
// shows its arguments) and runs only if accepted, the first call not run
// again when the host returns with the answer; a tool with side effects
// that asks no one, or one the host cannot ask about, is only listed.
func TestFollowsAtOnce(t *testing.T) {
	const diff = "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-old line\n+new line\n"
	apply := decided("apply_edit", diff)
	apply.InputSchema = map[string]any{"type": "object", "properties": map[string]any{
		"diff": map[string]any{"type": "string", "enum": []any{diff}},
	}, "required": []any{"diff"}}
	apply.Safety = &protocol.Safety{RequiresUserConfirmation: true, SideEffects: []string{"filesystem"}}
	writes := decided("apply_edit", "r2")
	writes.Safety = &protocol.Safety{SideEffects: []string{"filesystem"}, Reversible: true}
	pure := decided("apply_edit", "r2")
	key := &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")}
	tests := []struct {
		name      string
		follow    protocol.MacroTool
		opts      *mcpbridge.Options
		answer    string // the host's answer to the question; "" no elicitation
		want      string // in the answer
		applied   bool
		askedDiff bool
	}{
		{"asked, accepted", apply, key, "accept", "ok\nnext edit: apply_edit() ran at once, the user accepted:\nApplied.", true, true},
		{"asked, declined", apply, key, "decline", "ok\nnext edit: apply_edit() was not run: the user did not accept it (decline). To ask again, call:\n- apply_edit(diff=fixed)", false, true},
		{"host cannot be asked", apply, key, "", "ok\nnext edit:\n- apply_edit(diff=fixed)", false, false},
		{"no confirmation key", apply, nil, "accept", "ok\nnext edit:\n- apply_edit(diff=fixed)", false, false},
		{"side effect, asks no one", writes, key, "accept", "ok\nnext edit:\n- apply_edit(request_id=\"r2\", verbose: boolean=false)", false, false},
		{"pure", pure, key, "accept", "ok\nnext edit: ran apply_edit(request_id=\"r2\") at once:\nApplied.", true, false},
	}
	for _, tt := range tests {
		for _, version := range []string{"", "2025-11-25"} { // MCP 2026-07-28 hosts retry the call themselves; for older ones the SDK does
			t.Run(tt.name+" "+version, func(t *testing.T) {
				fake := newFake()
				fake.setEvaluate(perIntent(map[string][]protocol.MacroTool{"edit": {tt.follow, tool("preview", false)}}, tool("preview", false)))
				var previews, applies int
				var token string
				fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
					if req.MacroID == "preview-0001" {
						previews++
						return &protocol.InvokeResponse{Result: map[string]any{}, Observability: protocol.Observability{Summary: "ok"},
							Next: &protocol.Next{SuggestedIntents: []protocol.SuggestedIntent{{Name: "edit"}}}}, nil
					}
					applies++
					token = req.ConfirmationToken
					return &protocol.InvokeResponse{Result: map[string]any{}, Observability: protocol.Observability{Summary: "Applied."}}, nil
				})
				var asked string
				host := hostOptions{protocolVersion: version}
				if tt.answer != "" {
					host.elicit = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked = r.Params.Message
						return &mcp.ElicitResult{Action: tt.answer}, nil
					}
				}
				opts := tt.opts
				if opts == nil {
					opts = &mcpbridge.Options{}
				}
				h := newHarness(t, fake, opts, host)
				res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "preview", "arguments": map[string]any{"target": "x"}})
				if !strings.HasPrefix(text(res), tt.want) {
					t.Fatalf("answer %q, want it to begin %q", text(res), tt.want)
				}
				if previews != 1 {
					t.Errorf("preview ran %d times, want once", previews)
				}
				if (applies == 1) != tt.applied || applies > 1 {
					t.Errorf("apply_edit ran %d times, want applied=%v", applies, tt.applied)
				}
				if tt.applied && tt.follow.Safety.RequiresUserConfirmation && token == "" {
					t.Error("apply_edit ran without a confirmation token")
				}
				if got := strings.Contains(asked, "+new line") && strings.Contains(asked, "filesystem"); got != tt.askedDiff {
					t.Errorf("the question %q shows the diff: %v, want %v", asked, got, tt.askedDiff)
				}
			})
		}
	}
}

// TestNoFollowAfterAnswer: a call that the user confirmed (the host
// calls again with the answer) lists what follows it but runs nothing
// more under that answer.
func TestNoFollowAfterAnswer(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			fake := newFake()
			fake.setEvaluate(perIntent(map[string][]protocol.MacroTool{"edit": {decided("trace", "r2")}}, tool("save", true)))
			var traces int
			fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
				if req.MacroID == "save-0001" {
					return &protocol.InvokeResponse{Result: map[string]any{}, Observability: protocol.Observability{Summary: "saved"},
						Next: &protocol.Next{SuggestedIntents: []protocol.SuggestedIntent{{Name: "edit"}}}}, nil
				}
				traces++
				return &protocol.InvokeResponse{Result: map[string]any{}, Observability: protocol.Observability{Summary: "traced"}}, nil
			})
			h := newHarness(t, fake, &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")}, hostOptions{protocolVersion: version, elicit: accept})
			res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "save", "arguments": map[string]any{"target": "x"}})
			if want := "saved\nnext edit:\n- trace(request_id=\"r2\", verbose: boolean=false): The trace tool."; res.IsError || text(res) != want || traces != 0 {
				t.Fatalf("answer %q (%d traces), want %q and no trace", text(res), traces, want)
			}
		})
	}
}

// TestFollowOverHTTP: over --http, where MCP 2026-07-28 requests are
// stateless (the user's answer comes in a new request, to a new bridge
// session), the confirmed follow-up runs once with a valid token and the
// call it follows is not run again.
func TestFollowOverHTTP(t *testing.T) {
	key := []byte("0123456789abcdef")
	apply := decided("apply_edit", "d1")
	apply.Safety = &protocol.Safety{RequiresUserConfirmation: true, SideEffects: []string{"filesystem"}}
	fake := newFake()
	fake.setEvaluate(perIntent(map[string][]protocol.MacroTool{"edit": {apply}}, tool("preview", false)))
	var mu sync.Mutex
	runs := map[string]int{}
	fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		mu.Lock()
		defer mu.Unlock()
		if req.MacroID == "preview-0001" {
			runs["preview"]++
			return &protocol.InvokeResponse{Result: map[string]any{}, Observability: protocol.Observability{Summary: "previewed"},
				Next: &protocol.Next{SuggestedIntents: []protocol.SuggestedIntent{{Name: "edit"}}}}, nil
		}
		if _, err := protocol.VerifyConfirmationToken(key, req.ConfirmationToken, req.MacroID); err != nil {
			return nil, protocol.Errorf(protocol.CodeConfirmationRequired, "apply_edit requires user confirmation")
		}
		runs["apply"]++
		return &protocol.InvokeResponse{Result: map[string]any{}, Observability: protocol.Observability{Summary: "applied"}}, nil
	})
	url := serveHTTP(t, newTestBridge(t, fake, &mcpbridge.Options{ConfirmationKey: key}))
	for _, v := range hostVersions {
		t.Run(v, func(t *testing.T) {
			mu.Lock()
			clear(runs)
			mu.Unlock()
			cctx, ccancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer ccancel()
			cs := connectHTTP(cctx, t, url, v, accept)
			defer cs.Close()
			res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: mcpbridge.MetaToolName, Arguments: map[string]any{"tool": "preview", "arguments": map[string]any{"target": "x"}}})
			if err != nil {
				t.Fatal(err)
			}
			if want := "previewed\nnext edit: apply_edit(request_id=\"d1\") ran at once, the user accepted:\napplied"; res.IsError || text(res) != want {
				t.Errorf("answer %q, want %q", text(res), want)
			}
			mu.Lock()
			defer mu.Unlock()
			if runs["preview"] != 1 || runs["apply"] != 1 {
				t.Errorf("ran %v, want preview and apply_edit once each", runs)
			}
		})
	}
}

// TestReachStatesTheArgumentsFacts: a tool named in the tool list is
// called without an intent round trip even when its intent needs facts:
// the call's arguments state them (diagnose needs url(u); trace(u) states
// url), for that evaluation only; a selected tool whose enum lacks the
// value the model passes is reached again with it.
func TestReachStatesTheArgumentsFacts(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(func(_ context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		if req.Intent.Name != "diagnose" {
			return &protocol.IntentResponse{MacroTools: []protocol.MacroTool{}}, nil
		}
		var urls []any
		for _, f := range req.Facts {
			if f.Pred == "url" {
				urls = append(urls, f.Args[0])
			}
		}
		if len(urls) == 0 {
			return nil, protocol.Errorf(protocol.CodeInvalidFacts, "diagnose needs url")
		}
		tr := tool("trace", false)
		tr.InputSchema = map[string]any{"type": "object", "required": []any{"u"},
			"properties": map[string]any{"u": map[string]any{"type": "string", "enum": urls}, "items": map[string]any{"type": "array"}}}
		return &protocol.IntentResponse{MacroTools: []protocol.MacroTool{tr}}, nil
	})
	h := newHarness(t, fake, nil, hostOptions{})
	urlFacts := func() []string {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		var out []string
		for _, f := range fake.evals[len(fake.evals)-1].Facts {
			if f.Pred == "url" {
				out = append(out, f.Args[0].(string))
			}
		}
		return out
	}
	res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "trace", "arguments": map[string]any{"u": "https://b.example"}})
	if res.IsError {
		t.Fatalf("trace before any evaluation: %s", text(res))
	}
	if got := urlFacts(); len(got) != 1 || got[0] != "https://b.example" {
		t.Errorf("diagnose was evaluated with url facts %v", got)
	}
	// The stated fact is not kept: the model's own evaluation holds its own.
	h.call(t, "diagnose", diagnoseArgs)
	if got := urlFacts(); len(got) != 1 || got[0] != "https://app.example.com" {
		t.Errorf("the next evaluation sent url facts %v", got)
	}
	// trace is selected for app.example.com; a call on c.example (in an
	// array's objects too) is reached with both.
	res = h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "trace", "arguments": map[string]any{"u": "https://c.example",
		"items": []any{map[string]any{"u": "https://d.example"}}}})
	if res.IsError {
		t.Fatalf("trace on another url: %s", text(res))
	}
	if got := strings.Join(urlFacts(), " "); got != "https://app.example.com https://c.example https://d.example" {
		t.Errorf("reached with url facts %s", got)
	}
	if got := fake.lastInvoke(t); got.Args["u"] != "https://c.example" {
		t.Errorf("invoked with %v", got.Args)
	}
}
