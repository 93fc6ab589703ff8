package testenv_test

import (
	"testing"

	"github.com/manglecp/manglecp/internal/testenv"
)

func TestLookPathFindsAShell(t *testing.T) {
	if p := testenv.LookPath(t, "no-such-program-manglecp", "sh"); p == "" {
		t.Fatal("sh not found")
	}
}
