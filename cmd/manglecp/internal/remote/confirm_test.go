package remote

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/serverconf"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestWebSocketTargetWithoutPath: ws://HOST:PORT reaches /manglecp/ws.
func TestWebSocketTargetWithoutPath(t *testing.T) {
	t.Parallel()
	hs := clitest.Server(t, nil)
	ws := "ws://" + strings.TrimPrefix(hs.URL, "http://")
	if code, out, errOut := commands.Run(t, "", "manifest", ws); code != cmdline.ExitOK || !strings.Contains(out, "auth: off") {
		t.Errorf("manifest %s: %d\n%s%s", ws, code, out, errOut)
	}
}

// TestUnreachableIsOneLine: a server that cannot be reached is one line
// naming the target and the cause, exit 3.
func TestUnreachableIsOneLine(t *testing.T) {
	t.Parallel()
	code, _, errOut := commands.Run(t, "", "manifest", "http://127.0.0.1:1")
	if code != cmdline.ExitTransport || errOut != "manglecp: cannot reach http://127.0.0.1:1/.well-known/manglecp/manifest.json: connection refused\n" {
		t.Errorf("exit %d: %q", code, errOut)
	}
}

// TestConfirmWithLocalKey: `manglecp serve` without a configured key and
// `manglecp invoke --confirm` share the local key file, so confirmation
// works against a default server as documented.
func TestConfirmWithLocalKey(t *testing.T) {
	t.Parallel()
	env := clitest.Env(t)
	opts := &manglecp.Options{}
	serverconf.UseLocalConfirmationKey(env, opts, discardLogger())
	key, err := cmdline.Keys(env).Read()
	if err != nil || string(key) != string(opts.ConfirmationKey) {
		t.Fatalf("the server's key %q and the file's %q (%v) differ", opts.ConfirmationKey, key, err)
	}
	p, _ := cmdline.Keys(env).Path()
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v %v, want mode 0600", p, st, err)
	}
	again := &manglecp.Options{}
	serverconf.UseLocalConfirmationKey(env, again, discardLogger())
	if string(again.ConfirmationKey) != string(key) {
		t.Fatal("a second start made a new key")
	}

	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()
	id := clitest.MacroIDFor(t, commands, hs.URL, "write_diagnosis_report")
	code, out, errOut := commands.RunEnv(t, env, "", "invoke", hs.URL, "--macro", id, "--args", `{"request_id":"r1"}`, "--confirm")
	if code != cmdline.ExitOK || !strings.Contains(out, "assert  report_written(") {
		t.Errorf("invoke --confirm with the local key: %d\n%s%s", code, out, errOut)
	}
}

func TestAskConfirmation(t *testing.T) {
	t.Parallel()
	for answer, want := range map[string]bool{"y\n": true, "yes\n": true, "Y\n": true, "\n": false, "n\n": false, "": false, "sure\n": false} {
		var out strings.Builder
		got, _ := askConfirmation(strings.NewReader(answer), &out, "write_diagnosis_report-abc", map[string]any{"request_id": "r1"})
		if got != want || !strings.Contains(out.String(), "write_diagnosis_report needs your confirmation") {
			t.Errorf("answer %q: %v, want %v\n%s", answer, got, want, out.String())
		}
	}
}

func TestFormatFact(t *testing.T) {
	t.Parallel()
	got := formatFact(protocol.Fact{Pred: "diagnosed_error", Args: []any{"r42", nil, 3}})
	if want := `diagnosed_error("r42", _, 3)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestConfirmWithWrongKey: a token signed with the wrong key is refused
// with a message that says the signature does not verify.
func TestConfirmWithWrongKey(t *testing.T) {
	t.Parallel()
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), &manglecp.Options{ConfirmationKey: []byte("the server's key")})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()
	id := clitest.MacroIDFor(t, commands, hs.URL, "write_diagnosis_report")
	code, _, errOut := commands.Run(t, "", "invoke", hs.URL, "--macro", id, "--args", `{"request_id":"r1"}`, "--confirm", "--confirm-key", "another key")
	if code != cmdline.ExitProtocol || !strings.Contains(errOut, "confirmation_invalid") || !strings.Contains(errOut, "signature does not verify") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
