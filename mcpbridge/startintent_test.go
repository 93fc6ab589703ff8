package mcpbridge_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// TestStartIntentAfterCancelledFirstRequest (issue 30): the host's first
// request, which evaluates the start intent, is cancelled while the
// server evaluates it; the next request evaluates the start intent, so
// its tools are reachable. Before, the start intent was evaluated once
// per session whatever came of it, and the session never had its tools.
func TestStartIntentAfterCancelledFirstRequest(t *testing.T) {
	fake := newFake()
	entered := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var once sync.Once
	fake.setEvaluate(func(ctx context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(entered)
			select { // held until the host gave up on it
			case <-ctx.Done():
			case <-release:
			}
			return nil, protocol.Errorf(protocol.CodeInternalError, "too late")
		}
		return selects(tool("trace_request", false))(ctx, req)
	})
	start := &mcpbridge.Start{Intent: "diagnose", Facts: []protocol.Fact{protocol.NewFact("url", "https://x")}}
	h := newHarness(t, fake, &mcpbridge.Options{Start: start}, hostOptions{})

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := h.cs.ListTools(ctx, nil)
		done <- err
	}()
	<-entered // the start intent is being evaluated for the first request
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled tools/list answered")
	}
	res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": "x"}})
	if res.IsError {
		t.Fatalf("the start intent's tool after a cancelled first request: %s", text(res))
	}
	if req := fake.lastEval(t); req.Intent.Name != "diagnose" {
		t.Errorf("last evaluation %+v, want the start intent", req.Intent)
	}
}

// TestStartIntentToolsShownOnce: the start intent's answer reaches no
// model (in the default mode the host lists no macro-tool), so the first
// answer the model reads shows the tools whole, never "(as before)".
func TestStartIntentToolsShownOnce(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(selects(tool("trace_request", false)))
	start := &mcpbridge.Start{Intent: "diagnose", Facts: []protocol.Fact{protocol.NewFact("url", "https://x")}}
	h := newHarness(t, fake, &mcpbridge.Options{Start: start}, hostOptions{})
	res := h.call(t, "diagnose", diagnoseArgs)
	if got := text(res); !strings.Contains(got, "trace_request(target*: string): The trace_request tool.") {
		t.Errorf("the model's first answer: %q", got)
	}
}
