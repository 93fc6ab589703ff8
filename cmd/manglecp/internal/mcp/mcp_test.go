package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
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
	stderr  *testenv.Buffer
}

func startMCP(t *testing.T, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error), args ...string) *mcpHost {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &mcpHost{changed: make(chan struct{}, 100), stderr: &testenv.Buffer{}}
	done := make(chan int, 1)
	go func() {
		done <- commands.Main(ctx, clitest.Env(t), append([]string{"mcp"}, args...), inR, outW, h.stderr)
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
// in process) as a host would: the README's failed request, a macro-tool
// through invoke_macro_tool (the tool list never changes), a confirmed
// one, and the state carried on.
func TestMCPBrowserDomain(t *testing.T) {
	t.Parallel()
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
			if tools = h.tools(t); tools["diagnose_causal_chain"] != nil || tools[mcpbridge.MetaToolName] == nil {
				t.Fatalf("the tool list changed: %v", tools)
			}
			res = h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "diagnose_causal_chain", "arguments": map[string]any{"request_id": "r42"}})
			if res.IsError || !strings.Contains(resultText(res), "404") {
				t.Fatalf("diagnose_causal_chain: %s", resultText(res))
			}

			// write_diagnosis_report writes a file: the user is asked.
			{
				res = h.call(t, mcpbridge.MetaToolName, map[string]any{"tool": "write_diagnosis_report", "arguments": map[string]any{"request_id": "r42"}})
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"embedded flags with a target", []string{"http://127.0.0.1:1", "--rules", "x"}, cmdline.ExitUsage},
		{"facts without intent", []string{"--facts", "f.json"}, cmdline.ExitUsage},
		{"unknown mode", []string{"--tools", "sometimes"}, cmdline.ExitUsage},
		{"unknown intent tools", []string{"--intent-tools", "many"}, cmdline.ExitUsage},
		{"intent tools without a value", []string{"--intent-tools"}, cmdline.ExitUsage},
		{"unreachable target", []string{"http://127.0.0.1:1"}, cmdline.ExitTransport},
		{"bare port", []string{"--http", ":0"}, cmdline.ExitUsage},
		{"root without workspace", []string{"--root", "/tmp"}, cmdline.ExitUsage},
		{"domain with a target", []string{"http://127.0.0.1:1", "--domain", "workspace"}, cmdline.ExitUsage},
		{"negative session timeout", []string{"--http", "127.0.0.1:0", "--session-timeout", "-1s"}, cmdline.ExitUsage},
		{"zero line bound", []string{"--max-line-bytes", "0"}, cmdline.ExitUsage},
		{"zero tool bound", []string{"--max-tools", "0"}, cmdline.ExitUsage},
		{"negative manifest bound", []string{"--max-manifest-bytes", "-1"}, cmdline.ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got := commands.Main(context.Background(), clitest.Env(t), append([]string{"mcp"}, tt.args...), strings.NewReader(""), io.Discard, &stderr)
			if got != tt.want {
				t.Errorf("exit %d, want %d\n%s", got, tt.want, stderr.String())
			}
		})
	}
}

// TestMCPStdioMalformedLines: `manglecp mcp` over stdio answers a line
// that is not JSON and a line over --max-line-bytes with JSON-RPC errors
// and goes on serving (issue 26 item 19; the table of malformed lines is
// mcpbridge's TestStdioMalformedLines).
func TestMCPStdioMalformedLines(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &testenv.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- commands.Main(ctx, clitest.Env(t), []string{"mcp", "--max-line-bytes", "2048"}, inR, outW, stderr)
		_ = outW.Close()
	}()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("manglecp mcp stopped reading: %v\n%s", err, stderr.String())
		}
	}
	next := func() map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("manglecp mcp closed its output\n%s", stderr.String())
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("not JSON: %q", l)
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer\n%s", stderr.String())
		}
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := next(); m["id"] != 1.0 || m["error"] != nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tc := range []struct {
		line string
		code float64
	}{
		{`{"jsonrpc":"2.0","id":2,"method":`, -32700},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"x":"` + strings.Repeat("x", 4096) + `"}}`, -32600},
	} {
		send(tc.line)
		m := next()
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != tc.code || m["id"] != nil {
			t.Errorf("answer %v, want error %v with id null", m, tc.code)
		}
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if m := next(); m["id"] != 4.0 || m["result"] == nil {
		t.Fatalf("tools/list after the malformed lines: %v", m)
	}
	_ = inW.Close()
	select {
	case code := <-done:
		if code != cmdline.ExitOK {
			t.Errorf("exit %d\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("manglecp mcp did not exit when stdin closed")
	}
}

// TestMCPHTTPSessionTimeout: with --session-timeout, `manglecp mcp --http`
// forgets a session its host abandoned (issue 26 item 20; the count of
// reclaimed sessions and the timing, on the bubble's clock, are
// mcpbridge's TestHTTPIdleSessionsExpire). The timeout here is 1 ms, so
// the test waits for no clock: it polls until the session is gone.
func TestMCPHTTPSessionTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testenv.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- commands.Main(ctx, clitest.Env(t), []string{"mcp", "--http", "127.0.0.1:0", "--session-timeout", "1ms"}, strings.NewReader(""), io.Discard, stderr)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Errorf("manglecp mcp --http did not stop")
		}
	}()
	urlRE := regexp.MustCompile(`url=(http://\S+/mcp)`)
	var url string
	for wait := testenv.NewWait(30 * time.Second); url == ""; {
		if m := urlRE.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		} else if !wait.Next() {
			t.Fatalf("no URL logged\n%s", stderr.String())
		}
	}
	post := func(session, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	status, id := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"gone","version":"1"}}}`)
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: HTTP %d, session %q", status, id)
	}
	post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var status2 int
	if !testenv.Poll(10*time.Second, func() bool {
		status2, _ = post(id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		return status2 == http.StatusNotFound
	}) {
		t.Fatalf("an abandoned session answers HTTP %d after its timeout, want 404", status2)
	}
}

// TestMCPHostileTarget: `manglecp mcp TARGET` refuses a server whose
// manifest is over the bridge's bounds with message_too_large naming the
// bound, and stops reading a 200 MB manifest at --max-manifest-bytes
// (issue 26 item 9; the answers are mcpbridge's TestHostileServerAnswers).
func TestMCPHostileTarget(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	var huge atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if huge.Load() {
			chunk := []byte(strings.Repeat("a", 64<<10))
			_, _ = io.WriteString(w, `{"type":"manifest","manglecp":"`+protocol.Version+`","payload":{"server_name":"`)
			for i := 0; i < (200<<20)/len(chunk); i++ {
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
			return
		}
		m := protocol.Manifest{ServerName: "hostile", Status: protocol.StatusReady,
			Protocol:  protocol.ProtocolInfo{Manglecp: protocol.Version},
			Domain:    protocol.DomainInfo{ID: "hostile"},
			Endpoints: &protocol.Endpoints{IntentEval: "/eval", MacroInvoke: "/invoke"}}
		for i := range 20000 {
			m.Intents = append(m.Intents, protocol.IntentDecl{Name: fmt.Sprintf("i%d", i)})
		}
		env, _ := protocol.NewEnvelope(protocol.TypeManifest, "", m)
		raw, _ := env.Encode()
		_, _ = w.Write(raw)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name  string
		huge  bool
		args  []string
		bound string
	}{
		{"20,000 intents", false, nil, "MaxIntents"},
		{"200 MB manifest", true, []string{"--max-manifest-bytes", "1048576", "--max-answer-bytes", "1048576"}, "MaxReplyBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			huge.Store(tc.huge)
			var stderr bytes.Buffer
			code := commands.Main(context.Background(), clitest.Env(t), append([]string{"mcp", srv.URL}, tc.args...), strings.NewReader(""), io.Discard, &stderr)
			if code != cmdline.ExitProtocol || !strings.Contains(stderr.String(), "message_too_large") || !strings.Contains(stderr.String(), tc.bound) {
				t.Fatalf("exit %d, want %d with message_too_large naming %s\n%s", code, cmdline.ExitProtocol, tc.bound, stderr.String())
			}
			if n := sent.Load(); n > 32<<20 {
				t.Errorf("the bridge read %d bytes of a 200 MB manifest", n)
			}
		})
	}
}
