package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

type fixture struct {
	key, other *rsa.PrivateKey
	fetches    atomic.Int64
	fail       atomic.Bool
	url        string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{key: key, other: other}
	jwks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: key.Public(), KeyID: "k1", Algorithm: string(jose.RS256), Use: "sig"},
		{Key: other.Public(), KeyID: "enc", Algorithm: string(jose.RS256), Use: "enc"},
	}}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.fetches.Add(1)
		if f.fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(jwks)
	}))
	t.Cleanup(idp.Close)
	f.url = idp.URL
	return f
}

func sign(t *testing.T, k *rsa.PrivateKey, kid string, c jwt.Claims, extra map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestVerify: the claims a token must carry, the key it must be signed
// with, and where the permissions come from.
func TestVerify(t *testing.T) {
	f := newFixture(t)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	good := jwt.Claims{Issuer: "https://idp.example", Audience: jwt.Audience{"manglecp"}, Subject: "alice",
		Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	with := func(edit func(*jwt.Claims)) jwt.Claims { c := good; edit(&c); return c }
	cases := []struct {
		name    string
		key     *rsa.PrivateKey
		kid     string
		claims  jwt.Claims
		extra   map[string]any
		claim   string // PermissionsClaim
		want    Identity
		wantErr string
	}{
		{name: "scope string", key: f.key, kid: "k1", claims: good, extra: map[string]any{"scope": "read write"},
			want: Identity{Subject: "alice", Permissions: []string{"read", "write"}}},
		{name: "list claim", key: f.key, kid: "k1", claims: good, claim: "perms", extra: map[string]any{"perms": []any{"a", 1, "b"}},
			want: Identity{Subject: "alice", Permissions: []string{"a", "b"}}},
		{name: "no permissions", key: f.key, kid: "k1", claims: good, want: Identity{Subject: "alice", Permissions: []string{}}},
		{name: "wrong issuer", key: f.key, kid: "k1", claims: with(func(c *jwt.Claims) { c.Issuer = "https://evil.example" }), wantErr: "claims"},
		{name: "wrong audience", key: f.key, kid: "k1", claims: with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"other"} }), wantErr: "claims"},
		{name: "expired", key: f.key, kid: "k1", claims: with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Minute)) }), wantErr: "claims"},
		{name: "no exp", key: f.key, kid: "k1", claims: with(func(c *jwt.Claims) { c.Expiry = nil }), wantErr: "no exp"},
		{name: "no sub", key: f.key, kid: "k1", claims: with(func(c *jwt.Claims) { c.Subject = "" }), wantErr: "no sub"},
		{name: "another key under a known id", key: f.other, kid: "k1", claims: good, wantErr: "signature"},
		{name: "an encryption key", key: f.other, kid: "enc", claims: good, wantErr: "unknown key id"},
		{name: "unknown key id", key: f.key, kid: "k9", claims: good, wantErr: "unknown key id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := NewVerifier(Config{Issuer: "https://idp.example", Audience: "manglecp", JWKSURL: f.url, PermissionsClaim: c.claim})
			got, err := v.Verify(context.Background(), sign(t, c.key, c.kid, c.claims, c.extra), now)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Subject != c.want.Subject || !slices.Equal(got.Permissions, c.want.Permissions) || got.Permissions == nil {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
	if _, err := NewVerifier(Config{JWKSURL: f.url}).Verify(context.Background(), "not.a.jwt", now); err == nil {
		t.Error("a malformed token was accepted")
	}
}

// TestFetchBackoff: an unknown key id fetches the key set at most once per
// minRefetch after a good fetch, and after failures waits a backoff that
// doubles; the last good set is kept through failures.
func TestFetchBackoff(t *testing.T) {
	f := newFixture(t)
	v := NewVerifier(Config{Issuer: "https://idp.example", Audience: "manglecp", JWKSURL: f.url})
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	claims := jwt.Claims{Issuer: "https://idp.example", Audience: jwt.Audience{"manglecp"}, Subject: "alice",
		Expiry: jwt.NewNumericDate(t0.Add(time.Hour))}
	good, unknown := sign(t, f.key, "k1", claims, nil), sign(t, f.key, "k9", claims, nil)
	steps := []struct {
		at      time.Duration
		token   string
		fail    bool
		ok      bool
		fetches int64
	}{
		{0, good, false, true, 1},                                    // first use fetches
		{time.Second, unknown, false, false, 1},                      // within minRefetch: no fetch
		{minRefetch, unknown, true, false, 2},                        // due: fetches, fails
		{minRefetch, good, true, true, 2},                            // the last good set answers
		{minRefetch + 500*time.Millisecond, unknown, true, false, 2}, // backoff 1 s
		{minRefetch + time.Second, unknown, true, false, 3},          // fails again
		{minRefetch + 2*time.Second, unknown, true, false, 3},        // backoff 2 s
		{minRefetch + 3*time.Second, unknown, false, false, 4},       // fetched, still unknown
	}
	for i, st := range steps {
		f.fail.Store(st.fail)
		_, err := v.Verify(context.Background(), st.token, t0.Add(st.at))
		if (err == nil) != st.ok {
			t.Errorf("step %d: err %v, want ok %v", i, err, st.ok)
		}
		if n := f.fetches.Load(); n != st.fetches {
			t.Errorf("step %d: %d fetches, want %d", i, n, st.fetches)
		}
	}
}
