package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
)

// run runs the command line args with stdin in an environment of its own
// and returns the exit code, stdout and stderr.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), clitest.Env(t), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}
