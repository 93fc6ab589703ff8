package inspector

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// scriptHistory is a fixed session: an evaluation without eval_time (the
// replay pins the server's), a failed invocation, a confirmed one whose
// arguments need shell escaping, and a manifest refresh.
func scriptHistory() []*entry {
	used := protocol.NewTime(time.Date(2026, 2, 19, 14, 30, 5, 0, time.UTC))
	tricky := "it's $HOME `id` \\ \"quoted\"\nsecond line"
	return []*entry{
		{ID: 1, Kind: "evaluate", OK: true, Summary: "diagnose_error: 3 macro-tools", DurationMS: 4, EvalTimeUsed: used,
			Intent: &protocol.IntentRequest{
				Intent:      protocol.Intent{Name: "diagnose_error", Params: map[string]any{"depth": json.Number("2")}},
				Facts:       []protocol.Fact{protocol.NewFact("current_url", "https://app.example.com/it's"), protocol.NewFact("net_response", "s1", "r42", json.Number("404"), json.Number("1771510199500"))},
				Options:     &protocol.Options{DisclosurePreference: "full", IncludeProofHints: true, IncludeRuleCoverage: true},
				Constraints: &protocol.Constraints{MaxTokensBudget: protocol.Int64Ptr(500)},
			}},
		{ID: 2, Kind: "invoke", OK: false, Code: protocol.CodeSchemaValidationFailed, Status: 400, Summary: "diagnose_causal_chain-1: schema_validation_failed",
			Invoke: &protocol.InvokeRequest{MacroID: "diagnose_causal_chain-1", Args: map[string]any{"request_id": "nope"}}},
		{ID: 3, Kind: "invoke", OK: true, Confirmed: true, Summary: "write_diagnosis_report-2: Wrote the report",
			Invoke: &protocol.InvokeRequest{MacroID: "write_diagnosis_report-2", Args: map[string]any{"request_id": "r42", "title": tricky}}},
		{ID: 4, Kind: "manifest", OK: true, Summary: "manifest refreshed"},
	}
}

func scriptManifest() *protocol.Manifest {
	return &protocol.Manifest{
		ServerName: "manglecp-go", ServerVersion: "0.1.0",
		Protocol:  protocol.ProtocolInfo{Manglecp: protocol.Version},
		Domain:    protocol.DomainInfo{ID: "browser_diagnostics"},
		Endpoints: &protocol.Endpoints{IntentEval: "/manglecp/evaluate", MacroInvoke: "/manglecp/invoke"},
	}
}

var scriptNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// TestScriptGolden: the exported scripts for HTTP, stdio and in-process
// targets.
func TestScriptGolden(t *testing.T) {
	tests := []struct {
		name, target, format string
	}{
		{"http.curl.sh", "http://127.0.0.1:8080", "curl"},
		{"http.cli.sh", "http://127.0.0.1:8080", "cli"},
		{"stdio.cli.sh", "stdio:manglecp serve --stdio", "cli"},
		{"inprocess.curl.sh", "", "curl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := scriptContext{Target: tc.target, Manifest: scriptManifest(), Now: scriptNow}
			var got string
			if tc.format == "curl" {
				got = curlScript(sc, scriptHistory())
			} else {
				got = cliScript(sc, scriptHistory())
			}
			golden(t, "script_"+tc.name, []byte(got))
		})
	}
}

// fakeCommand writes an executable shell script that records its
// arguments and standard input under dir, one numbered pair per call.
func fakeCommand(t *testing.T, bin, name, dir string) {
	t.Helper()
	script := "#!/bin/sh\nn=$(ls \"" + dir + "\" | wc -l)\nprintf '%s\\n' \"$@\" > \"" + dir + "/call$n.args\"\ncat > \"" + dir + "/call$n.body\"\n"
	if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// runScript runs an exported script with sh, commands found in bin first.
func runScript(t *testing.T, script, bin string, env ...string) {
	t.Helper()
	sh := testenv.LookPath(t, "sh")
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
}

// calls reads what a fake command recorded, in call order.
func calls(t *testing.T, dir string) (args [][]string, bodies [][]byte) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "call*.args"))
	sort.Slice(names, func(i, j int) bool {
		return len(names[i]) < len(names[j]) || (len(names[i]) == len(names[j]) && names[i] < names[j])
	})
	for _, n := range names {
		a, _ := os.ReadFile(n)
		b, _ := os.ReadFile(strings.TrimSuffix(n, ".args") + ".body")
		args = append(args, strings.Split(strings.TrimSuffix(string(a), "\n"), "\n"))
		bodies = append(bodies, b)
	}
	return args, bodies
}

// TestCurlScriptQuoting runs the curl export with a fake curl and checks
// that every request body arrives exactly as recorded, the confirmation
// token taken from the environment and nothing expanded by the shell.
func TestCurlScriptQuoting(t *testing.T) {
	bin, rec := t.TempDir(), t.TempDir()
	fakeCommand(t, bin, "curl", rec)
	hist := scriptHistory()
	script := curlScript(scriptContext{Target: "http://127.0.0.1:8080", Manifest: scriptManifest(), Now: scriptNow}, hist)
	runScript(t, script, bin, "BASE=http://server.test:9", "CONFIRMATION_TOKEN=v1.tok$en", "MANGLECP_AUTH_TOKEN=secret token")
	args, bodies := calls(t, rec)
	if len(args) != 4 {
		t.Fatalf("%d curl calls, want 4", len(args))
	}
	wantURL := []string{"http://server.test:9/manglecp/evaluate", "http://server.test:9/manglecp/invoke", "http://server.test:9/manglecp/invoke", "http://server.test:9/.well-known/manglecp/manifest.json"}
	for i, a := range args {
		if a[len(a)-1] != wantURL[i] {
			t.Errorf("call %d goes to %q, want %q", i, a[len(a)-1], wantURL[i])
		}
		if !strings.Contains(strings.Join(a, "\n"), "Authorization: Bearer secret token") {
			t.Errorf("call %d lacks the auth header: %q", i, a)
		}
	}
	var eval struct {
		Payload protocol.IntentRequest `json:"payload"`
	}
	if err := json.Unmarshal(bodies[0], &eval); err != nil {
		t.Fatalf("evaluate body %s: %v", bodies[0], err)
	}
	if eval.Payload.EvalTime == nil || !eval.Payload.EvalTime.Equal(hist[0].EvalTimeUsed.Time) {
		t.Errorf("eval_time not pinned: %v", eval.Payload.EvalTime)
	}
	if got := eval.Payload.Facts[0].Args[0]; got != "https://app.example.com/it's" {
		t.Errorf("fact argument arrived as %q", got)
	}
	var inv struct {
		Payload protocol.InvokeRequest `json:"payload"`
	}
	if err := json.Unmarshal(bodies[2], &inv); err != nil {
		t.Fatalf("invoke body %s: %v", bodies[2], err)
	}
	if inv.Payload.ConfirmationToken != "v1.tok$en" {
		t.Errorf("confirmation token arrived as %q", inv.Payload.ConfirmationToken)
	}
	if got := inv.Payload.Args["title"]; got != hist[2].Invoke.Args["title"] {
		t.Errorf("title arrived as %q, want %q", got, hist[2].Invoke.Args["title"])
	}
}

// TestCLIScriptQuoting runs the CLI export with a fake manglecp and checks
// the arguments and facts each command receives.
func TestCLIScriptQuoting(t *testing.T) {
	bin, rec := t.TempDir(), t.TempDir()
	fakeCommand(t, bin, "manglecp", rec)
	hist := scriptHistory()
	script := cliScript(scriptContext{Target: "stdio:manglecp serve --stdio", Manifest: scriptManifest(), Now: scriptNow}, hist)
	runScript(t, script, bin)
	args, bodies := calls(t, rec)
	if len(args) != 4 {
		t.Fatalf("%d manglecp calls, want 4", len(args))
	}
	want := [][]string{
		{"eval", "stdio:manglecp serve --stdio", "--intent", "diagnose_error", "--params", `{"depth":2}`, "--eval-time", "2026-02-19T14:30:05Z", "--disclosure", "full", "--proof", "--json", "--facts", "-"},
		{"invoke", "stdio:manglecp serve --stdio", "--macro", "diagnose_causal_chain-1", "--args", `{"request_id":"nope"}`, "--json"},
		{"invoke", "stdio:manglecp serve --stdio", "--macro", "write_diagnosis_report-2", "--args", compactJSON(hist[2].Invoke.Args), "--confirm", "--json"},
		{"manifest", "stdio:manglecp serve --stdio", "--json"},
	}
	for i := range want {
		got := args[i]
		if i == 2 {
			// The title holds a newline: the recorder splits lines, so
			// compare the joined form.
			if strings.Join(got, "\n") != strings.Join(want[i], "\n") {
				t.Errorf("call %d: %q\nwant %q", i, got, want[i])
			}
			continue
		}
		if strings.Join(got, "\x00") != strings.Join(want[i], "\x00") {
			t.Errorf("call %d: %q\nwant %q", i, got, want[i])
		}
	}
	var facts []protocol.Fact
	if err := json.Unmarshal(bytes.TrimSpace(bodies[0]), &facts); err != nil || len(facts) != 2 || facts[0].Args[0] != "https://app.example.com/it's" {
		t.Errorf("facts on stdin: %s (%v)", bodies[0], err)
	}
}
