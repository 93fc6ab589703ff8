package remote

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestClientCommands drives manifest, eval and invoke against a real
// server, in human and JSON form, with the documented exit codes.
func TestClientCommands(t *testing.T) {
	t.Parallel()
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), &manglecp.Options{ConfirmationKey: []byte("cli-test-key")})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()
	facts := filepath.Join(t.TempDir(), "facts.json")
	_ = os.WriteFile(facts, []byte(`{"facts": [{"pred":"current_url","args":["https://x"]},{"pred":"console_event","args":["s1","error","boom",5]},{"pred":"net_response","args":["s1","r1",500,1]}]}`), 0o644)

	if code, out, _ := commands.Run(t, "", "manifest", hs.URL); code != cmdline.ExitOK || !strings.Contains(out, "conformance level 3") || !strings.Contains(out, "diagnose_error") {
		t.Errorf("manifest: %d\n%s", code, out)
	}
	code, out, errOut := commands.Run(t, "", "eval", hs.URL, "--intent", "diagnose_error", "--facts", facts, "--json", "--disclosure", "full")
	if code != cmdline.ExitOK {
		t.Fatalf("eval --json: %d %s %s", code, out, errOut)
	}
	var resp protocol.IntentResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("eval --json output: %v\n%s", err, out)
	}
	ids := map[string]string{}
	for _, m := range resp.MacroTools {
		ids[m.Name] = m.MacroID
	}
	// The same facts from stdin, human output.
	raw, _ := os.ReadFile(facts)
	if code, out, _ := commands.Run(t, string(raw), "eval", hs.URL, "--intent", "diagnose_error", "--facts", "-", "--proof"); code != cmdline.ExitOK || !strings.Contains(out, "diagnose_causal_chain") || !strings.Contains(out, "proof hints") {
		t.Errorf("eval from stdin: %d\n%s", code, out)
	}
	// RFC 3339 as section 5.6 writes it, and "now" (issue 9 items 14 and 15).
	for _, at := range []string{"2026-02-19t14:30:05z", "2016-12-31T23:59:60Z", "now"} {
		if code, out, errOut := commands.Run(t, "", "eval", hs.URL, "--intent", "diagnose_error", "--facts", facts, "--json", "--eval-time", at); code != cmdline.ExitOK {
			t.Errorf("eval --eval-time %s: %d %s %s", at, code, out, errOut)
		}
	}
	if code, out, _ := commands.Run(t, "", "invoke", hs.URL, "--macro", ids["diagnose_causal_chain"], "--args", `{"request_id":"r1"}`); code != cmdline.ExitOK || !strings.Contains(out, "Root cause") {
		t.Errorf("invoke: %d\n%s", code, out)
	}
	// Confirmation: refused without, accepted with a token signed by the server's key.
	if code, out, _ := commands.Run(t, "", "invoke", hs.URL, "--macro", ids["write_diagnosis_report"], "--args", `{"request_id":"r1"}`, "--json"); code != cmdline.ExitProtocol || !strings.Contains(out, `"confirmation_required"`) {
		t.Errorf("invoke without confirmation: %d\n%s", code, out)
	}
	// Off a terminal the refusal names the flag, not the protocol field
	// (issue 29: it said "send confirmation_token").
	if code, out, errOut := commands.Run(t, "", "invoke", hs.URL, "--macro", ids["write_diagnosis_report"], "--args", `{"request_id":"r1"}`); code != cmdline.ExitProtocol ||
		!strings.Contains(errOut, "write_diagnosis_report needs the user's confirmation: run the command again with --confirm") || strings.Contains(errOut, "confirmation_token") {
		t.Errorf("invoke without confirmation off a terminal: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := commands.Run(t, "", "invoke", hs.URL, "--macro", ids["write_diagnosis_report"], "--args", `{"request_id":"r1"}`, "--confirm", "--confirm-key", "cli-test-key"); code != cmdline.ExitOK {
		t.Errorf("invoke --confirm: %d\n%s%s", code, out, errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"server error in JSON", []string{"invoke", hs.URL, "--macro", "nope", "--json"}, cmdline.ExitProtocol, `"type":"error"`},
		{"invalid facts, refused before sending", []string{"eval", hs.URL, "--intent", "observe", "--facts", "-"}, cmdline.ExitProtocol, "arity_mismatch"},
		{"unreachable", []string{"manifest", "http://127.0.0.1:1"}, cmdline.ExitTransport, "connection refused"},
		{"missing intent", []string{"eval", hs.URL}, cmdline.ExitUsage, "--intent is required"},
		{"bad eval time", []string{"invoke", hs.URL, "--macro", "m", "--eval-time", "soon"}, cmdline.ExitUsage, "--eval-time"},
		{"bad args", []string{"invoke", hs.URL, "--macro", "m", "--args", "[1]"}, cmdline.ExitUsage, "JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := commands.Run(t, `[{"pred":"current_url","args":["a","b"]}]`, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d (want %d)\n%s%s", code, tc.code, out, errOut)
			}
		})
	}
}
