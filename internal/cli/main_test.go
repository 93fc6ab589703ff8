package cli

import (
	"os"
	"testing"

	"github.com/manglecp/manglecp/internal/testenv"
)

// builds holds the manglecp binary the tests that run the real command
// share (built once per test binary).
var builds testenv.Builds

func TestMain(m *testing.M) {
	code := m.Run()
	builds.Close()
	os.Exit(code)
}
