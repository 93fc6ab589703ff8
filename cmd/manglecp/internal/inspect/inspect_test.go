package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/transport"
)

var openLine = regexp.MustCompile(`open (http://[^\s/]+)/#token=([A-Za-z0-9_-]+)`)

// startInspect runs `manglecp inspect args...` until the test ends and
// returns the page's base URL and session token from what it printed.
func startInspect(t *testing.T, args ...string) (string, string) {
	t.Helper()
	return startInspectEnv(t, clitest.Env(t), args...)
}

// startInspectEnv is startInspect in the environment env.
func startInspectEnv(t *testing.T, env cmdline.Env, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &testenv.Buffer{}, &testenv.Buffer{}
	done := make(chan int, 1)
	go func() { done <- commands.Main(ctx, env, append([]string{"inspect"}, args...), nil, stdout, stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("inspect exited %d: %s", code, stderr.String())
			}
		case <-time.After(15 * time.Second):
			t.Error("inspect did not stop")
		}
	})
	wait := testenv.NewWait(20 * time.Second)
	for {
		if m := openLine.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], m[2]
		}
		select {
		case code := <-done:
			t.Fatalf("inspect exited %d:\n%s%s", code, stdout.String(), stderr.String())
		default:
		}
		if !wait.Next() {
			t.Fatalf("inspect printed no URL:\n%s%s", stdout.String(), stderr.String())
		}
	}
}

func sessionView(t *testing.T, base, token string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/session", nil)
	req.Header.Set("X-Inspector-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
	}
	return v
}

// TestInspectInProcess: `manglecp inspect` without TARGET serves the page
// for the embedded default domain on loopback and prints its URL; it can
// sign confirmation tokens for its own server.
func TestInspectInProcess(t *testing.T) {
	t.Parallel()
	base, token := startInspect(t, "--addr", "127.0.0.1:0")
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("page at %s, want loopback", base)
	}
	v := sessionView(t, base, token)
	m, _ := v["manifest"].(map[string]any)
	d, _ := m["domain"].(map[string]any)
	if d["id"] != "browser_diagnostics" || v["transport"] != "conn" || v["confirmation_key"] != true || v["target"] != "" {
		t.Errorf("session: domain %v, transport %v, key %v, target %v", d["id"], v["transport"], v["confirmation_key"], v["target"])
	}
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("page: HTTP %d", resp.StatusCode)
	}
}

// TestInspectWorkspace: the in-process server can be the workspace domain.
func TestInspectWorkspace(t *testing.T) {
	t.Parallel()
	base, token := startInspect(t, "--domain", "workspace", "--root", t.TempDir())
	v := sessionView(t, base, token)
	m, _ := v["manifest"].(map[string]any)
	if d, _ := m["domain"].(map[string]any); d["id"] == "browser_diagnostics" || d["id"] == nil {
		t.Errorf("domain %v, want the workspace domain", d["id"])
	}
}

// TestInspectTarget: with a TARGET URL the inspector talks to that server
// over its transport; without a key anywhere it cannot confirm by itself,
// and with the local key file of 'manglecp serve' it can.
func TestInspectTarget(t *testing.T) {
	t.Parallel()
	env := clitest.Env(t)
	// The server's own key: with nil options it would create the key file.
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), &manglecp.Options{ConfirmationKey: []byte("the server's own key")})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()
	base, token := startInspectEnv(t, env, hs.URL)
	v := sessionView(t, base, token)
	if v["transport"] != "http" || v["target"] != hs.URL || v["confirmation_key"] != false {
		t.Errorf("session: transport %v, target %v, key %v", v["transport"], v["target"], v["confirmation_key"])
	}
	if _, _, err := cmdline.Keys(env).Local(); err != nil {
		t.Fatal(err)
	}
	base, token = startInspectEnv(t, env, hs.URL)
	if v := sessionView(t, base, token); v["confirmation_key"] != true {
		t.Error("the local key file was not used")
	}
}

// TestInspectUsage: refused addresses and flag combinations are usage
// errors, before anything is served.
func TestInspectUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"--addr", ":0"}, "not a loopback address"},
		{[]string{"http://127.0.0.1:1", "--rules", "x"}, "without TARGET"},
		{[]string{"http://127.0.0.1:1", "--domain", "workspace", "--root", "."}, "without TARGET"},
		{[]string{"--domain", "workspace"}, "needs at least one --root"},
		{[]string{"--bogus"}, "flag provided but not defined"},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		code := commands.Main(context.Background(), clitest.Env(t), append([]string{"inspect"}, tc.args...), nil, &stdout, &stderr)
		if code != cmdline.ExitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("inspect %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), cmdline.ExitUsage, tc.want)
		}
	}
}

// TestInspectUnreachable: a TARGET that does not answer is exit 3.
func TestInspectUnreachable(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := commands.Main(context.Background(), clitest.Env(t), []string{"inspect", "http://" + clitest.FreeAddr(t)}, nil, &stdout, &stderr)
	if code != cmdline.ExitTransport {
		t.Errorf("exit %d, want %d: %s", code, cmdline.ExitTransport, stderr.String())
	}
}
