package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	iofs "io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/upstream"
	"github.com/manglecp/manglecp/upstream/upstreamtest"
)

// TestUpstreamFlags: --upstream NAME=COMMAND and NAME=URL, and the
// --upstream-config file with env, dir, pack, lazy and call_timeout.
func TestUpstreamFlags(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "up.json")
	if err := os.WriteFile(file, []byte(`{"upstreams": [{"name": "fs", "command": ["node", "server.js", "/data dir"],
		"env": {"B": "2", "A": "1"}, "dir": "/srv", "lazy": true, "pack": "filesystem", "call_timeout": "5s"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := newFlagSet("serve")
	u := addUpstreamFlags(fs)
	if err := fs.Parse([]string{"--upstream", "ev=npx -y server", "--upstream", "web=https://example.com/mcp", "--upstream-config", file}); err != nil {
		t.Fatal(err)
	}
	ups, err := u.configs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 3 || strings.Join(ups[0].Command, "|") != "npx|-y|server" || ups[1].URL != "https://example.com/mcp" {
		t.Fatalf("configs = %+v", ups)
	}
	fsu := ups[2]
	if strings.Join(fsu.Command, "|") != "node|server.js|/data dir" || strings.Join(fsu.Env, ",") != "A=1,B=2" || fsu.Dir != "/srv" ||
		!fsu.Lazy || fsu.Pack != "filesystem" || fsu.CallTimeout != 5*time.Second {
		t.Errorf("file upstream = %+v", fsu)
	}
	for _, bad := range []string{"noequals", "Bad=cmd", "a="} {
		fs := newFlagSet("serve")
		u := addUpstreamFlags(fs)
		if err := fs.Parse([]string{"--upstream", bad}); err == nil {
			if _, err := u.configs(); err == nil {
				t.Errorf("--upstream %s accepted", bad)
			}
		}
	}
}

// TestAdoptWritesCheckedRules: adopt connects to the everything server
// and writes rules that `manglecp check` accepts, every tool reachable.
func TestAdoptWritesCheckedRules(t *testing.T) {
	t.Parallel()
	bin, _ := filepath.Abs("../../../../.cache/npm-gateway/node_modules/.bin/mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		testenv.Missing(t, "mcp-server-everything (scripts/deps/npm_gateway.sh)")
	}
	testenv.LookPath(t, "node")
	dir := filepath.Join(t.TempDir(), "ev-rules")
	var out, errb bytes.Buffer
	if code := Main(context.Background(), testEnv(t), []string{"adopt", "ev", "--out", dir, "--", bin}, nil, &out, &errb); code != 0 {
		t.Fatalf("adopt = %d: %s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := Main(context.Background(), testEnv(t), []string{"check", dir, "--actions", "ev"}, nil, &out, &errb); code != 0 {
		t.Fatalf("check = %d: %s%s", code, out.String(), errb.String())
	}
	domain, _ := os.ReadFile(filepath.Join(dir, "domain", "ev.mg"))
	policy, _ := os.ReadFile(filepath.Join(dir, "policy", "ev.mg"))
	for _, line := range strings.Split(string(domain), "\n") {
		if strings.HasPrefix(line, "tool(") {
			name := strings.TrimSuffix(strings.TrimPrefix(line, "tool("), ").")
			if !strings.Contains(string(domain), ", "+name+", ") {
				t.Errorf("%s is reachable from no intent", name)
			}
		}
	}
	if !strings.Contains(string(policy), "requires_confirmation") && strings.Contains(string(domain), "ev_change") {
		t.Error("destructive tools without confirmation")
	}
}

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
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &testenv.Buffer{}
	done := make(chan int)
	go func() {
		done <- Main(ctx, testEnv(t), []string{"serve", "--addr", addr, "--upstream", "ev=" + bin, "--upstream", "gone=/nonexistent/server"}, nil, &bytes.Buffer{}, stderr)
	}()
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
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not exit after its context ended")
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
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testenv.Buffer{}
	done := make(chan int)
	go func() {
		done <- Main(ctx, testEnv(t), []string{"serve", "--addr", addr, "--upstream-config", file}, nil, &bytes.Buffer{}, stderr)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not exit")
		}
	}()
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

// TestCheckPassesOnEmbeddedPacks: the rules the gateway assembles from
// its own rules, the three embedded packs and the catalogues of the real
// servers' recorded tool lists pass `manglecp check` (with the actions the
// gateway registers: one per upstream).
func TestCheckPassesOnEmbeddedPacks(t *testing.T) {
	t.Parallel()
	var ups []gateway.Upstream
	for name, pack := range map[string]string{"fs": "filesystem", "pw": "playwright", "ev": "everything"} {
		file := filepath.Join("..", "..", "..", "..", "domains", "gateway", "testdata", "tools", pack+".json")
		ups = append(ups, gateway.Upstream{Pack: pack, Config: upstream.Config{Name: name, Dial: func(ctx context.Context) (mcp.Transport, func(), error) {
			s, err := upstreamtest.Recorded(file, "recorded")
			if err != nil {
				return nil, nil, err
			}
			ct, st := mcp.NewInMemoryTransports()
			ss, err := s.Connect(ctx, st, nil)
			if err != nil {
				return nil, nil, err
			}
			return ct, func() { _ = ss.Close() }, nil
		}}})
	}
	g, err := gateway.Open(context.Background(), gateway.Config{Upstreams: ups})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	dir := t.TempDir()
	err = iofs.WalkDir(g.Rules(), ".", func(p string, d iofs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := iofs.ReadFile(g.Rules(), p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Main(context.Background(), testEnv(t), []string{"check", dir, "--actions", "fs,pw,ev"}, nil, &out, &errb); code != 0 {
		t.Fatalf("check = %d:\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "9 intents") {
		t.Errorf("check: %s", out.String())
	}
}
