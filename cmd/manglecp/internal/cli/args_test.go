package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
)

// TestCommandHelp: `COMMAND -h` prints a description, the arguments and
// the flags on stdout and exits 0, for every command.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "manifest", "eval", "invoke", "check", "conformance", "mcp"} {
		for _, flag := range []string{"-h", "--help"} {
			t.Run(cmd+flag, func(t *testing.T) {
				code, out, errOut := run(t, "", cmd, flag)
				if code != cmdline.ExitOK || !strings.HasPrefix(out, "usage: manglecp "+cmd) || !strings.Contains(out, "\nflags:\n") || errOut != "" {
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
	hs := clitest.Server(t, nil)
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
			if code != cmdline.ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s\nwant %q", code, cmdline.ExitUsage, out, errOut, tc.want)
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
	hs := clitest.Server(t, nil)
	if code, out, errOut := run(t, "", "manifest", hs.URL, "--json"); code != cmdline.ExitOK || !strings.HasPrefix(out, "{") {
		t.Errorf("manifest TARGET --json: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := run(t, "", "check", clitest.Repo("domains", "browser", "rules"), "--json"); code != cmdline.ExitOK || !strings.Contains(out, `"ok": true`) {
		t.Errorf("check DIR --json: %d %s %s", code, out, errOut)
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
		if code != cmdline.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", tc.cmd, code, errOut, tc.want)
		}
	}
}
