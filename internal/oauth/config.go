package oauth

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/manglecp/manglecp/internal/settings"
)

// Config configures a Verifier. It is the one place of the OAuth
// settings: the server's public option manglecp.OAuth is this type, and
// the tags name each setting's key in the config file's "oauth" section
// (package internal/settings derives the section and the docs table of
// docs/deploy.md from them).
type Config struct {
	// Issuer must equal the token's "iss"; Audience must be in its "aud".
	Issuer   string `key:"issuer" help:"must equal the token's iss claim (required)"`
	Audience string `key:"audience" help:"must be one of the token's aud claim (required)"`
	// JWKSURL is where the issuer publishes its signing keys.
	JWKSURL string `key:"jwks_url" help:"http or https URL where the issuer publishes its signing keys (required)"`
	// TokenURL is the issuer's token endpoint (the verifier does not use
	// it; the server advertises it as auth.token_url).
	TokenURL string `key:"token_url" help:"the issuer's token endpoint, advertised in the manifest as auth.token_url"`
	// PermissionsClaim names the claim holding the caller's permissions, a
	// space-separated string or a list; default "scope".
	PermissionsClaim string `key:"permissions_claim" help:"the claim holding the caller's permissions (a space-separated string or a list)"`
	// HTTPClient fetches the JWKS; default a client of
	// http.DefaultTransport (FetchTimeout bounds each fetch either way).
	HTTPClient *http.Client
	// FetchTimeout bounds one fetch of the JWKS; default 3 s. A token
	// whose key is not known waits at most this long.
	FetchTimeout time.Duration `key:"fetch_timeout_ms" help:"bounds one fetch of the issuer's keys; a token whose key is not known waits at most this long"`
}

// DefaultConfig holds the defaults a zero setting of [Config] takes.
func DefaultConfig() Config {
	return Config{PermissionsClaim: "scope", FetchTimeout: 3 * time.Second}
}

// WithDefaults is c with its zero settings (and a FetchTimeout below
// zero) at their defaults.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	settings.FillZero(&c, &d)
	return c
}

// Validate reports each setting of c that is not valid, naming it:
// Issuer, Audience and JWKSURL are required, JWKSURL and TokenURL (when
// set) are absolute http or https URLs, FetchTimeout is not negative.
func (c Config) Validate() error {
	errs := settings.CheckMin(&c)
	settings.Check(&errs, c.Issuer != "", "Issuer", "must be set")
	settings.Check(&errs, c.Audience != "", "Audience", "must be set")
	settings.Check(&errs, c.JWKSURL != "", "JWKSURL", "must be set")
	for _, f := range []struct{ name, url string }{{"JWKSURL", c.JWKSURL}, {"TokenURL", c.TokenURL}} {
		name, u := f.name, f.url
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		settings.Check(&errs, err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != "", name, "must be an absolute http or https URL")
	}
	return errors.Join(errs...)
}
