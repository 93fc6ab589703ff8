package testenv

import (
	"os"
	"testing"
)

// RunInConfigHome runs m with XDG_CONFIG_HOME pointed at a new temporary
// directory, removed after, and returns m's exit code: servers with no
// confirmation key create their key file there, never in the home
// directory of whoever runs the tests. For TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.RunInConfigHome(m)) }
func RunInConfigHome(m *testing.M) int {
	dir, err := os.MkdirTemp("", "manglecp-test-config-")
	if err == nil {
		os.Setenv("XDG_CONFIG_HOME", dir)
		defer os.RemoveAll(dir)
	}
	return m.Run()
}
