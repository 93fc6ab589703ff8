package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/internal/testenv"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeDefaultDomain runs `manglecp serve --addr 127.0.0.1:PORT` (the
// stable contract: HTTP, default domain, auth off) and stops it by
// cancelling its context, as SIGTERM does.
func TestServeDefaultDomain(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testenv.Buffer{}
	done := make(chan int)
	go func() { done <- Main(ctx, testEnv(t), []string{"serve", "--addr", addr}, nil, &bytes.Buffer{}, stderr) }()
	var m struct {
		Payload struct {
			Status string `json:"status"`
			Domain struct {
				ID string `json:"id"`
			} `json:"domain"`
			Auth struct {
				Required bool `json:"required"`
			} `json:"auth"`
			Intents []struct {
				Name string `json:"name"`
			} `json:"intents"`
		} `json:"payload"`
	}
	wait := testenv.NewWait(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/.well-known/manglecp/manifest.json")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if m.Payload.Status == "ready" { // "booting" while the rules load
				break
			}
		}
		if !wait.Next() {
			t.Fatalf("server did not come up: %v\n%s", err, stderr.String())
		}
	}
	if m.Payload.Status != "ready" || m.Payload.Domain.ID != "browser_diagnostics" || m.Payload.Auth.Required || len(m.Payload.Intents) != 3 {
		t.Errorf("manifest %+v", m.Payload)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d\n%s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit after its context ended")
	}
}

func TestServeRejectsBadStartup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules")
	if err := os.MkdirAll(filepath.Join(rules, "domain"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(rules, "domain", "bad.mg"), []byte("tool(\"a\").\n\nselected(X) :- nowhere(X).\n"), 0o644)
	badJSON := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(badJSON, []byte("{\n  \"limits\": {\n    \"max_compute_ms\": \"soon\"\n  }\n}\n"), 0o644)
	unknown := filepath.Join(dir, "unknown.json")
	_ = os.WriteFile(unknown, []byte("{\"limitz\": {}}\n"), 0o644)
	corsStar := filepath.Join(dir, "cors.json")
	_ = os.WriteFile(corsStar, []byte(`{"auth_tokens":["0123456789abcdef0"],"cors_origins":["*"]}`), 0o644)
	small := filepath.Join(dir, "small.json")
	_ = os.WriteFile(small, []byte(`{"limits": {"max_message_bytes": 1024}}`), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"invalid rule", []string{"--rules", rules}, 1, "domain/bad.mg:3"},
		{"missing rules dir", []string{"--rules", filepath.Join(dir, "nope")}, 1, "--rules"},
		{"config type error", []string{"--config", badJSON}, 1, "bad.json:3"},
		{"config unknown field", []string{"--config", unknown}, 1, "limitz"},
		{"config below spec minimum", []string{"--config", small}, 1, "16 MiB"},
		{"wildcard CORS with auth", []string{"--config", corsStar}, 1, "cors_origins"},
		{"TLS cert without key", []string{"--tls-cert", "c.pem"}, 2, "go together"},
		{"stray argument", []string{"extra"}, 2, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)
			if code := Main(context.Background(), testEnv(t), args, nil, &bytes.Buffer{}, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tc.code, stderr.String(), tc.want)
			}
		})
	}
}

func TestConfigApplies(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.json")
	_ = os.WriteFile(path, []byte(`{"server_name":"s","limits":{"max_facts_per_request":7,"max_evaluation_work":12345},"max_concurrent_evaluations":3,"disclosure":{"full":90,"condensed":50,"minimal":10},"auth_tokens":["0123456789abcdef0"]}`), 0o644)
	srv, err := newServer(testEnv(t), "", path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := srv.Manifest()
	if m.ServerName != "s" || m.Limits.MaxFactsPerRequest != 7 || !m.Auth.Required {
		t.Errorf("manifest %+v", m)
	}
	if w := m.Extensions["x-max_evaluation_work"]; fmt.Sprint(w) != "12345" {
		t.Errorf("x-max_evaluation_work = %v, want 12345 from limits.max_evaluation_work", w)
	}
}

// TestBrowserConfig: the config file's browser section and the serve
// flags reach the browser domain; flags win; bad hosts are refused.
func TestBrowserConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	_ = os.WriteFile(path, []byte(`{"browser":{"browser_path":"/nonexistent/chromium","allowed_hosts":["shop.test"],"max_page_bytes":1000}}`), 0o644)
	for _, tc := range []struct {
		name, flagPath, flagHosts string
		wantReason                string
	}{
		{"from the file", "", "", "browser_path"},
		{"flag turns it off", "none", "", "turned off"},
	} {
		dom := &domainFlags{name: "browser"}
		browserFlagsOf(t, &dom.browser, "--browser-path", tc.flagPath, "--browser-allowed-hosts", tc.flagHosts)
		d, _, err := configure(testEnv(t), "", path, "", nil, dom)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := d.Extensions["x-browser"].(map[string]any)
		if r, _ := x["reason"].(string); x["available"] != false || !strings.Contains(r, tc.wantReason) {
			t.Errorf("%s: x-browser %v", tc.name, x)
		}
		_ = d.Close()
	}
	// Flags: the allowed hosts replace the file's.
	var bc browser.Config
	var bf browserFlags
	browserFlagsOf(t, &bf, "--browser-allowed-hosts", "a.test, 127.0.0.1")
	bf.apply(&bc)
	if strings.Join(bc.AllowedHosts, ",") != "a.test,127.0.0.1" {
		t.Errorf("allowed hosts %v", bc.AllowedHosts)
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"browser":{"allowed_hosts":["http://x/"]}}`), 0o644)
	if _, err := loadConfig(bad); err == nil || !strings.Contains(err.Error(), "allowed_hosts[0]") {
		t.Errorf("a URL in allowed_hosts: %v", err)
	}
}
