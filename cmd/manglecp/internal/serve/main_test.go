package serve

import (
	"flag"
	"os"
	"testing"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/internal/testenv"
)

// commands is the command line of the tests: `manglecp serve`.
var commands = clitest.Commands{"serve": Run}

// builds holds the manglecp binary the tests that run the real command
// share (built once per test binary, started before the tests so that
// the build runs beside those that need none).
var builds testenv.Builds

func TestMain(m *testing.M) {
	flag.Parse()
	builds.Start("cmd/manglecp")
	code := m.Run()
	builds.Close()
	os.Exit(code)
}
