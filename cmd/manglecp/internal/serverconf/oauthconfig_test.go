package serverconf

import (
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
)

// TestOAuthFetchTimeoutConfig: oauth.fetch_timeout_ms bounds one JWKS
// fetch (issue 26 item 11); negative is refused.
func TestOAuthFetchTimeoutConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(body string) string { return clitest.WriteFile(t, dir, "c.json", body) }
	const oauth = `"issuer": "https://idp", "audience": "a", "jwks_url": "https://idp/jwks"`
	c, err := Load(write(`{"oauth": {` + oauth + `, "fetch_timeout_ms": 500}}`))
	if err != nil {
		t.Fatal(err)
	}
	var o manglecp.Options
	c.Apply(&o)
	if o.OAuth == nil || o.OAuth.FetchTimeout != 500*time.Millisecond {
		t.Errorf("OAuth %+v", o.OAuth)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"oauth": {` + oauth + `, "fetch_timeout_ms": -1}}`, "c.json: oauth.fetch_timeout_ms must not be negative (got -1ms)"},
		{`{"oauth": {"issuer": "https://idp"}}`, "c.json: oauth.audience must be set\n" + dir + "/c.json: oauth.jwks_url must be set"},
		{`{"oauth": {"issuer": "https://idp", "audience": "a", "jwks_url": "idp/jwks"}}`, "c.json: oauth.jwks_url must be an absolute http or https URL"},
		{`{"oauth": {` + oauth + `, "jwks": "x"}}`, `oauth.jwks: json: unknown field "jwks"`},
	} {
		if _, err := Load(write(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}
