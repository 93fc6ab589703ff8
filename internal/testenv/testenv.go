// Package testenv lets tests that need an outside program (Chromium, Redis,
// nginx, Node packages) find it, and decides what happens when it is
// missing: under scripts/test.sh (MANGLECP_TEST_REQUIRE=1, as in CI) the
// test fails; under a plain `go test ./...` it is skipped with a message
// naming the script that installs what is missing.
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequireEnv is the environment variable that forbids skipping. The
// project's scripts/test.sh sets it to 1; CI runs that script.
const RequireEnv = "MANGLECP_TEST_REQUIRE"

// Required reports whether missing programs must fail tests instead of
// skipping them.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// Missing skips t, or fails it when [Required], because what is named is
// not available on this machine.
func Missing(t testing.TB, what string) {
	t.Helper()
	msg := what + " is not available; run scripts/test.sh, which installs it"
	if Required() {
		t.Fatalf("%s (%s=1 forbids skipping)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// LookPath returns the path of the first of names found on PATH. When none
// is found it calls [Missing] (which skips or fails t).
func LookPath(t testing.TB, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	Missing(t, strings.Join(names, " or "))
	return ""
}
