package author

import (
	"flag"
	"os"
	"testing"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/remote"
	"github.com/manglecp/manglecp/internal/testenv"
)

// commands is the command line of the tests: the author's commands, and
// manifest, eval and invoke for what they serve.
var commands = clitest.Commands{"new": New, "adopt": Adopt, "check": Check, "manifest": remote.Manifest, "eval": remote.Eval, "invoke": remote.Invoke}

// builds holds the manglecp binary the tests that run the real command
// share (built once per test binary, started beside the tests).
var builds testenv.Builds

func TestMain(m *testing.M) {
	flag.Parse()
	builds.Start("cmd/manglecp")
	code := m.Run()
	builds.Close()
	os.Exit(code)
}
