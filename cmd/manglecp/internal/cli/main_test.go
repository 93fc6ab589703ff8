package cli

import (
	"flag"
	"os"
	"testing"

	"github.com/manglecp/manglecp/internal/testenv"
)

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

// testEnv is the environment of a command in a test: none of the
// process's variables, a user config directory of its own (where the
// local confirmation key file goes). Tests that give a command variables
// pass their own Env, so every test may run in parallel.
func testEnv(t testing.TB) Env {
	return MapEnv(map[string]string{"XDG_CONFIG_HOME": t.TempDir()})
}
