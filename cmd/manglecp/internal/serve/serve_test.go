package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/internal/testenv"
)

// TestServeDefaultDomain runs `manglecp serve --addr 127.0.0.1:PORT` (the
// stable contract: HTTP, default domain, auth off) and stops it by
// cancelling its context, as SIGTERM does.
func TestServeDefaultDomain(t *testing.T) {
	t.Parallel()
	addr := clitest.FreeAddr(t)
	srv := commands.Start(t, clitest.Env(t), nil, "serve", "--addr", addr)
	stderr := srv.Stderr
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
	if code := srv.Stop(t); code != 0 {
		t.Errorf("exit code %d\n%s", code, stderr.String())
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
			if code := commands.Main(context.Background(), clitest.Env(t), args, nil, &bytes.Buffer{}, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tc.code, stderr.String(), tc.want)
			}
		})
	}
}
