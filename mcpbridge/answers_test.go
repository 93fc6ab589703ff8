package mcpbridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// TestAnswersShapedForAModel: an answer is one text item, without a
// structuredContent copy and without what the model does not act on
// (macro_ids, disclosure levels, provenance, categories, timestamps, eval
// time, the state delta); the state delta is applied to the working state
// (readable as manglecp://state and sent with the next evaluation); only
// warnings that change what the model should do are shown.
func TestAnswersShapedForAModel(t *testing.T) {
	fake := newFake()
	t0 := protocol.NewTime(time.Unix(1771510205, 0).UTC())
	fake.setEvaluate(func(context.Context, *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		tl := tool("trace_request", false)
		tl.Metadata = &protocol.ToolMetadata{SelectionPhase: "skeleton", Score: 100, SourceRules: []string{"net_response"}}
		tl.ContextInjection = &protocol.ContextInjection{Instructions: "Pick the failed request.", ContextResources: []protocol.ContextResource{{URI: "https://api.example.com/users", Relevance: "the endpoint"}}}
		return &protocol.IntentResponse{EvalTimeUsed: *t0, MacroTools: []protocol.MacroTool{tl}, Warnings: []protocol.Warning{
			{Code: protocol.WarnEvalTimeChosen, Message: "the server chose the evaluation time"},
			{Code: protocol.WarnTokenBudgetExceeded, Message: "over budget"},
			{Code: protocol.WarnToolsTruncated, Message: "2 more tools fit"},
		}}, nil
	})
	seen := protocol.NewFact("seen", "r42")
	seen.Source = &protocol.Provenance{SourceType: "server", AssertedAt: "2026-02-19T14:10:05Z"}
	seen.Category = protocol.CategorySession
	fake.setInvoke(func(context.Context, *protocol.InvokeRequest, func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		return &protocol.InvokeResponse{
			Result:        map[string]any{"root_cause": "503 from api"},
			StateDelta:    protocol.StateDelta{Assert: []protocol.Fact{seen}, Retract: []protocol.Fact{}},
			Observability: protocol.Observability{Summary: "Traced r42: 503 from api.", DurationMS: 12},
		}, nil
	})
	h := newHarness(t, fake, nil, hostOptions{})
	for _, c := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"diagnose", diagnoseArgs, []string{"trace_request(target*: string): The trace_request tool.\n  Pick the failed request.", "warning tools_truncated: 2 more tools fit"}},
		{mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": "r42"}}, []string{"Traced r42: 503 from api.\n{\"root_cause\":\"503 from api\"}"}},
	} {
		res := h.call(t, c.name, c.args)
		if res.IsError || len(res.Content) != 1 || res.StructuredContent != nil {
			t.Fatalf("%s: want one text item and no structuredContent, got %d items, structured %v: %s", c.name, len(res.Content), res.StructuredContent, text(res))
		}
		if _, ok := res.Content[0].(*mcp.TextContent); !ok {
			t.Fatalf("%s: content is %T", c.name, res.Content[0])
		}
		got := text(res)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the answer lacks %q:\n%s", c.name, w, got)
			}
		}
		for _, bad := range []string{"macro_id", "-0001", "disclosure", "skeleton", "source", "category", "asserted_at", "2026-02-19", "eval_time", "over budget", "state_delta", "seen", "duration", "api.example.com/users"} {
			if strings.Contains(got, bad) {
				t.Errorf("%s: the answer holds %q:\n%s", c.name, bad, got)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpbridge.StateURI})
	if err != nil || !strings.Contains(st.Contents[0].Text, `"r42"`) {
		t.Errorf("the state delta is not in the working state: %v %v", err, st)
	}
	h.call(t, "observe", map[string]any{})
	found := false
	for _, f := range fake.lastEval(t).Facts {
		found = found || (f.Pred == "seen" && f.Args[0] == "r42")
	}
	if !found {
		t.Errorf("the next evaluation lacks the asserted fact: %+v", fake.lastEval(t).Facts)
	}
}
