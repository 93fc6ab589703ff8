package oauth

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/internal/settings"
)

var update = flag.Bool("update-docs", false, "rewrite the OAuth settings table of docs/deploy.md")

// TestConfigValidate: each invalid setting is reported by its name.
func TestConfigValidate(t *testing.T) {
	ok := Config{Issuer: "https://idp.example", Audience: "manglecp", JWKSURL: "https://idp.example/jwks.json"}
	with := func(f func(*Config)) Config { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // the errors, one a line; "": valid
	}{
		{"complete", ok, ""},
		{"token url and timeout", with(func(c *Config) { c.TokenURL, c.FetchTimeout = "http://127.0.0.1:9/token", time.Second }), ""},
		{"empty", Config{}, "Issuer must be set\nAudience must be set\nJWKSURL must be set"},
		{"relative jwks", with(func(c *Config) { c.JWKSURL = "/jwks.json" }), "JWKSURL must be an absolute http or https URL"},
		{"file jwks", with(func(c *Config) { c.JWKSURL = "file:///etc/jwks.json" }), "JWKSURL must be an absolute http or https URL"},
		{"bad token url", with(func(c *Config) { c.TokenURL = "idp.example/token" }), "TokenURL must be an absolute http or https URL"},
		{"negative timeout", with(func(c *Config) { c.FetchTimeout = -time.Second }), "FetchTimeout must not be negative (got -1s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := tc.cfg.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
	if d := (Config{FetchTimeout: -1}).WithDefaults(); d.FetchTimeout != 3*time.Second || d.PermissionsClaim != "scope" {
		t.Errorf("defaults %+v", d)
	}
}

// TestConfigDocumented: docs/deploy.md lists every OAuth setting with its
// config key and default (go test -run TestConfigDocumented -update-docs
// rewrites the table).
func TestConfigDocumented(t *testing.T) {
	d := DefaultConfig()
	if err := settings.CheckDoc(filepath.Join("..", "..", "docs", "deploy.md"), "oauth", settings.Table(&d, "oauth"), *update); err != nil {
		t.Error(err)
	}
	if n := len(settings.Fields(&d)); n != 6 || !strings.HasSuffix(settings.Fields(&d)[5].Key, "_ms") {
		t.Errorf("%d settings", n)
	}
}
