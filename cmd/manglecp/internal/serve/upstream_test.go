package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/internal/testenv"
)

// TestServeWithUpstreams runs `manglecp serve --upstream ev=... --upstream
// gone=...`: the gateway domain serves the everything server's pack while
// the other upstream is down (manifest degraded naming it, /readyz 503),
// and ending serve stops the upstream process.
func TestServeWithUpstreams(t *testing.T) {
	t.Parallel()
	bin, _ := filepath.Abs("../../../../.cache/npm-gateway/node_modules/.bin/mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(t, "mcp-server-everything (scripts/deps/npm_gateway.sh)")
	}
	testenv.LookPath(t, "node")
	addr := clitest.FreeAddr(t)
	srv := commands.Start(t, clitest.Env(t), nil, "serve", "--addr", addr, "--upstream", "ev="+bin, "--upstream", "gone=/nonexistent/server")
	stderr := srv.Stderr
	var m struct {
		Payload struct {
			Status string `json:"status"`
			Domain struct {
				ID string `json:"id"`
			} `json:"domain"`
			Intents []struct {
				Name string `json:"name"`
			} `json:"intents"`
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"payload"`
	}
	wait := testenv.NewWait(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/.well-known/manglecp/manifest.json")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if m.Payload.Status == "degraded" {
				break
			}
		}
		if !wait.Next() {
			t.Fatalf("server did not come up degraded (%s): %v\n%s", m.Payload.Status, err, stderr.String())
		}
	}
	ups := string(m.Payload.Extensions["x-upstreams"])
	if m.Payload.Domain.ID != "gateway" || len(m.Payload.Intents) != 2 || !strings.Contains(ups, `"ev":{"state":"up"`) || !strings.Contains(ups, `"gone":{"state":"down"`) {
		t.Errorf("manifest: domain %s, intents %v, x-upstreams %s", m.Payload.Domain.ID, m.Payload.Intents, ups)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d %s", resp.StatusCode, body)
	}
	if reason := string(m.Payload.Extensions["x-degraded_reason"]); !strings.Contains(reason, "upstream gone is down") || strings.Contains(reason, "/nonexistent") {
		t.Errorf("x-degraded_reason = %s", reason)
	}
	children := testenv.ChildPIDs(t)
	if len(children) == 0 {
		t.Error("no upstream process runs")
	}
	if code := srv.Stop(t); code != 0 {
		t.Errorf("exit code %d\n%s", code, stderr.String())
	}
	testenv.WaitGone(t, children)
}

// TestServeLateUpstreamJoins: an upstream (from --upstream-config) that
// fails its first start serves degraded without its tools, then joins with
// them once its restart succeeds: serve reloads the rules.
func TestServeLateUpstreamJoins(t *testing.T) {
	t.Parallel()
	bin, _ := filepath.Abs("../../../../.cache/npm-gateway/node_modules/.bin/mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(t, "mcp-server-everything (scripts/deps/npm_gateway.sh)")
	}
	testenv.LookPath(t, "node")
	dir := t.TempDir()
	marker := filepath.Join(dir, "started-once")
	script := `if [ -f "$1" ]; then exec "$2"; else touch "$1"; exit 1; fi`
	cfg, _ := json.Marshal(map[string]any{"upstreams": []any{map[string]any{"name": "ev", "command": []string{"sh", "-c", script, "sh", marker, bin}}}})
	file := filepath.Join(dir, "up.json")
	if err := os.WriteFile(file, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := clitest.FreeAddr(t)
	srv := commands.Start(t, clitest.Env(t), nil, "serve", "--addr", addr, "--upstream-config", file)
	stderr := srv.Stderr
	wait := testenv.NewWait(30 * time.Second)
	for {
		var m struct {
			Payload struct {
				Status  string `json:"status"`
				Intents []struct {
					Name string `json:"name"`
				} `json:"intents"`
			} `json:"payload"`
		}
		resp, err := http.Get("http://" + addr + "/.well-known/manglecp/manifest.json")
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if m.Payload.Status == "ready" && len(m.Payload.Intents) == 2 {
				break // the everything pack's intents: the upstream joined
			}
		}
		if !wait.Next() {
			t.Fatalf("the late upstream never joined (status %s, intents %v)\n%s", m.Payload.Status, m.Payload.Intents, stderr.String())
		}
	}
}
