package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
)

// TestOAuthFetchTimeoutConfig: oauth.fetch_timeout_ms bounds one JWKS
// fetch (issue 26 item 11); negative is refused.
func TestOAuthFetchTimeoutConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "c.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const oauth = `"issuer": "https://idp", "audience": "a", "jwks_url": "https://idp/jwks"`
	c, err := loadConfig(write(`{"oauth": {` + oauth + `, "fetch_timeout_ms": 500}}`))
	if err != nil {
		t.Fatal(err)
	}
	var o manglecp.Options
	c.apply(&o)
	if o.OAuth == nil || o.OAuth.FetchTimeout != 500*time.Millisecond {
		t.Errorf("OAuth %+v", o.OAuth)
	}
	if _, err := loadConfig(write(`{"oauth": {` + oauth + `, "fetch_timeout_ms": -1}}`)); err == nil || !strings.Contains(err.Error(), "fetch_timeout_ms") {
		t.Errorf("negative fetch_timeout_ms: %v", err)
	}
}
