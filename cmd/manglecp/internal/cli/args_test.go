package cli

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestCommandHelp: `COMMAND -h` prints a description, the arguments and
// the flags on stdout and exits 0, for every command.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "manifest", "eval", "invoke", "check", "conformance", "mcp"} {
		for _, flag := range []string{"-h", "--help"} {
			t.Run(cmd+flag, func(t *testing.T) {
				code, out, errOut := run(t, "", cmd, flag)
				if code != exitOK || !strings.HasPrefix(out, "usage: manglecp "+cmd) || !strings.Contains(out, "\nflags:\n") || errOut != "" {
					t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
				}
			})
		}
	}
}

// TestCLIUsageErrors: every bad invocation is one line in words that
// names what to do, exit 2, with no parser internals.
func TestCLIUsageErrors(t *testing.T) {
	t.Parallel()
	hs := newCLITestServer(t)
	objFacts := filepath.Join(t.TempDir(), "facts.json")
	_ = os.WriteFile(objFacts, []byte(`{"pred":"current_url","args":["https://x"]}`), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"target without scheme", []string{"manifest", "localhost:8080"}, `TARGET "localhost:8080" is not a URL: write http://localhost:8080`},
		{"unknown scheme", []string{"manifest", "ftp://host"}, `the scheme "ftp" is not one of`},
		{"two targets", []string{"manifest", hs.URL, "extra"}, "one TARGET expected"},
		{"no target", []string{"eval", "--intent", "observe"}, "TARGET is missing"},
		{"eval time in words", []string{"eval", hs.URL, "--intent", "observe", "--eval-time", "yesterday"}, `--eval-time "yesterday" is not a time: write RFC 3339`},
		{"facts object", []string{"eval", hs.URL, "--intent", "observe", "--facts", objFacts}, `is an object without a "facts" array`},
		{"unknown intent", []string{"eval", hs.URL, "--intent", "diagnose"}, `the server has no intent "diagnose"; did you mean "diagnose_error"?`},
		{"bad disclosure", []string{"eval", hs.URL, "--intent", "observe", "--disclosure", "all"}, `--disclosure "all"`},
		{"show-rules without json", []string{"check", "testdata", "--show-rules"}, "--show-rules needs --json"},
		{"unknown flag", []string{"eval", hs.URL, "--colour"}, "flag provided but not defined: -colour"},
		{"misspelled flag", []string{"eval", hs.URL, "--intnet", "observe"}, "flag provided but not defined: -intnet; did you mean --intent?"},
		{"misspelled flag of serve", []string{"serve", "--adr", ":0"}, "did you mean --addr?"},
		{"serve argument", []string{"serve", "extra"}, `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s\nwant %q", code, exitUsage, out, errOut, tc.want)
			}
			for _, bad := range []string{"2006-01-02", "manglecp: manglecp", "manglecp client", "<nil>", "fact -1"} {
				if strings.Contains(errOut, bad) {
					t.Errorf("stderr contains %q: %s", bad, errOut)
				}
			}
			if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines > 1 {
				t.Errorf("%d lines; want the error and the help hint:\n%s", lines+1, errOut)
			}
		})
	}
}

// TestFlagsAfterArguments: flags may follow the positional arguments.
func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	hs := newCLITestServer(t)
	if code, out, errOut := run(t, "", "manifest", hs.URL, "--json"); code != exitOK || !strings.HasPrefix(out, "{") {
		t.Errorf("manifest TARGET --json: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := run(t, "", "check", filepath.Join("..", "..", "..", "..", "domains", "browser", "rules"), "--json"); code != exitOK || !strings.Contains(out, `"ok": true`) {
		t.Errorf("check DIR --json: %d %s %s", code, out, errOut)
	}
}

// TestWebSocketTargetWithoutPath: ws://HOST:PORT reaches /manglecp/ws.
func TestWebSocketTargetWithoutPath(t *testing.T) {
	t.Parallel()
	hs := newCLITestServer(t)
	ws := "ws://" + strings.TrimPrefix(hs.URL, "http://")
	if code, out, errOut := run(t, "", "manifest", ws); code != exitOK || !strings.Contains(out, "auth: off") {
		t.Errorf("manifest %s: %d\n%s%s", ws, code, out, errOut)
	}
}

// TestUnreachableIsOneLine: a server that cannot be reached is one line
// naming the target and the cause, exit 3.
func TestUnreachableIsOneLine(t *testing.T) {
	t.Parallel()
	code, _, errOut := run(t, "", "manifest", "http://127.0.0.1:1")
	if code != exitTransport || errOut != "manglecp: cannot reach http://127.0.0.1:1/.well-known/manglecp/manifest.json: connection refused\n" {
		t.Errorf("exit %d: %q", code, errOut)
	}
}

// TestConfirmWithLocalKey: `manglecp serve` without a configured key and
// `manglecp invoke --confirm` share the local key file, so confirmation
// works against a default server as documented.
func TestConfirmWithLocalKey(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	opts := &manglecp.Options{}
	useLocalConfirmationKey(env, opts, discardLogger())
	key, err := readConfirmationKey(env)
	if err != nil || string(key) != string(opts.ConfirmationKey) {
		t.Fatalf("the server's key %q and the file's %q (%v) differ", opts.ConfirmationKey, key, err)
	}
	p, _ := confirmationKeyPath(env)
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v %v, want mode 0600", p, st, err)
	}
	again := &manglecp.Options{}
	useLocalConfirmationKey(env, again, discardLogger())
	if string(again.ConfirmationKey) != string(key) {
		t.Fatal("a second start made a new key")
	}

	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()
	id := macroIDFor(t, hs.URL, "write_diagnosis_report")
	code, out, errOut := runEnv(t, env, "", "invoke", hs.URL, "--macro", id, "--args", `{"request_id":"r1"}`, "--confirm")
	if code != exitOK || !strings.Contains(out, "assert  report_written(") {
		t.Errorf("invoke --confirm with the local key: %d\n%s%s", code, out, errOut)
	}
}

func TestAskConfirmation(t *testing.T) {
	t.Parallel()
	for answer, want := range map[string]bool{"y\n": true, "yes\n": true, "Y\n": true, "\n": false, "n\n": false, "": false, "sure\n": false} {
		var out strings.Builder
		got, _ := askConfirmation(strings.NewReader(answer), &out, "write_diagnosis_report-abc", map[string]any{"request_id": "r1"})
		if got != want || !strings.Contains(out.String(), "write_diagnosis_report needs your confirmation") {
			t.Errorf("answer %q: %v, want %v\n%s", answer, got, want, out.String())
		}
	}
}

func TestFormatFact(t *testing.T) {
	t.Parallel()
	got := formatFact(protocol.Fact{Pred: "diagnosed_error", Args: []any{"r42", nil, 3}})
	if want := `diagnosed_error("r42", _, 3)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newCLITestServer serves the browser domain over HTTP for a test.
func newCLITestServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	return hs
}

// macroIDFor evaluates diagnose_error with a failed request and returns
// the macro_id of the named tool.
func macroIDFor(t *testing.T, url, name string) string {
	t.Helper()
	facts := filepath.Join(t.TempDir(), "facts.json")
	_ = os.WriteFile(facts, []byte(`[{"pred":"current_url","args":["https://x"]},{"pred":"console_event","args":["s1","error","boom",5]},{"pred":"net_response","args":["s1","r1",500,1]}]`), 0o644)
	code, out, errOut := run(t, "", "eval", url, "--intent", "diagnose_error", "--facts", facts, "--json", "--disclosure", "full")
	if code != exitOK {
		t.Fatalf("eval: %d %s", code, errOut)
	}
	var resp protocol.IntentResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.MacroTools {
		if m.Name == name {
			return m.MacroID
		}
	}
	t.Fatalf("no %s in %s", name, out)
	return ""
}

// TestConfirmWithWrongKey: a token signed with the wrong key is refused
// with a message that says the signature does not verify.
func TestConfirmWithWrongKey(t *testing.T) {
	t.Parallel()
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), &manglecp.Options{ConfirmationKey: []byte("the server's key")})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()
	id := macroIDFor(t, hs.URL, "write_diagnosis_report")
	code, _, errOut := run(t, "", "invoke", hs.URL, "--macro", id, "--args", `{"request_id":"r1"}`, "--confirm", "--confirm-key", "another key")
	if code != exitProtocol || !strings.Contains(errOut, "confirmation_invalid") || !strings.Contains(errOut, "signature does not verify") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// TestUnknownCommandSuggests: a misspelled command names the command
// meant (issue 29: `manglecp evaluate` got no suggestion).
func TestUnknownCommandSuggests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cmd, want string }{
		{"evaluate", `unknown command "evaluate"; did you mean "eval"?`},
		{"serv", `did you mean "serve"?`},
		{"conformence", `did you mean "conformance"?`},
		{"--versoin", `did you mean "version"?`},
		{"zzzzzz", `unknown command "zzzzzz"` + "\n"},
	} {
		code, _, errOut := run(t, "", tc.cmd)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.cmd, code, errOut, tc.want)
		}
	}
}
