// Package oauth verifies OAuth 2.1 JWT access tokens (Spec 08 section 3.2)
// against the signing keys an issuer publishes (JWKS): it checks the
// signature, issuer, audience, expiry and subject, and reads the caller's
// permissions from a claim. It fetches the key set when a token names a key
// it does not hold, one fetch at a time, bounded in time and backed off
// after failures. It knows neither the server nor the protocol: the server
// keeps one Verifier and turns what Verify returns into its caller.
package oauth

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
	"golang.org/x/sync/singleflight"
)

// Identity is whom a valid token stands for.
type Identity struct {
	// Subject is the token's "sub" claim, never empty.
	Subject string
	// Permissions are read from the configured claim; empty (not nil)
	// when the claim is missing or of another type.
	Permissions []string
}

// Verifier checks JWT access tokens against a cached JWKS. It is safe for
// concurrent use.
//
// The key set is fetched when a token names a key id it does not hold:
// one fetch at a time (callers of the moment share it, each waiting at most
// until its own context ends), under a deadline of FetchTimeout, and not
// again before retryAt: minRefetch after a fetch that worked, a backoff
// doubling from failureBackoff up to maxFailureBackoff after one that
// failed (its error is answered meanwhile). The last good key set is kept
// through failures.
type Verifier struct {
	cfg     Config
	fetches singleflight.Group

	mu       sync.Mutex
	keys     *jose.JSONWebKeySet // the last good set; nil before one
	retryAt  time.Time           // no fetch before
	failures int                 // consecutive failed fetches
	lastErr  error               // of the last fetch, nil when it worked
}

var signingAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.ES256, jose.ES384, jose.EdDSA}

const (
	// minRefetch bounds how often an unknown key id makes us fetch a
	// JWKS that could be fetched.
	minRefetch = 30 * time.Second
	// A JWKS that could not be fetched is not fetched again before
	// failureBackoff, doubling with each further failure up to
	// maxFailureBackoff.
	failureBackoff    = time.Second
	maxFailureBackoff = time.Minute
)

// NewVerifier returns a Verifier for cfg, its defaults filled in. It
// fetches nothing until a token needs a key.
func NewVerifier(cfg Config) *Verifier {
	c := cfg.WithDefaults()
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return &Verifier{cfg: c}
}

// Verify returns the identity a valid token stands for, at time now. It
// waits for the key set at most until ctx ends (and FetchTimeout). The
// error says why a token was refused, for the server's log (never for the
// client).
func (v *Verifier) Verify(ctx context.Context, token string, now time.Time) (Identity, error) {
	tok, err := jwt.ParseSigned(token, signingAlgorithms)
	if err != nil {
		return Identity{}, fmt.Errorf("not a signed JWT: %w", err)
	}
	if len(tok.Headers) != 1 {
		return Identity{}, errors.New("a JWT needs exactly one signature")
	}
	key, err := v.key(ctx, tok.Headers[0].KeyID, now)
	if err != nil {
		return Identity{}, err
	}
	var claims jwt.Claims
	extra := map[string]any{}
	if err := tok.Claims(key, &claims, &extra); err != nil {
		return Identity{}, fmt.Errorf("signature: %w", err)
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{v.cfg.Audience}, Time: now}, 30*time.Second); err != nil {
		return Identity{}, fmt.Errorf("claims: %w", err)
	}
	if claims.Expiry == nil {
		return Identity{}, errors.New("the token has no exp claim")
	}
	if claims.Subject == "" {
		return Identity{}, errors.New("the token has no sub claim")
	}
	return Identity{Subject: claims.Subject, Permissions: permissionsOf(extra[v.cfg.PermissionsClaim])}, nil
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

// key finds the verification key for kid, fetching the JWKS when kid is
// unknown and a fetch is due (see Verifier).
func (v *Verifier) key(ctx context.Context, kid string, now time.Time) (*jose.JSONWebKey, error) {
	v.mu.Lock()
	k := findKey(v.keys, kid)
	due := !now.Before(v.retryAt)
	lastErr := v.lastErr
	v.mu.Unlock()
	if k != nil {
		return k, nil
	}
	if !due {
		if lastErr != nil {
			return nil, fmt.Errorf("unknown key id %q; the JWKS is not fetched again yet after: %w", kid, lastErr)
		}
		return nil, fmt.Errorf("unknown key id %q", kid)
	}
	ch := v.fetches.DoChan("jwks", func() (any, error) { return v.refresh(ctx, now) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		if k := findKey(r.Val.(*jose.JSONWebKeySet), kid); k != nil {
			return k, nil
		}
		return nil, fmt.Errorf("unknown key id %q", kid)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the JWKS: %w", ctx.Err())
	}
}

// refresh fetches the JWKS once, under its own deadline (the caller that
// started it may leave; the others still wait for it), and records the
// outcome: the new set, or the failure and when to try again.
func (v *Verifier) refresh(ctx context.Context, now time.Time) (*jose.JSONWebKeySet, error) {
	v.mu.Lock()
	if now.Before(v.retryAt) { // a fetch that just ended decided already
		keys, err := v.keys, v.lastErr
		v.mu.Unlock()
		return keys, err
	}
	v.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), v.cfg.FetchTimeout)
	defer cancel()
	keys, err := v.fetch(ctx)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.failures++
		v.lastErr = err
		v.retryAt = now.Add(min(maxFailureBackoff, failureBackoff<<min(v.failures-1, 16)))
		return nil, err
	}
	v.keys, v.failures, v.lastErr, v.retryAt = keys, 0, nil, now.Add(minRefetch)
	return keys, nil
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

func (v *Verifier) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
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
