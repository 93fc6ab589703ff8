package serverconf

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/domains/browser"
)

func TestConfigApplies(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.json")
	_ = os.WriteFile(path, []byte(`{"server_name":"s","limits":{"max_facts_per_request":7,"max_evaluation_work":12345},"max_concurrent_evaluations":3,"disclosure":{"full":90,"condensed":50,"minimal":10},"auth_tokens":["0123456789abcdef0"]}`), 0o644)
	d, opts, err := Configure(clitest.Env(t), "", path, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := manglecp.NewServer(d, opts)
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
		dom := &DomainFlags{Name: "browser"}
		browserFlagsOf(t, &dom.Browser, "--browser-path", tc.flagPath, "--browser-allowed-hosts", tc.flagHosts)
		d, _, err := Configure(clitest.Env(t), "", path, "", nil, dom)
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
	var bf BrowserFlags
	browserFlagsOf(t, &bf, "--browser-allowed-hosts", "a.test, 127.0.0.1")
	bf.apply(&bc)
	if strings.Join(bc.AllowedHosts, ",") != "a.test,127.0.0.1" {
		t.Errorf("allowed hosts %v", bc.AllowedHosts)
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"browser":{"allowed_hosts":["http://x/"]}}`), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "allowed_hosts[0]") {
		t.Errorf("a URL in allowed_hosts: %v", err)
	}
}
