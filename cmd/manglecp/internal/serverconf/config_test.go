package serverconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
)

// TestConfigFileErrors: each invalid setting of the config file is named
// by file, line (for a value that cannot be read) and key, checked by
// manglecp.Options.Validate (the CLI only renames it) or the CLI's own
// checks.
func TestConfigFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const oauth = `"issuer": "https://idp", "audience": "a", "jwks_url": "https://idp/jwks"`
	for _, tc := range []struct{ body, want string }{
		{`{"limits": {"max_message_bytes": 1024}}`, "c.json: limits.max_message_bytes must be at least 16777216 (16 MiB"},
		{`{"limits": {"max_facts_per_request": -1}}`, "c.json: limits.max_facts_per_request must not be negative (got -1)"},
		{"{\n\"limits\": {\n\"max_factz\": 1}}", `c.json:3: limits.max_factz: json: unknown field "max_factz"`},
		{`{"macro_cache": {"ttl_seconds": 10}}`, "c.json: macro_cache.ttl_seconds must be at least 300 seconds"},
		{`{"result_cache": {"max_bytes": -2}}`, "c.json: result_cache.max_bytes must be at least -1 (got -2)"},
		{`{"rate_limit": {"per_second": -1}}`, "c.json: rate_limit.per_second must not be negative (got -1)"},
		{`{"queue_timeout_ms": -5}`, "c.json: queue_timeout_ms must not be negative (got -5ms)"},
		{`{"disclosure": {"full": 10, "condensed": 40}}`, "c.json: disclosure.full must be at least condensed"},
		{`{"identities": [{"name": "a", "token": "0123456789abcdef0", "trust_level": "root"}]}`, `c.json: identities[0] trust_level must be "automated" or absent`},
		{`{"identities": [{"name": "a", "token": "short"}]}`, "c.json: identities[0].token is shorter than 16 characters"},
		{`{"identities": [{"nam": "a"}]}`, `c.json:1: identities: json: unknown field "nam"`},
		{`{"oauth": {"issuer": "https://idp"}}`, "c.json: oauth.audience must be set"},
		{`{"oauth": {` + oauth + `, "token_url": "/token"}}`, "c.json: oauth.token_url must be an absolute http or https URL"},
		{`{"browser": {"max_pages": -1}}`, "c.json: browser.max_pages must not be negative (got -1)"},
		{`{"store_key": "short"}`, "c.json: store_key must be at least 16 characters"},
	} {
		p := filepath.Join(dir, "c.json")
		_ = os.WriteFile(p, []byte(tc.body), 0o600)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n%v\nwant %q", tc.body, err, tc.want)
		}
	}
}

// TestConfigFileApplies: every key of the README's example reaches its
// option; tokens and identities join those given before.
func TestConfigFileApplies(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "c.json")
	_ = os.WriteFile(p, []byte(`{"server_name": "s", "limits": {"max_compute_ms": 5}, "macro_cache": {"ttl_seconds": 600, "max_bytes": 7},
		"result_cache": {"max_bytes": -1}, "max_events": 3, "invoke_timeout_ms": 1500, "auth_tokens": ["0123456789abcdef0"],
		"identities": [{"name": "o", "token": "0123456789abcdef1", "permissions": ["intent:observe"], "trust_level": "automated", "auto_confirm_effects": ["fs"]}],
		"rule_coverage": true, "confirmation_key": "k", "rate_limit": {"per_second": 2.5, "burst": 4}, "queue_timeout_ms": 100,
		"disclosure": {"full": 90, "condensed": 50, "minimal": 10, "chars_per_token": 3},
		"oauth": {"issuer": "https://idp", "audience": "a", "jwks_url": "https://idp/jwks", "fetch_timeout_ms": 500}}`), 0o600)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	o := manglecp.Options{AuthTokens: []string{"flag-token-0123456"}, ServerName: "before"}
	c.Apply(&o)
	if o.ServerName != "s" || o.Limits.MaxComputeMS != 5 || o.MacroTTL != 10*time.Minute || o.MacroCacheBytes != 7 || o.ResultCacheBytes != -1 ||
		o.MaxEvents != 3 || o.InvokeTimeout != 1500*time.Millisecond || len(o.AuthTokens) != 2 || o.AuthTokens[0] != "flag-token-0123456" ||
		len(o.Identities) != 1 || o.Identities[0].AutoConfirmEffects[0] != "fs" || !o.RuleCoverage || string(o.ConfirmationKey) != "k" ||
		o.RateLimit != 2.5 || o.RateBurst != 4 || o.QueueTimeout != 100*time.Millisecond || o.Disclosure.CharsPerToken != 3 ||
		o.OAuth == nil || o.OAuth.FetchTimeout != 500*time.Millisecond {
		t.Errorf("options %+v (OAuth %+v)", o, o.OAuth)
	}
}
