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
	t.Parallel()
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
	for _, tc := range []struct{ body, want string }{
		{`{"oauth": {` + oauth + `, "fetch_timeout_ms": -1}}`, "c.json: oauth.fetch_timeout_ms must not be negative (got -1ms)"},
		{`{"oauth": {"issuer": "https://idp"}}`, "c.json: oauth.audience must be set\n" + dir + "/c.json: oauth.jwks_url must be set"},
		{`{"oauth": {"issuer": "https://idp", "audience": "a", "jwks_url": "idp/jwks"}}`, "c.json: oauth.jwks_url must be an absolute http or https URL"},
		{`{"oauth": {` + oauth + `, "jwks": "x"}}`, `oauth.jwks: json: unknown field "jwks"`},
	} {
		if _, err := loadConfig(write(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}
