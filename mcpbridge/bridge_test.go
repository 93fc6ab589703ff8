package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// The two MCP generations a host may speak: 2025-11-25 (initialize, no
// way to say whether it follows list changes) and 2026-07-28 (stateless
// requests, subscriptions/listen, multi round-trip elicitation).
var hostVersions = []string{"2025-11-25", "2026-07-28"}

var diagnoseArgs = map[string]any{"facts": []any{[]any{"url", "https://app.example.com"}, []any{"status", 503}}}

func TestListIntentTools(t *testing.T) {
	tests := []struct {
		name     string
		mode     mcpbridge.Mode
		version  string
		noFollow bool
		wantMeta bool
	}{
		{"auto legacy host", mcpbridge.ModeAuto, "2025-11-25", false, true},
		{"auto host that subscribes", mcpbridge.ModeAuto, "2026-07-28", false, true},
		{"auto host that does not subscribe", mcpbridge.ModeAuto, "2026-07-28", true, true},
		{"dynamic", mcpbridge.ModeDynamic, "2025-11-25", false, false},
		{"meta", mcpbridge.ModeMeta, "2026-07-28", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newFake(), &mcpbridge.Options{Mode: tt.mode}, hostOptions{protocolVersion: tt.version, noListChanged: tt.noFollow})
			tools := h.toolNames(t)
			for _, want := range []string{"diagnose", "observe"} {
				tl := tools[want]
				if tl == nil {
					t.Fatalf("tool %q missing: %v", want, tools)
				}
				if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
					t.Errorf("intent tool %s is not read-only", want)
				}
			}
			raw, _ := json.Marshal(tools["diagnose"].InputSchema)
			for _, s := range []string{`"facts"`, `[\"url\",u]*`, `[\"status\",code]`} {
				if !strings.Contains(string(raw), s) {
					t.Errorf("diagnose schema %s lacks %q", raw, s)
				}
			}
			if strings.Contains(string(raw), `\"seen\"`) {
				t.Errorf("diagnose schema names a predicate the intent does not read: %s", raw)
			}
			// observe reads every input predicate; these are short, so
			// they are spelled out again rather than referred to
			// (TestIntentToolsRefer has the long ones).
			raw, _ = json.Marshal(tools["observe"].InputSchema)
			if !strings.Contains(string(raw), `[\"url\",u]; [\"status\",code]; [\"seen\",x]`) {
				t.Errorf("observe schema %s", raw)
			}
			if _, ok := tools[mcpbridge.MetaToolName]; ok != tt.wantMeta {
				t.Errorf("invoke_macro_tool listed = %v, want %v", ok, tt.wantMeta)
			}
		})
	}
}

// TestSessionFlow is the whole session of docs/mcp.md: list, call an
// intent tool, call a macro-tool it selected through invoke_macro_tool,
// and see the state delta sent with the next evaluation.
func TestSessionFlow(t *testing.T) {
	for _, v := range hostVersions {
		t.Run(v, func(t *testing.T) {
			fake := newFake()
			fake.setEvaluate(selects(tool("trace_request", false), tool("write_report", true)))
			fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
				return &protocol.InvokeResponse{
					Result:        map[string]any{"root_cause": "503 from api"},
					StateDelta:    protocol.StateDelta{Assert: []protocol.Fact{protocol.NewFact("seen", "r42")}, Retract: []protocol.Fact{}},
					Observability: protocol.Observability{Summary: "traced"},
					Next:          &protocol.Next{SuggestedIntents: []protocol.SuggestedIntent{{Name: "observe", Description: "look again"}}, ContinuationFacts: []protocol.Fact{protocol.NewFact("url", "https://app.example.com/next")}},
				}, nil
			})
			h := newHarness(t, fake, nil, hostOptions{protocolVersion: v})
			if _, ok := h.toolNames(t)["trace_request"]; ok {
				t.Fatal("a macro-tool is listed before any evaluation")
			}

			res := h.call(t, "diagnose", diagnoseArgs)
			if res.IsError {
				t.Fatalf("diagnose: %s", text(res))
			}
			if !strings.Contains(text(res), "the rules selected 2 tools") || !strings.Contains(text(res), "write_report(target*: string): The write_report tool. (asks the user)") || !strings.Contains(text(res), "Call one with invoke_macro_tool.") {
				t.Fatalf("answer = %s", text(res))
			}
			if !strings.Contains(text(res), "trace_request(target*: string)") {
				t.Errorf("text does not describe the tool: %s", text(res))
			}
			req := fake.lastEval(t)
			if req.Intent.Name != "diagnose" || len(req.Facts) != 2 || req.Facts[0].Pred != "url" {
				t.Fatalf("intent request = %+v", req)
			}
			if n, ok := req.Facts[1].Args[0].(json.Number); !ok || n != "503" {
				t.Errorf("status argument = %#v, want the exact number 503", req.Facts[1].Args[0])
			}

			if tools := h.toolNames(t); tools["trace_request"] != nil || tools[mcpbridge.MetaToolName] == nil {
				t.Fatalf("the tool list changed: %v", tools)
			}

			res = h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": "r42"}})
			if res.IsError {
				t.Fatalf("trace_request: %s", text(res))
			}
			// The suggested intent is evaluated: its tools are listed, by
			// name only (on one line) when the model saw them exactly so before.
			if want := "traced\n{\"root_cause\":\"503 from api\"}\nnext observe:\n- trace_request, write_report (as before)"; text(res) != want {
				t.Errorf("answer %q, want %q", text(res), want)
			}
			got := fake.lastInvoke(t)
			if got.MacroID != "trace_request-0001" || got.Args["target"] != "r42" || got.ConfirmationToken != "" {
				t.Errorf("invoke request = %+v", got)
			}

			// The state delta and, for the suggested intent, the
			// continuation facts go with the next evaluation.
			h.call(t, "observe", map[string]any{"facts": []any{}})
			next := fake.lastEval(t)
			var preds []string
			for _, f := range next.Facts {
				preds = append(preds, fmt.Sprintf("%s%v", f.Pred, f.Args))
			}
			joined := strings.Join(preds, " ")
			for _, want := range []string{"url[https://app.example.com]", "status[503]", "seen[r42]", "url[https://app.example.com/next]"} {
				if !strings.Contains(joined, want) {
					t.Errorf("next evaluation's facts %s lack %s", joined, want)
				}
			}
		})
	}
}

// TestSupersededAndExpiredToolsRemoved: in ModeDynamic (MCP 2025-11-25)
// a new evaluation's macro-tools replace the earlier ones in the tool list
// and an expired one goes; by default, the same holds for what
// invoke_macro_tool reaches, and the list stays as it was.
func TestSupersededAndExpiredToolsRemoved(t *testing.T) {
	for _, mode := range []mcpbridge.Mode{mcpbridge.ModeDynamic, mcpbridge.ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			dyn := mode == mcpbridge.ModeDynamic
			fake := newFake()
			fake.setEvaluate(selects(tool("first", false)))
			h := newHarness(t, fake, &mcpbridge.Options{Mode: mode}, hostOptions{protocolVersion: "2025-11-25"})
			clock := newClock()
			mcpbridge.SetClock(h.bridge, clock.now)
			h.call(t, "diagnose", diagnoseArgs)
			if dyn {
				h.waitChanged(t)
				if h.toolNames(t)["first"] == nil {
					t.Fatal("first not listed")
				}
			}
			soon := tool("second", false)
			expires := clock.now().Add(2 * time.Second)
			soon.Validity = &protocol.Validity{ExpiresAt: protocol.NewTime(expires)}
			fake.setEvaluate(selects(soon))
			h.call(t, "diagnose", diagnoseArgs)
			if dyn {
				h.waitChanged(t)
				tools := h.toolNames(t)
				if tools["first"] != nil || tools["second"] == nil {
					t.Fatalf("after a second evaluation: %v", tools)
				}
			} else if e := errorOf(t, h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "first", "arguments": map[string]any{"target": "x"}})); e.Code != protocol.CodeBridgeUnknownTool {
				t.Errorf("a superseded tool: %s", e.Code)
			}
			clock.advance(2 * time.Second) // the validity window ends
			if h.toolNames(t)["second"] != nil {
				t.Error("an expired macro-tool is still listed")
			}
			if dyn {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if _, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "second", Arguments: map[string]any{"target": "x"}}); err == nil {
					t.Error("an expired macro-tool could still be called")
				}
			} else if e := errorOf(t, h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "second", "arguments": map[string]any{"target": "x"}})); e.Code != protocol.CodeBridgeUnknownTool {
				t.Errorf("an expired tool: %s", e.Code)
			}
		})
	}
}

// TestMetaToolFallback: a host on MCP 2026-07-28 that does not subscribe
// to list changes gets invoke_macro_tool and an unchanged tool list, as
// every host does by default.
func TestMetaToolFallback(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(selects(tool("trace_request", false)))
	h := newHarness(t, fake, nil, hostOptions{protocolVersion: "2026-07-28", noListChanged: true})
	before := h.toolNames(t)
	res := h.call(t, "diagnose", diagnoseArgs)
	if !strings.Contains(text(res), "invoke_macro_tool") {
		t.Errorf("the result does not point to invoke_macro_tool: %s", text(res))
	}
	if after := h.toolNames(t); len(after) != len(before) || after["trace_request"] != nil {
		t.Errorf("the tool list changed: %v -> %v", before, after)
	}
	res = h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": "r1"}})
	if res.IsError {
		t.Fatalf("invoke_macro_tool: %s", text(res))
	}
	if got := fake.lastInvoke(t); got.MacroID != "trace_request-0001" || got.Args["target"] != "r1" {
		t.Errorf("invoke request %+v", got)
	}
	res = h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "nope"})
	e := errorOf(t, res)
	if e.Code != protocol.CodeBridgeUnknownTool || e.Details == nil || !strings.Contains(e.Details.Suggestion, "trace_request") {
		t.Errorf("unknown tool: %+v", e)
	}
}

func accept(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
}

func decline(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "decline"}, nil
}

func TestConfirmationThroughElicitation(t *testing.T) {
	key := []byte("a confirmation key shared with the server")
	undisclosed := tool("write_report", true)
	undisclosed.Safety, undisclosed.InputSchema, undisclosed.DisclosureLevel = nil, nil, protocol.DisclosureCondensed
	tests := []struct {
		name     string
		tool     protocol.MacroTool
		key      []byte
		elicit   func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		wantCode protocol.Code // "" means success
	}{
		{"accepted", tool("write_report", true), key, accept, ""},
		{"declined", tool("write_report", true), key, decline, protocol.CodeBridgeConfirmationDeclined},
		{"host without elicitation", tool("write_report", true), key, nil, protocol.CodeBridgeConfirmationUnavailable},
		{"no confirmation key", tool("write_report", true), nil, accept, protocol.CodeBridgeConfirmationUnavailable},
		{"safety not disclosed, accepted", undisclosed, key, accept, ""},
		{"safety not disclosed, declined", undisclosed, key, decline, protocol.CodeBridgeConfirmationDeclined},
	}
	for _, v := range hostVersions {
		for _, tt := range tests {
			t.Run(v+"/"+tt.name, func(t *testing.T) {
				fake := newFake()
				fake.setEvaluate(selects(tt.tool))
				var ran int
				var mu sync.Mutex
				fake.setInvoke(func(_ context.Context, req *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
					if req.ConfirmationToken == "" {
						return nil, protocol.Errorf(protocol.CodeConfirmationRequired, "write_report requires user confirmation")
					}
					if _, err := protocol.VerifyConfirmationToken(key, req.ConfirmationToken, req.MacroID); err != nil {
						return nil, protocol.Errorf(protocol.CodeConfirmationInvalid, "bad token")
					}
					mu.Lock()
					ran++
					mu.Unlock()
					return &protocol.InvokeResponse{Result: map[string]any{"written": true}}, nil
				})
				var asked int
				elicit := tt.elicit
				if elicit != nil {
					inner := elicit
					elicit = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						mu.Lock()
						asked++
						mu.Unlock()
						if !strings.Contains(r.Params.Message, "write_report") {
							t.Errorf("the user is asked %q", r.Params.Message)
						}
						return inner(ctx, r)
					}
				}
				h := newHarness(t, fake, &mcpbridge.Options{Mode: mcpbridge.ModeMeta, ConfirmationKey: tt.key}, hostOptions{protocolVersion: v, elicit: elicit})
				h.call(t, "diagnose", diagnoseArgs)
				res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "write_report", "arguments": map[string]any{"target": "r42"}})
				mu.Lock()
				defer mu.Unlock()
				if tt.wantCode == "" {
					if res.IsError {
						t.Fatalf("want success, got %s", text(res))
					}
					if ran != 1 || asked != 1 {
						t.Errorf("ran %d times, asked %d times; want 1 and 1", ran, asked)
					}
					return
				}
				if e := errorOf(t, res); e.Code != tt.wantCode {
					t.Errorf("code %s, want %s (%s)", e.Code, tt.wantCode, e.Message)
				}
				if ran != 0 {
					t.Error("the macro-tool ran without the user's consent")
				}
			})
		}
	}
}

// TestConfirmationAnswerMustMatch: a host cannot skip the question by
// sending an answer to a question the bridge never asked.
func TestConfirmationAnswerMustMatch(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(selects(tool("write_report", true)))
	h := newHarness(t, fake, &mcpbridge.Options{Mode: mcpbridge.ModeMeta, ConfirmationKey: []byte("k-k-k-k-k-k-k-k-k")}, hostOptions{protocolVersion: "2025-11-25", elicit: accept})
	h.call(t, "diagnose", diagnoseArgs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpbridge.MetaToolName,
		Arguments:      map[string]any{"tool": "write_report", "arguments": map[string]any{"target": "x"}},
		InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}, RequestState: "forged"})
	if err != nil {
		t.Fatal(err)
	}
	if e := errorOf(t, res); e.Code != protocol.CodeBridgeConfirmationDeclined {
		t.Errorf("forged answer: %s", e.Code)
	}
	if fake.invokeCount() != 0 {
		t.Error("the macro-tool ran on a forged answer")
	}
}

// TestEveryErrorMapped makes the fake answer with every registry code and
// checks the host gets isError with the registry's fields; the bridge's
// own codes are triggered for real. A code without a case fails the test.
func TestEveryErrorMapped(t *testing.T) {
	covered := map[protocol.Code]bool{}
	check := func(t *testing.T, res *mcp.CallToolResult, want protocol.Code) {
		t.Helper()
		e := errorOf(t, res)
		if e.Code != want {
			t.Fatalf("code %s, want %s (%s)", e.Code, want, e.Message)
		}
		info, _ := protocol.Lookup(want)
		if e.Recoverable != info.Recoverable {
			t.Errorf("recoverable %v, registry says %v", e.Recoverable, info.Recoverable)
		}
		for _, leak := range []string{"manglecp client:", "goroutine", ".go:", "/root/", "panic"} {
			if strings.Contains(e.Message+text(res), leak) {
				t.Errorf("the host sees %q: %s", leak, e.Message)
			}
		}
		covered[want] = true
	}

	for _, info := range protocol.Codes() {
		t.Run(string(info.Code), func(t *testing.T) {
			fake := newFake()
			e := protocol.Errorf(info.Code, "the server says %s", info.Code).
				WithDetails(&protocol.ErrorDetails{Suggestion: "try again", Violations: []protocol.Violation{{FactIndex: 0, Predicate: "url", Issue: info.Code, Message: "bad"}}})
			if info.Code == protocol.CodeRateLimited || info.Code == protocol.CodeServerNotReady {
				e.WithRetryAfter(1)
			}
			fake.setEvaluate(func(context.Context, *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
				return nil, e
			})
			h := newHarness(t, fake, nil, hostOptions{protocolVersion: "2025-11-25"})
			res := h.call(t, "diagnose", diagnoseArgs)
			check(t, res, info.Code)
			got := errorOf(t, res)
			if got.Message != e.Message || got.Details == nil || got.Details.Suggestion != "try again" || len(got.Details.Violations) != 1 {
				t.Errorf("the error's message and details were not passed on: %+v", got)
			}
			if (info.Code == protocol.CodeRateLimited || info.Code == protocol.CodeServerNotReady) && (got.RetryAfterMS == nil || *got.RetryAfterMS != 1) {
				t.Errorf("retry_after_ms = %v", got.RetryAfterMS)
			}
		})
	}

	t.Run("bridge/invalid arguments", func(t *testing.T) {
		h := newHarness(t, newFake(), nil, hostOptions{})
		check(t, h.call(t, "diagnose", map[string]any{"facts": []any{42}}), protocol.CodeBridgeInvalidArguments)
		check(t, h.call(t, "diagnose", map[string]any{"facts": "url"}), protocol.CodeBridgeInvalidArguments)
	})
	t.Run("bridge/schema refused", func(t *testing.T) {
		fake := newFake()
		hostile := tool("r", false)
		hostile.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"target": map[string]any{"$ref": "file:///etc/passwd"}}}
		fake.setEvaluate(selects(hostile))
		h := newHarness(t, fake, nil, hostOptions{})
		h.call(t, "diagnose", diagnoseArgs)
		check(t, h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "r", "arguments": map[string]any{"target": "x"}}), protocol.CodeBridgeSchemaRefused)
	})
	t.Run("bridge/unknown tool", func(t *testing.T) {
		h := newHarness(t, newFake(), nil, hostOptions{protocolVersion: "2025-11-25"})
		check(t, h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "nothing"}), protocol.CodeBridgeUnknownTool)
	})
	t.Run("bridge/confirmation declined and unavailable", func(t *testing.T) {
		fake := newFake()
		fake.setEvaluate(selects(tool("w", true)))
		h := newHarness(t, fake, &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")}, hostOptions{elicit: decline})
		h.call(t, "diagnose", diagnoseArgs)
		check(t, h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "w", "arguments": map[string]any{"target": "x"}}), protocol.CodeBridgeConfirmationDeclined)
		h2 := newHarness(t, fake, nil, hostOptions{elicit: accept})
		h2.call(t, "diagnose", diagnoseArgs)
		check(t, h2.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "w", "arguments": map[string]any{"target": "x"}}), protocol.CodeBridgeConfirmationUnavailable)
	})
	t.Run("bridge/server unreachable, then reconnected", func(t *testing.T) {
		h := newHarness(t, newFake(), nil, hostOptions{})
		h.mu.Lock()
		for _, c := range h.conns {
			_ = c.Close()
		}
		h.mu.Unlock()
		// Whether the client saw the connection close or its request
		// finds it closed, the call fails as unreachable.
		check(t, h.call(t, "diagnose", diagnoseArgs), protocol.CodeBridgeServerUnreachable)
		if res := h.call(t, "diagnose", diagnoseArgs); res.IsError {
			t.Errorf("after reconnecting: %s", text(res))
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.dials != 2 {
			t.Errorf("dialed %d times, want 2", h.dials)
		}
	})
	t.Run("bridge/protocol mismatch", func(t *testing.T) {
		fake := newFake()
		fake.manifest.Protocol.Manglecp = "2025-01-draft"
		_, err := mcpbridge.New(context.Background(), func(ctx context.Context) (*client.Session, error) {
			return dialFake(ctx, t, fake)
		}, nil)
		if e := mcpbridge.ErrorOf(err); e == nil || e.Code != protocol.CodeBridgeProtocolMismatch {
			t.Fatalf("New with a server of another version: %v", err)
		}
		if e := mcpbridge.ErrorOf(&client.TransportError{Op: "decode", Err: errors.New("json: cannot unmarshal /root/x.go")}); e.Code != protocol.CodeBridgeProtocolMismatch || strings.Contains(e.Message, "/root") {
			t.Errorf("a reply that is not MangleCP: %+v", e)
		}
		covered[protocol.CodeBridgeProtocolMismatch] = true
	})
	t.Run("internal errors are masked", func(t *testing.T) {
		e := mcpbridge.ErrorOf(errors.New("open /etc/secret: permission denied"))
		if e.Code != protocol.CodeInternalError || strings.Contains(e.Message, "/etc") {
			t.Errorf("ErrorOf(plain error) = %+v", e)
		}
	})

	for _, c := range append(protocol.Codes(), protocol.BridgeCodes()...) {
		if !covered[c.Code] {
			t.Errorf("no case maps %s", c.Code)
		}
	}
}

func TestCancellationReachesTheServer(t *testing.T) {
	for _, v := range hostVersions {
		t.Run(v, func(t *testing.T) {
			fake := newFake()
			fake.setEvaluate(selects(tool("slow", false)))
			started, stopped := make(chan struct{}), make(chan struct{})
			fake.setInvoke(func(ctx context.Context, _ *protocol.InvokeRequest, _ func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
				close(started)
				<-ctx.Done() // only a MangleCP cancel ends this
				close(stopped)
				return nil, protocol.Errorf(protocol.CodeCancelled, "cancelled")
			})
			h := newHarness(t, fake, nil, hostOptions{protocolVersion: v})
			h.call(t, "diagnose", diagnoseArgs)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpbridge.MetaToolName, Arguments: map[string]any{"tool": "slow", "arguments": map[string]any{"target": "x"}}})
				errc <- err
			}()
			select {
			case <-started:
			case <-time.After(20 * time.Second):
				t.Fatal("the invocation never started")
			}
			cancel() // the SDK sends notifications/cancelled
			select {
			case <-stopped:
			case <-time.After(20 * time.Second):
				t.Fatal("the MangleCP server never saw the cancel")
			}
			if err := <-errc; err == nil {
				t.Error("the cancelled call returned a result")
			}
		})
	}
}

func TestProgressPassesThrough(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(selects(tool("long", false)))
	fake.setInvoke(func(_ context.Context, _ *protocol.InvokeRequest, progress func(protocol.Progress)) (*protocol.InvokeResponse, *protocol.Error) {
		half := 50.0
		progress(protocol.Progress{Status: "started", Detail: "opening"})
		progress(protocol.Progress{Status: "running", Detail: "halfway", Percent: &half})
		return &protocol.InvokeResponse{Result: map[string]any{}}, nil
	})
	notes := make(chan *mcp.ProgressNotificationParams, 10)
	h := newHarness(t, fake, nil, hostOptions{progress: func(r *mcp.ProgressNotificationClientRequest) { notes <- r.Params }})
	h.call(t, "diagnose", diagnoseArgs)
	params := &mcp.CallToolParams{Name: mcpbridge.MetaToolName, Arguments: map[string]any{"tool": "long", "arguments": map[string]any{"target": "x"}}}
	params.SetProgressToken("tok-1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	// The bridge sends every note before it answers the call (progress);
	// the host handles notifications asynchronously: wait for the two.
	var got []*mcp.ProgressNotificationParams
	for len(got) < 2 {
		select {
		case p := <-notes:
			got = append(got, p)
		case <-ctx.Done():
			t.Fatalf("got %d progress notifications, want 2", len(got))
		}
	}
	if extra := len(notes); extra != 0 {
		t.Fatalf("got %d progress notifications, want 2", 2+extra)
	}
	if got[0].ProgressToken != "tok-1" || !strings.Contains(got[0].Message, "opening") || got[1].Progress != 50 || got[1].Total != 100 || got[1].Progress <= got[0].Progress {
		t.Errorf("progress = %+v, %+v", got[0], got[1])
	}
}

func TestStartIntentAndResources(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(func(_ context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		return &protocol.IntentResponse{MacroTools: []protocol.MacroTool{tool("trace_request", false)},
			RequiredSkills: []protocol.Skill{{SkillID: "reading", Name: "Reading", Description: "How to read", Content: "# Read it"}}}, nil
	})
	h := newHarness(t, fake, &mcpbridge.Options{Mode: mcpbridge.ModeDynamic, Start: &mcpbridge.Start{Intent: "diagnose", Facts: []protocol.Fact{protocol.NewFact("url", "https://x")}}}, hostOptions{protocolVersion: "2025-11-25"})
	if h.toolNames(t)["trace_request"] == nil {
		t.Fatal("the start intent's tools are not in the first tools/list")
	}
	// By default they are reachable through invoke_macro_tool at once.
	h2 := newHarness(t, fake, &mcpbridge.Options{Start: &mcpbridge.Start{Intent: "diagnose", Facts: []protocol.Fact{protocol.NewFact("url", "https://x")}}}, hostOptions{})
	if res := h2.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": "x"}}); res.IsError {
		t.Fatalf("the start intent's tool through invoke_macro_tool: %s", text(res))
	}
	if req := fake.lastEval(t); req.Intent.Name != "diagnose" || len(req.Facts) != 1 {
		t.Errorf("start intent request %+v", req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for uri, want := range map[string]string{"manglecp://skills/reading": "# Read it", mcpbridge.ManifestURI: `"server_name": "fake"`, mcpbridge.StateURI: `"https://x"`} {
		r, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
		if len(r.Contents) != 1 || !strings.Contains(r.Contents[0].Text, want) {
			t.Errorf("%s = %+v, want %q", uri, r.Contents, want)
		}
	}
}

func TestProofHintsOnRequest(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(func(_ context.Context, req *protocol.IntentRequest) (*protocol.IntentResponse, *protocol.Error) {
		resp := &protocol.IntentResponse{MacroTools: []protocol.MacroTool{tool("t", false)}}
		if req.Options != nil && req.Options.IncludeProofHints {
			resp.ProofHints = &protocol.ProofHints{Derivations: []protocol.Derivation{{MacroID: "t-0001", RuleChain: []string{"select_t", "failed"}}}}
		}
		return resp, nil
	})
	h := newHarness(t, fake, nil, hostOptions{})
	res := h.call(t, "diagnose", map[string]any{"facts": []any{[]any{"url", "u"}}, "explain": true})
	if !strings.Contains(text(res), "why t-0001: select_t <- failed") {
		t.Errorf("proof hints missing: %s", text(res))
	}
}

func TestTokenBudgetSent(t *testing.T) {
	fake := newFake()
	h := newHarness(t, fake, &mcpbridge.Options{TokenBudget: 300, Disclosure: protocol.DisclosureAdaptive}, hostOptions{})
	h.call(t, "diagnose", diagnoseArgs)
	req := fake.lastEval(t)
	if req.Constraints == nil || req.Constraints.MaxTokensBudget == nil || *req.Constraints.MaxTokensBudget != 300 || req.Options.DisclosurePreference != "adaptive" {
		t.Errorf("intent request constraints %+v options %+v", req.Constraints, req.Options)
	}
}
