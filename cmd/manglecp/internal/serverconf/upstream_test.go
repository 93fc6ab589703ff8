package serverconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
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
	fs := cmdline.NewFlagSet("serve")
	u := AddUpstreamFlags(fs)
	if err := fs.Parse([]string{"--upstream", "ev=npx -y server", "--upstream", "web=https://example.com/mcp", "--upstream-config", file}); err != nil {
		t.Fatal(err)
	}
	ups, err := u.Upstreams()
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
		fs := cmdline.NewFlagSet("serve")
		u := AddUpstreamFlags(fs)
		if err := fs.Parse([]string{"--upstream", bad}); err == nil {
			if _, err := u.Upstreams(); err == nil {
				t.Errorf("--upstream %s accepted", bad)
			}
		}
	}
}
