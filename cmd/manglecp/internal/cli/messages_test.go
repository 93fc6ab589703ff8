package cli

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
)

// TestListenFlagMessages: the messages of issue 39 item 6 about where to
// listen. --port, which people bring from other servers, suggests --addr
// (not --root, close in spelling); a bare port given to --addr says to
// write HOST:PORT instead of net's "missing port in address".
func TestListenFlagMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--port", "8093"}, "did you mean --addr? (it takes HOST:PORT, e.g. --addr 127.0.0.1:8080)"},
		{[]string{"mcp", "--port", "8093"}, "did you mean --http?"},
		{[]string{"serve", "--addr", "8093"}, "--addr 8093 is a port alone; give HOST:PORT: 127.0.0.1:8093 (this machine only) or 0.0.0.0:8093 (every interface)"},
		{[]string{"serve", "--addr", "localhost"}, `--addr "localhost": want HOST:PORT, e.g. 127.0.0.1:8080`},
	} {
		code, _, errOut := run(t, "", tc.args...)
		if code != cmdline.ExitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "missing port") || strings.Contains(errOut, "--root") {
			t.Errorf("%v: exit %d\n%s\nwant exit %d with %q", tc.args, code, errOut, cmdline.ExitUsage, tc.want)
		}
	}
}
