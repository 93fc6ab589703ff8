package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/mcpbridge"
)

// readmeFacts are the facts of the README's curl example: a failed
// request followed by a console error.
var readmeFacts = []any{
	[]any{"current_url", "https://app.example.com/dashboard"},
	[]any{"console_event", "s1", "error", "TypeError: Cannot read properties of null", 1771510200000},
	[]any{"net_request", "s1", "r42", "GET", "https://api.example.com/users", 1771510199000},
	[]any{"net_response", "s1", "r42", 404, 1771510199500},
}

// mcpHost runs `manglecp mcp ARGS` in process over pipes and connects the
// Go SDK's client to it, as a host does with the command.
type mcpHost struct {
	cs      *mcp.ClientSession
	changed chan struct{}
	stderr  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startMCP(t *testing.T, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error), args ...string) *mcpHost {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &mcpHost{changed: make(chan struct{}, 100), stderr: &syncBuffer{}}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, append([]string{"mcp"}, args...), inR, outW, h.stderr)
		outW.Close()
	}()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: elicit,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case h.changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := cl.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		t.Fatalf("connect: %v\n%s", err, h.stderr.String())
	}
	h.cs = cs
	t.Cleanup(func() {
		_ = cs.Close()
		inW.Close()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("manglecp mcp exited %d\n%s", code, h.stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Errorf("manglecp mcp did not exit when the host closed stdin")
		}
		cancel()
	})
	return h
}

func (h *mcpHost) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

func (h *mcpHost) tools(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

func resultText(res *mcp.CallToolResult) string {
	var s strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s.WriteString(tc.Text)
		}
	}
	return s.String()
}

// TestMCPBrowserDomain drives `manglecp mcp` (the embedded browser domain,
// in process) as a host would: the README's failed request, list_changed,
// a macro-tool, a confirmed one, and the state carried on.
func TestMCPBrowserDomain(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			reports := t.TempDir()
			cfg := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(cfg, []byte(`{"report_dir": "`+reports+`"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			var asked int
			var mu sync.Mutex
			h := startMCP(t, version, func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked++
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
			}, "--config", cfg)

			tools := h.tools(t)
			for _, want := range []string{"observe", "diagnose_error", "automate"} {
				if tools[want] == nil {
					t.Fatalf("intent tool %s missing: %v", want, tools)
				}
			}
			res := h.call(t, "diagnose_error", map[string]any{"facts": readmeFacts})
			if res.IsError {
				t.Fatalf("diagnose_error: %s", resultText(res))
			}
			if !strings.Contains(resultText(res), "diagnose_causal_chain") {
				t.Fatalf("diagnose_error selected: %s", resultText(res))
			}
			select {
			case <-h.changed:
			case <-time.After(20 * time.Second):
				t.Fatal("no tools/list_changed after the evaluation")
			}
			tools = h.tools(t)
			if tools["diagnose_causal_chain"] == nil {
				t.Fatalf("diagnose_causal_chain not listed: %v", tools)
			}
			res = h.call(t, "diagnose_causal_chain", map[string]any{"request_id": "r42"})
			if res.IsError {
				t.Fatalf("diagnose_causal_chain: %s", resultText(res))
			}
			raw, _ := json.Marshal(res.StructuredContent)
			if !strings.Contains(string(raw), "diagnosed_error") {
				t.Errorf("no state delta in %s", raw)
			}

			// write_diagnosis_report writes a file: the user is asked.
			if tools["write_diagnosis_report"] == nil {
				t.Fatalf("write_diagnosis_report not listed: %v", tools)
			}
			{
				res = h.call(t, "write_diagnosis_report", map[string]any{"request_id": "r42"})
				if res.IsError {
					t.Fatalf("write_diagnosis_report: %s", resultText(res))
				}
				mu.Lock()
				n := asked
				mu.Unlock()
				if n != 1 {
					t.Errorf("the user was asked %d times, want 1", n)
				}
				if entries, _ := os.ReadDir(reports); len(entries) != 1 {
					t.Errorf("report directory holds %d files, want 1", len(entries))
				}
			}

			// The working state carries the page's facts: a new
			// evaluation with no facts still sees the failed request.
			res = h.call(t, "diagnose_error", map[string]any{"facts": []any{}})
			if res.IsError || !strings.Contains(resultText(res), "diagnose_causal_chain") {
				t.Errorf("the working state was not carried: %s", resultText(res))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "manglecp://state"})
			if err != nil || !strings.Contains(st.Contents[0].Text, "diagnosed_error") {
				t.Errorf("state resource: %v %v", err, st)
			}
		})
	}
}

// TestMCPRefusesWithoutElicitation: without elicitation the confirmed
// tool is refused, never run.
func TestMCPRefusesWithoutElicitation(t *testing.T) {
	reports := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"report_dir": "`+reports+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startMCP(t, "2025-11-25", nil, "--config", cfg, "--tools", "meta")
	h.call(t, "diagnose_error", map[string]any{"facts": readmeFacts})
	res := h.call(t, "invoke_macro_tool", map[string]any{"tool": "write_diagnosis_report", "arguments": map[string]any{"request_id": "r42"}})
	if !res.IsError || !strings.Contains(resultText(res), "x-bridge_confirmation_unavailable") {
		t.Fatalf("want x-bridge_confirmation_unavailable, got %s", resultText(res))
	}
	if entries, _ := os.ReadDir(reports); len(entries) != 0 {
		t.Error("the report was written without confirmation")
	}
}

// TestMCPWorkspaceDomain: the serve flags that choose the domain pass
// through to the embedded server, and --intent-tools chooses how its five
// intents are listed (auto, the default: one evaluate_intent tool).
func TestMCPWorkspaceDomain(t *testing.T) {
	perIntent := []string{"edit", "explore", "find", "read", "reorganize"}
	tests := []struct {
		name string
		args []string
		want []string // the intent tools listed
	}{
		{"default", nil, []string{mcpbridge.IntentToolName}},
		{"auto", []string{"--intent-tools", "auto"}, []string{mcpbridge.IntentToolName}},
		{"single", []string{"--intent-tools", "single"}, []string{mcpbridge.IntentToolName}},
		{"per-intent", []string{"--intent-tools", "per-intent"}, perIntent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--domain", "workspace", "--root", t.TempDir(), "--tools", "dynamic"}, tt.args...)
			h := startMCP(t, "2025-11-25", nil, args...)
			var got []string
			for n := range h.tools(t) {
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("workspace domain tools %v, want %v", got, tt.want)
			}
			if tt.want[0] != mcpbridge.IntentToolName {
				return
			}
			res := h.call(t, mcpbridge.IntentToolName, map[string]any{"intent": "find", "facts": []any{}})
			if res.IsError || !strings.Contains(resultText(res), "find: the rules selected") {
				t.Errorf("evaluate_intent find: %s", resultText(res))
			}
			res = h.call(t, mcpbridge.IntentToolName, map[string]any{"intent": "finnd"})
			if !res.IsError || !strings.Contains(resultText(res), `did you mean "find"?`) {
				t.Errorf("evaluate_intent finnd: %s", resultText(res))
			}
		})
	}
}

// TestMCPBrowserIntentTools: the browser domain's three intents keep one
// tool each by default (auto); --intent-tools single lists one tool.
func TestMCPBrowserIntentTools(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{nil, []string{"automate", "diagnose_error", "observe"}},
		{[]string{"--intent-tools", "single"}, []string{mcpbridge.IntentToolName}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			h := startMCP(t, "2025-11-25", nil, append([]string{"--tools", "dynamic"}, tt.args...)...)
			var got []string
			for n := range h.tools(t) {
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("browser domain tools %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMCPUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"embedded flags with a target", []string{"http://127.0.0.1:1", "--rules", "x"}, exitUsage},
		{"facts without intent", []string{"--facts", "f.json"}, exitUsage},
		{"unknown mode", []string{"--tools", "sometimes"}, exitUsage},
		{"unknown intent tools", []string{"--intent-tools", "many"}, exitUsage},
		{"intent tools without a value", []string{"--intent-tools"}, exitUsage},
		{"unreachable target", []string{"http://127.0.0.1:1"}, exitTransport},
		{"bare port", []string{"--http", ":0"}, exitUsage},
		{"root without workspace", []string{"--root", "/tmp"}, exitUsage},
		{"domain with a target", []string{"http://127.0.0.1:1", "--domain", "workspace"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got := Main(context.Background(), append([]string{"mcp"}, tt.args...), strings.NewReader(""), io.Discard, &stderr)
			if got != tt.want {
				t.Errorf("exit %d, want %d\n%s", got, tt.want, stderr.String())
			}
		})
	}
}
