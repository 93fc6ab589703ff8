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
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/internal/testenv"
)

// TestServeWatchesRules: serve --rules DIR reloads when a .mg file changes;
// broken rules keep the old ones serving with status degraded and the file
// and line in the manifest; fixing them brings ready back.
func TestServeWatchesRules(t *testing.T) {
	t.Parallel()
	dir := clitest.CopyFS(t, browser.Rules(), nil)
	addr := clitest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	stderr := &testenv.Buffer{}
	go func() {
		done <- commands.Main(ctx, clitest.Env(t), []string{"serve", "--addr", addr, "--rules", dir, "--watch", "50ms"}, nil, &bytes.Buffer{}, stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	status := func() (string, string) {
		resp, err := http.Get("http://" + addr + "/.well-known/manglecp/manifest.json")
		if err != nil {
			return "", ""
		}
		defer resp.Body.Close()
		var m struct {
			Payload struct {
				Status     string         `json:"status"`
				Extensions map[string]any `json:"extensions"`
			} `json:"payload"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&m)
		reason, _ := m.Payload.Extensions["x-degraded_reason"].(string)
		return m.Payload.Status, reason
	}
	waitFor := func(want string) string {
		t.Helper()
		for wait := testenv.NewWait(10 * time.Second); wait.Next(); {
			if st, reason := status(); st == want {
				return reason
			}
		}
		t.Fatalf("status never became %s\n%s", want, stderr.String())
		return ""
	}
	waitFor("ready")
	bad := filepath.Join(dir, "domain", "zz_broken.mg")
	if err := os.WriteFile(bad, []byte("tool(\"x\").\nbroken(:-.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if reason := waitFor("degraded"); reason == "" || strings.Contains(reason, dir) {
		t.Errorf("degraded reason %q (it is public: no paths)", reason)
	}
	if !strings.Contains(stderr.String(), "zz_broken.mg:2") {
		t.Errorf("the log does not name the file and line:\n%s", stderr.String())
	}
	_ = os.Remove(bad)
	waitFor("ready")
}
