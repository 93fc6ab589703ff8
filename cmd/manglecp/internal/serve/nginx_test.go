package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// startNginx runs deploy/nginx.conf in a real nginx, as the current user
// in a temporary prefix, with its upstream replaced by upstream and its
// listen port by a free loopback port; it returns nginx's address.
func startNginx(t *testing.T, upstream string) string {
	t.Helper()
	bin := testenv.LookPath(t, "nginx", "/usr/sbin/nginx")
	conf, err := os.ReadFile("../../../../deploy/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // nginx's workers read what they need under it
		t.Fatal(err)
	}
	addr := clitest.FreeAddr(t)
	text := string(conf)
	for _, r := range []struct{ old, new string }{
		{"server manglecp:8080;", "server " + upstream + ";"},
		{"listen 8080;", "listen " + addr + ";"},
		{"http {\n", fmt.Sprintf("http {\n  access_log %[1]s/access.log;\n  client_body_temp_path %[1]s/body;\n  proxy_temp_path %[1]s/proxy;\n"+
			"  fastcgi_temp_path %[1]s/fastcgi;\n  uwsgi_temp_path %[1]s/uwsgi;\n  scgi_temp_path %[1]s/scgi;\n", dir)},
	} {
		if strings.Count(text, r.old) != 1 {
			t.Fatalf("deploy/nginx.conf no longer has exactly one %q to template", r.old)
		}
		text = strings.Replace(text, r.old, r.new, 1)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	global := fmt.Sprintf("daemon off; pid %s/nginx.pid;", dir)
	if u, err := user.Current(); err == nil && os.Getuid() == 0 {
		if g, err := user.LookupGroupId(u.Gid); err == nil {
			global += fmt.Sprintf(" user %s %s;", u.Username, g.Name) // workers as the current user too
		}
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"), "-g", global)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt) // fast shutdown (SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	wait := testenv.NewWait(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited: %v\n%s%s", err, out.String(), log)
		default:
		}
		if !wait.Next() {
			t.Fatalf("nginx did not listen on %s", addr)
		}
	}
}

// clientFrom returns an HTTP client whose connections come from the
// loopback address ip (127.0.0.0/8 is all loopback on Linux), so nginx
// sees it as its own client.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestNginxTrustedProxy (issue 26 item 4): behind the documented nginx
// (deploy/nginx.conf, run here in a real nginx) every caller used to share
// nginx's address, and one client sending wrong keys made 15-19 of 20
// correct-token calls of another get 429. With --trusted-proxies, failures
// count against the forwarded client: the attacker is limited, a third
// client's wrong key is still answered auth_invalid (its own budget), and
// all 20 correct-token calls succeed. The attacker's forged
// X-Forwarded-For does not move it to another address.
func TestNginxTrustedProxy(t *testing.T) {
	t.Parallel()
	if _, err := net.Listen("tcp", "127.0.0.2:0"); err != nil {
		t.Skipf("cannot use 127.0.0.2 as a client address here: %v", err)
	}
	const token = "nginx-test-token-0123456789abcdef"
	upstream := clitest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testenv.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- commands.Main(ctx, clitest.Env(t), []string{"serve", "--addr", upstream, "--auth-token", token, "--browser-path", "none",
			"--trusted-proxies", "127.0.0.1/32", "--max-conns-per-ip", "2"}, nil, io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	})
	clitest.WaitReady(t, "http://"+upstream+"/readyz", stderr)
	base := "http://" + startNginx(t, upstream)

	body, err := protocol.NewEnvelope(protocol.TypeIntentRequest, "n", map[string]any{
		"intent": map[string]any{"name": "observe"},
		"facts":  []any{map[string]any{"pred": "current_url", "args": []any{"https://x"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := body.Encode()
	call := func(c *http.Client, key, forged string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/manglecp/evaluate", bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-MangleCP-API-Key", key)
		if forged != "" {
			req.Header.Set("X-Forwarded-For", forged)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(b)
	}
	attacker, user, other := clientFrom("127.0.0.2"), clientFrom("127.0.0.3"), clientFrom("127.0.0.4")

	// The attacker spends its burst at once, then keeps sending wrong keys,
	// each with a forged X-Forwarded-For, one between every two calls of
	// the user (taking turns rather than a wall-clock rate: every user call
	// comes while the attacker is being limited).
	statuses := map[int]int{}
	for i := range 12 {
		st, _ := call(attacker, fmt.Sprintf("wrong-key-%d-0123456789", i), fmt.Sprintf("198.51.100.%d", i))
		statuses[st]++
	}
	ok := 0
	for i := range 20 {
		st, _ := call(attacker, "wrong-key-0123456789", fmt.Sprintf("192.0.2.%d", i))
		statuses[st]++
		st, b := call(user, token, "")
		if st == http.StatusOK {
			ok++
		} else {
			t.Errorf("correct-token call %d: %d %s", i, st, b)
		}
	}
	if st, b := call(other, "another-wrong-key-0123456789", ""); st != http.StatusUnauthorized {
		t.Errorf("a third client's wrong key: %d %s, want 401 auth_invalid (the attacker's limit is its own)", st, b)
	}
	// Each WebSocket session holds one connection from nginx: beyond
	// --max-conns-per-ip (2 here), which does not count a trusted proxy's.
	wsCtx, wsCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wsCancel()
	for i := range 4 {
		c, resp, err := websocket.Dial(wsCtx, "ws"+strings.TrimPrefix(base, "http")+"/manglecp/ws", &websocket.DialOptions{
			HTTPClient: user, HTTPHeader: http.Header{"X-Manglecp-Api-Key": {token}}})
		if err != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Fatalf("WebSocket session %d through nginx: %v (status %d)", i+1, err, status)
		}
		defer c.CloseNow()
	}

	t.Logf("correct-token calls: %d of 20 succeeded; attacker's answers by status: %v", ok, statuses)
	if statuses[http.StatusTooManyRequests] < 5 {
		t.Errorf("the attacker got %d answers 429 (of %v), want its failures limited", statuses[http.StatusTooManyRequests], statuses)
	}
	if n := statuses[http.StatusTooManyRequests] + statuses[http.StatusUnauthorized]; n == 0 || statuses[0] > 0 {
		t.Errorf("attacker statuses %v", statuses)
	}
}
