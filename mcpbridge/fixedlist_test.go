package mcpbridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
)

// rawToolList is the host's tools/list as JSON bytes.
func (h *harness) rawToolList(t *testing.T) []byte {
	t.Helper()
	raw, err := json.Marshal(h.listTools(t))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestToolListNeverChanges: by default the tool list is byte-identical
// before and after every call (an evaluation that selects tools, one that
// selects others, a macro-tool run through invoke_macro_tool, a call with
// wrong arguments, an unknown tool), for a host on MCP 2025-11-25 and one
// on 2026-07-28, that follows list changes (subscribed) or not, with
// either kind of intent tools; no tools/list_changed is sent.
func TestToolListNeverChanges(t *testing.T) {
	for _, v := range hostVersions {
		for _, follows := range []bool{true, false} {
			for _, it := range []mcpbridge.IntentTools{mcpbridge.IntentToolsPerIntent, mcpbridge.IntentToolsSingle} {
				name := v + "/not subscribed/" + string(it)
				if follows {
					name = v + "/subscribed/" + string(it)
				}
				t.Run(name, inBubble(func(t *testing.T) {
					fake := newFake()
					fake.setEvaluate(selects(tool("trace_request", false), tool("write_report", true)))
					h := newHarness(t, fake, &mcpbridge.Options{IntentTools: it, ConfirmationKey: []byte("0123456789abcdef")}, hostOptions{protocolVersion: v, noListChanged: !follows, elicit: accept})
					before := h.rawToolList(t)
					intent := func(facts any) map[string]any {
						if it == mcpbridge.IntentToolsSingle {
							return map[string]any{"intent": "diagnose", "facts": facts}
						}
						return map[string]any{"facts": facts}
					}
					tool := "diagnose"
					if it == mcpbridge.IntentToolsSingle {
						tool = mcpbridge.IntentToolName
					}
					calls := []struct {
						name string
						args map[string]any
					}{
						{tool, intent(diagnoseArgs["facts"])},
						{mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": "r1"}}},
						{mcpbridge.MetaToolName, map[string]any{"tool": "write_report", "arguments": map[string]any{"target": "r1"}}},
						{mcpbridge.MetaToolName, map[string]any{"tool": "trace_request", "arguments": map[string]any{"target": 7}}},
						{mcpbridge.MetaToolName, map[string]any{"tool": "nothing"}},
						{tool, intent([]any{})},
					}
					for i, c := range calls {
						if i == 5 {
							fake.setEvaluate(selects(tool0("other")))
						}
						h.call(t, c.name, c.args)
						if after := h.rawToolList(t); !bytes.Equal(before, after) {
							t.Fatalf("after call %d (%s) the tool list changed:\n%s\n->\n%s", i, c.name, before, after)
						}
					}
					// The bubble's clock moves past the SDK's batching of list
					// changes at once; then every notification was handled.
					time.Sleep(time.Second)
					synctest.Wait()
					if n := len(h.changed); n != 0 {
						t.Errorf("%d tools/list_changed notifications", n)
					}
				}))
			}
		}
	}
}

// tool0 is a read-only macro-tool without parameters.
func tool0(name string) protocol.MacroTool {
	t := tool(name, false)
	t.InputSchema = map[string]any{"type": "object"}
	return t
}

// TestSchemaErrorBeforeConsent: arguments that do not match the selected
// tool's schema are answered with x-bridge_invalid_arguments naming the
// argument and the tool's signature; the user is not asked and the server
// not called.
func TestSchemaErrorBeforeConsent(t *testing.T) {
	fake := newFake()
	strict := tool("write_report", true)
	strict.InputSchema["additionalProperties"] = false
	fake.setEvaluate(selects(strict))
	asked := 0
	h := newHarness(t, fake, &mcpbridge.Options{ConfirmationKey: []byte("0123456789abcdef")}, hostOptions{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return accept(ctx, r)
	}})
	h.call(t, "diagnose", diagnoseArgs)
	res := h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "write_report", "arguments": map[string]any{"targte": "x"}})
	e := errorOf(t, res)
	if e.Code != protocol.CodeBridgeInvalidArguments || !e.Recoverable || e.Details == nil || len(e.Details.SchemaErrors) != 2 {
		t.Fatalf("error %+v", e)
	}
	for _, want := range []string{`/target: required argument "target" is missing`, `/targte: argument "targte" is not a parameter`, "call write_report(target*: string)"} {
		if !strings.Contains(text(res), want) {
			t.Errorf("the answer lacks %q: %s", want, text(res))
		}
	}
	if asked != 0 || fake.invokeCount() != 0 {
		t.Errorf("asked the user %d times, invoked %d times; want 0 and 0", asked, fake.invokeCount())
	}
}

// TestDynamicRefusedOnModern: ModeDynamic varies the tool list, which MCP
// 2026-07-28 forbids: a host asking for that version is refused with a
// message that says why (the SDK's client then initializes on
// 2025-11-25, where the mode works).
func TestDynamicRefusedOnModern(t *testing.T) {
	fake := newFake()
	fake.setEvaluate(selects(tool("trace_request", false)))
	h := newHarness(t, fake, &mcpbridge.Options{Mode: mcpbridge.ModeDynamic}, hostOptions{protocolVersion: "2026-07-28"})
	if got := h.cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Errorf("negotiated %s, want 2025-11-25", got)
	}
	h.call(t, "diagnose", diagnoseArgs)
	h.waitChanged(t)
	if h.toolNames(t)["trace_request"] == nil {
		t.Error("dynamic mode on 2025-11-25 does not list the selected tool")
	}

	// The refusal itself, as a host sees it on the wire.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	go func() { _ = h.bridge.Run(ctx, st) }()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"h","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Write(ctx, msg); err != nil {
		t.Fatal(err)
	}
	got, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := got.(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		t.Fatalf("server/discover answered %+v", got)
	}
	var werr *jsonrpc.Error
	if !asWireError(resp.Error, &werr) || werr.Code != mcp.CodeUnsupportedProtocolVersion || !strings.Contains(werr.Message, "--tools dynamic") || !strings.Contains(werr.Message, "forbids") || !strings.Contains(string(werr.Data), `"2025-11-25"`) {
		t.Errorf("refusal %+v", resp.Error)
	}
}

func asWireError(err error, out **jsonrpc.Error) bool {
	w, ok := err.(*jsonrpc.Error)
	if ok {
		*out = w
	}
	return ok
}
