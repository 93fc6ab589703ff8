package manglecp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// OAuth configures OAuth 2.1 bearer tokens (Spec 08 section 3.2): JWT
// access tokens signed by the issuer's keys (JWKS) are accepted beside the
// configured identities. The manifest lists the scheme "oauth2" and
// TokenURL.
type OAuth struct {
	// Issuer must equal the token's "iss"; Audience must be in its "aud".
	Issuer   string
	Audience string
	// JWKSURL is where the issuer publishes its signing keys.
	JWKSURL string
	// TokenURL is the issuer's token endpoint, advertised as auth.token_url.
	TokenURL string
	// PermissionsClaim names the claim holding the caller's permissions, a
	// space-separated string or a list; default "scope".
	PermissionsClaim string
	// HTTPClient fetches the JWKS; default: a client with a 5 s timeout.
	HTTPClient *http.Client
}

// oauthVerifier checks JWT access tokens against a cached JWKS.
type oauthVerifier struct {
	cfg OAuth

	mu        sync.Mutex
	keys      *jose.JSONWebKeySet
	fetchedAt time.Time
}

var signingAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.ES256, jose.ES384, jose.EdDSA}

// minRefetch bounds how often an unknown key id makes us fetch the JWKS.
const minRefetch = 30 * time.Second

func newOAuthVerifier(cfg *OAuth) *oauthVerifier {
	if cfg == nil {
		return nil
	}
	c := *cfg
	if c.PermissionsClaim == "" {
		c.PermissionsClaim = "scope"
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	}
	return &oauthVerifier{cfg: c}
}

// verify returns the caller a valid token stands for. The error is for
// the log; the client only ever sees auth_invalid.
func (v *oauthVerifier) verify(ctx context.Context, token string, now time.Time) (*caller, error) {
	tok, err := jwt.ParseSigned(token, signingAlgorithms)
	if err != nil {
		return nil, fmt.Errorf("not a signed JWT: %w", err)
	}
	if len(tok.Headers) != 1 {
		return nil, errors.New("a JWT needs exactly one signature")
	}
	key, err := v.key(ctx, tok.Headers[0].KeyID, now)
	if err != nil {
		return nil, err
	}
	var claims jwt.Claims
	extra := map[string]any{}
	if err := tok.Claims(key, &claims, &extra); err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: now}, 30*time.Second); err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	if claims.Expiry == nil {
		return nil, errors.New("the token has no exp claim")
	}
	if claims.Subject == "" {
		return nil, errors.New("the token has no sub claim")
	}
	return &caller{name: "oauth:" + claims.Subject, permissions: permissionsOf(extra[v.cfg.PermissionsClaim])}, nil
}

func permissionsOf(v any) []string {
	switch x := v.(type) {
	case string:
		return strings.Fields(x)
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return []string{}
}

// key finds the verification key for kid, fetching the JWKS when it is
// unknown (at most every minRefetch).
func (v *oauthVerifier) key(ctx context.Context, kid string, now time.Time) (*jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k := findKey(v.keys, kid); k != nil {
		return k, nil
	}
	if v.keys != nil && now.Sub(v.fetchedAt) < minRefetch {
		return nil, fmt.Errorf("unknown key id %q", kid)
	}
	keys, err := v.fetch(ctx)
	if err != nil {
		return nil, err
	}
	v.keys, v.fetchedAt = keys, now
	if k := findKey(keys, kid); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("unknown key id %q", kid)
}

func findKey(set *jose.JSONWebKeySet, kid string) *jose.JSONWebKey {
	if set == nil {
		return nil
	}
	for _, k := range set.Keys {
		if k.KeyID == kid && k.Use != "enc" {
			return &k
		}
	}
	return nil
}

func (v *oauthVerifier) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the JWKS: status %d", resp.StatusCode)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("decoding the JWKS: %w", err)
	}
	return &set, nil
}
