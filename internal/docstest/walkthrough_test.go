package docstest

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/transport"
)

// readmeBase is the address the README's examples use.
const readmeBase = "http://127.0.0.1:8080"

// section returns the first fenced code block after the heading line.
func section(t *testing.T, src, heading string) string {
	t.Helper()
	i := strings.Index(src, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README.md has no heading %q", heading)
	}
	rest := src[i:]
	start := strings.Index(rest, "\n```")
	if start < 0 {
		t.Fatalf("no code block after %q", heading)
	}
	rest = rest[start+4:]
	rest = rest[strings.Index(rest, "\n")+1:]
	end := strings.Index(rest, "\n```")
	if end < 0 {
		t.Fatalf("unclosed code block after %q", heading)
	}
	return rest[:end]
}

// commands splits a shell block into its commands: groups of lines
// separated by blank lines, with comment lines dropped.
func commands(block string) []string {
	var out []string
	for _, group := range strings.Split(block, "\n\n") {
		var lines []string
		for _, l := range strings.Split(group, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "#") || strings.TrimSpace(l) == "" {
				continue
			}
			lines = append(lines, l)
		}
		if len(lines) > 0 {
			out = append(out, strings.Join(lines, "\n"))
		}
	}
	return out
}

// TestREADMEWalkthrough runs the README's "Try it with curl" commands, as
// written, with curl against a server of the default domain, and checks
// each answer: the manifest, an evaluation that proposes
// diagnose_causal_chain, and its invocation with the macro_id of step 2.
func TestREADMEWalkthrough(t *testing.T) {
	curl := testenv.LookPath(t, "curl")
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := commands(section(t, string(src), "## Try it with curl"))
	if len(steps) != 3 {
		t.Fatalf("the walkthrough has %d commands, want 3 (manifest, evaluate, invoke):\n%s", len(steps), strings.Join(steps, "\n---\n"))
	}

	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()

	run := func(cmd string) map[string]any {
		t.Helper()
		cmd = strings.ReplaceAll(cmd, readmeBase, hs.URL)
		sh := exec.Command("sh", "-c", cmd)
		sh.Env = append(os.Environ(), "PATH="+filepath.Dir(curl)+":"+os.Getenv("PATH"))
		var stderr bytes.Buffer
		sh.Stderr = &stderr
		out, err := sh.Output()
		if err != nil {
			t.Fatalf("%s\nfailed: %v\n%s", cmd, err, stderr.String())
		}
		var env map[string]any
		if err := json.Unmarshal(out, &env); err != nil {
			t.Fatalf("%s\nprinted no JSON envelope: %v\n%s", cmd, err, out)
		}
		return env
	}

	if env := run(steps[0]); env["type"] != "manifest" {
		t.Fatalf("step 1 answered %v, want a manifest", env["type"])
	}
	env := run(steps[1])
	if env["type"] != "intent_response" {
		t.Fatalf("step 2 answered %v, want an intent_response: %v", env["type"], env)
	}
	var macroID string
	payload, _ := env["payload"].(map[string]any)
	tools, _ := payload["macro_tools"].([]any)
	for _, x := range tools {
		tool, _ := x.(map[string]any)
		if tool["name"] == "diagnose_causal_chain" {
			macroID, _ = tool["macro_id"].(string)
		}
	}
	if macroID == "" {
		t.Fatalf("step 2 proposed no diagnose_causal_chain: %v", tools)
	}
	// What makes the error recent is its "t", as the README says: 20
	// minutes before eval_time it is not, 5 seconds before it is.
	const untimed = `"TypeError: Cannot read properties of null", 1771510200000]}`
	if !strings.Contains(steps[1], untimed) {
		t.Fatalf("step 2 no longer states the console error as %s", untimed)
	}
	for at, want := range map[string]bool{"2026-02-19T14:10:00Z": false, "2026-02-19T14:30:00Z": true} {
		env := run(strings.ReplaceAll(steps[1], untimed, strings.TrimSuffix(untimed, "}")+`, "t": {"at": "`+at+`"}}`))
		payload, _ := env["payload"].(map[string]any)
		tools, _ := payload["macro_tools"].([]any)
		got := false
		for _, x := range tools {
			if tool, _ := x.(map[string]any); tool["name"] == "diagnose_causal_chain" {
				got = true
			}
		}
		if got != want {
			t.Errorf("a console error held at %s (eval_time 14:30:05Z): diagnose_causal_chain proposed %v, want %v", at, got, want)
		}
	}
	const placeholder = "diagnose_causal_chain-…"
	if !strings.Contains(steps[2], placeholder) {
		t.Fatalf("step 3 no longer names the macro_id placeholder %q", placeholder)
	}
	env = run(strings.ReplaceAll(steps[2], placeholder, macroID))
	if env["type"] != "invoke_response" {
		t.Fatalf("step 3 answered %v, want an invoke_response: %v", env["type"], env)
	}
}
