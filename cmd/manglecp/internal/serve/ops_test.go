package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/internal/testenv"
)

// TestServeOpsFlags: --metrics-addr serves /metrics and the probes on
// their own listener (and /metrics leaves the public one); --log-format
// json writes an access log line per request.
func TestServeOpsFlags(t *testing.T) {
	t.Parallel()
	addr, maddr := clitest.FreeAddr(t), clitest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &testenv.Buffer{}
	done := make(chan int)
	go func() {
		done <- commands.Main(ctx, clitest.Env(t), []string{"serve", "--addr", addr, "--metrics-addr", maddr, "--log-format", "json", "--log-level", "info"}, nil, &bytes.Buffer{}, stderr)
	}()
	clitest.WaitReady(t, "http://"+maddr+"/readyz", stderr)
	body := `{"type":"intent_request","id":"q1","manglecp":"2026-02-draft","payload":{"intent":{"name":"observe"},"facts":[{"pred":"current_url","args":["https://x"]}]}}`
	resp, err := http.Post("http://"+addr+"/manglecp/evaluate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for path, want := range map[string]int{"http://" + maddr + "/healthz": 200, "http://" + addr + "/healthz": 200, "http://" + addr + "/metrics": 404} {
		if got := status(t, path); got != want {
			t.Errorf("%s: %d, want %d", path, got, want)
		}
	}
	metrics := fetch(t, "http://"+maddr+"/metrics")
	if !strings.Contains(metrics, `manglecp_requests_total{code="ok",transport="http",type="intent_request"} 1`) || !strings.Contains(metrics, "go_goroutines") {
		t.Errorf("metrics:\n%s", metrics)
	}
	found := false
	for _, line := range strings.Split(stderr.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["request_id"] == "q1" {
			found = true
		}
	}
	if !found {
		t.Errorf("no JSON access log line for q1:\n%s", stderr.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestServeStoreFlag: --store redis needs a shared confirmation key and a
// shared store key of its own, and serves with a real Redis when given
// them; bad values are refused.
func TestServeStoreFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "redis://127.0.0.1:1/0"}, "must share the confirmation key"},
		{[]string{"--store", "postgres://x"}, "--store must be memory or redis://"},
		{[]string{"--log-format", "xml"}, "--log-format must be text or json"},
		{[]string{"--log-level", "loud"}, "--log-level must be"},
	} {
		stderr := &testenv.Buffer{}
		code := commands.Main(context.Background(), clitest.Env(t), append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...), nil, &bytes.Buffer{}, stderr)
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, stderr.String())
		}
	}

	bin := testenv.LookPath(t, "redis-server", "valkey-server")
	port := clitest.FreePort(t)
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	env := func(storeKey string) cmdline.Env {
		return cmdline.MapEnv(map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "MANGLECP_CONFIRMATION_KEY": "a key shared by every replica", "MANGLECP_STORE_KEY": storeKey})
	}
	// The store key authenticates stored macro-tools (issue 26 item 10):
	// without one, with a short one, or with the confirmation key (which
	// hosts hold), start-up fails before Redis is even dialled.
	for _, key := range []string{"", "short", "a key shared by every replica"} {
		stderr := &testenv.Buffer{}
		code := commands.Main(context.Background(), env(key), []string{"serve", "--addr", "127.0.0.1:0", "--store", fmt.Sprintf("redis://127.0.0.1:%d/0", port)}, nil, &bytes.Buffer{}, stderr)
		if code == 0 || !strings.Contains(stderr.String(), "must share a store key") {
			t.Errorf("store key %q: exit %d, stderr %s", key, code, stderr.String())
		}
	}
	// store_key in --config is read too (and checked: 16 characters).
	for key, want := range map[string]string{
		"short":                         "store_key must be at least 16 characters",
		"a key shared by every replica": "must share a store key",
	} {
		cfg := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"confirmation_key": "a key shared by every replica", "store_key": %q}`, key), 0o600); err != nil {
			t.Fatal(err)
		}
		stderr := &testenv.Buffer{}
		code := commands.Main(context.Background(), env(""), []string{"serve", "--addr", "127.0.0.1:0", "--config", cfg, "--store", fmt.Sprintf("redis://127.0.0.1:%d/0", port)}, nil, &bytes.Buffer{}, stderr)
		if code == 0 || !strings.Contains(stderr.String(), want) {
			t.Errorf("store_key %q in --config: exit %d, stderr %s", key, code, stderr.String())
		}
	}
	addr := clitest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &testenv.Buffer{}
	done := make(chan int)
	go func() {
		done <- commands.Main(ctx, env("another key shared by every replica"), []string{"serve", "--addr", addr, "--store", fmt.Sprintf("redis://127.0.0.1:%d/0", port)}, nil, &bytes.Buffer{}, stderr)
	}()
	wait := testenv.NewWait(10 * time.Second)
	for !strings.Contains(stderr.String(), "shared store: redis") {
		if !wait.Next() {
			t.Fatalf("no redis store:\n%s", stderr.String())
		}
	}
	clitest.WaitReady(t, "http://"+addr+"/readyz", stderr)
	cancel()
	<-done
}

func status(t *testing.T, url string) int {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func fetch(t *testing.T, url string) string {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServeExportsTracesWithOTLP: the standard OTEL_EXPORTER_OTLP_ENDPOINT
// variable turns tracing on; spans of a request reach the OTLP/HTTP
// endpoint (flushed at shutdown at the latest). Not parallel: the
// OpenTelemetry exporter reads OTEL_* from the process (Env's doc).
func TestServeExportsTracesWithOTLP(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, r.URL.Path+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "manglecp-test")
	addr := clitest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testenv.Buffer{}
	done := make(chan int)
	env := cmdline.MapEnv(map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL})
	go func() {
		done <- commands.Main(ctx, env, []string{"serve", "--addr", addr}, nil, &bytes.Buffer{}, stderr)
	}()
	clitest.WaitReady(t, "http://"+addr+"/readyz", stderr)
	body := `{"type":"intent_request","id":"q1","manglecp":"2026-02-draft","payload":{"intent":{"name":"observe"},"facts":[{"pred":"current_url","args":["https://x"]}]}}`
	resp, err := http.Post("http://"+addr+"/manglecp/evaluate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(posts, "\n")
	if !strings.Contains(all, "/v1/traces") || !strings.Contains(all, "manglecp.request") || !strings.Contains(all, "manglecp-test") {
		t.Errorf("collector got %d posts:\n%.500s\nstderr:\n%s", len(posts), all, stderr.String())
	}
}
