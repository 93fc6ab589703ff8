package manglecp_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// TestOAuth: JWT access tokens signed by a key of the configured JWKS,
// for the configured issuer and audience, are accepted; their scope
// becomes the caller's permissions, which policy rules use.
func TestOAuth(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	jwks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "k1", Algorithm: string(jose.RS256), Use: "sig"}}}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(jwks) }))
	defer idp.Close()
	h := newHarness(t, nil, func(o *manglecp.Options) {
		o.OAuth = &manglecp.OAuth{Issuer: "https://idp.example", Audience: "manglecp", JWKSURL: idp.URL, TokenURL: "https://idp.example/token"}
	})
	sign := func(k *rsa.PrivateKey, kid string, c jwt.Claims, scope string) string {
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(signer).Claims(c).Claims(map[string]any{"scope": scope}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid := jwt.Claims{Issuer: "https://idp.example", Audience: jwt.Audience{"manglecp"}, Subject: "alice",
		Expiry: jwt.NewNumericDate(fixedNow.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(fixedNow)}
	m := h.srv.Manifest()
	if len(m.Auth.Schemes) != 3 || m.Auth.TokenURL == nil || *m.Auth.TokenURL != "https://idp.example/token" {
		t.Fatalf("auth %+v", m.Auth)
	}
	observe := diagnoseRequest()
	observe["intent"] = map[string]any{"name": "observe"}
	send := func(token string, payload map[string]any) *reply {
		return h.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "o", payload), map[string]string{"Authorization": "Bearer " + token})
	}
	if r := send(sign(key, "k1", valid, "intent:observe"), observe); r.status != http.StatusOK {
		t.Fatalf("valid token: %s", r.raw)
	}
	if e := send(sign(key, "k1", valid, "intent:observe"), diagnoseRequest()).errorPayload(t); e.Code != protocol.CodeAuthInsufficient {
		t.Errorf("scope without diagnose: %s", e.Code)
	}
	expired := valid
	expired.Expiry = jwt.NewNumericDate(fixedNow.Add(-time.Hour))
	wrongAud := valid
	wrongAud.Audience = jwt.Audience{"someone-else"}
	wrongIss := valid
	wrongIss.Issuer = "https://evil.example"
	for name, tok := range map[string]string{
		"expired":        sign(key, "k1", expired, "*"),
		"wrong audience": sign(key, "k1", wrongAud, "*"),
		"wrong issuer":   sign(key, "k1", wrongIss, "*"),
		"foreign key":    sign(other, "k1", valid, "*"),
		"unknown kid":    sign(key, "k9", valid, "*"),
		"not a JWT":      "a.b.c",
	} {
		if e := send(tok, observe).errorPayload(t); e.Code != protocol.CodeAuthInvalid {
			t.Errorf("%s: %s", name, e.Code)
		}
	}
}

// oauthFixture is an identity provider whose JWKS endpoint can hang or
// fail, and a server trusting it beside a static token.
type oauthFixture struct {
	h       *harness
	key     *rsa.PrivateKey
	fetches atomic.Int64
	mode    atomic.Value  // "ok", "hang" or "fail"
	unhang  chan struct{} // closed: a hanging fetch answers (an empty body)
	clock   atomic.Int64  // the server clock, nanoseconds after fixedNow
	peers   atomic.Int64
	valid   jwt.Claims
}

const oauthStaticToken = "static-token-0123456789abcdef"

func newOAuthFixture(t *testing.T, mode string, fetchTimeout time.Duration) *oauthFixture {
	t.Helper()
	f := &oauthFixture{unhang: make(chan struct{})}
	f.mode.Store(mode)
	var err error
	if f.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	jwks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: f.key.Public(), KeyID: "k1", Algorithm: string(jose.RS256), Use: "sig"}}}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.fetches.Add(1)
		switch f.mode.Load() {
		case "hang":
			select {
			case <-r.Context().Done(): // the verifier gave up
			case <-f.unhang:
			}
		case "fail":
			http.Error(w, "down", http.StatusBadGateway)
		default:
			_ = json.NewEncoder(w).Encode(jwks)
		}
	}))
	t.Cleanup(idp.Close)
	f.h = newHarness(t, nil, func(o *manglecp.Options) {
		o.Now = func() time.Time { return fixedNow.Add(time.Duration(f.clock.Load())) }
		o.AuthTokens = []string{oauthStaticToken}
		o.OAuth = &manglecp.OAuth{Issuer: "https://idp.example", Audience: "manglecp", JWKSURL: idp.URL,
			TokenURL: "https://idp.example/token", FetchTimeout: fetchTimeout}
	})
	f.valid = jwt.Claims{Issuer: "https://idp.example", Audience: jwt.Audience{"manglecp"}, Subject: "alice",
		Expiry: jwt.NewNumericDate(fixedNow.Add(24 * time.Hour)), IssuedAt: jwt.NewNumericDate(fixedNow)}
	return f
}

// jwt signs the fixture's valid claims with its key under kid.
func (f *oauthFixture) jwt(t *testing.T, kid string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: f.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(f.valid).Claims(map[string]any{"scope": "*"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// check authenticates a bearer token over HTTP's header check and says how
// long it took. Each check comes from another address, so the budget of
// failures per address does not answer in place of the verifier.
func (f *oauthFixture) check(token string) (*protocol.Error, time.Duration) {
	n := f.peers.Add(1)
	start := time.Now()
	e := f.h.srv.CheckCredentials(context.Background(), &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: token}, fmt.Sprintf("10.1.%d.%d", n>>8&255, n&255))
	return e, time.Since(start)
}

func (f *oauthFixture) advance(d time.Duration) { f.clock.Add(int64(d)) }

// TestOAuthHangingJWKS (issue 26 item 11): a JWKS URL that never answers
// used to serialise every JWT check behind one lock, each fetch waiting
// 5 s (the twelfth bogus JWT waited 60 s). Now one fetch runs, under
// FetchTimeout, every JWT of the moment waits for that one, the failure is
// cached, and static tokens are not delayed. The test holds the fetch
// hanging itself (no time passes in it): static tokens are answered while
// it hangs and every JWT is still waiting; then the fetch fails.
func TestOAuthHangingJWKS(t *testing.T) {
	f := newOAuthFixture(t, "hang", time.Hour)
	bogus := f.jwt(t, "k1") // well formed, but its key cannot be fetched
	var wg sync.WaitGroup
	var answered atomic.Int64
	for i := range 12 {
		wg.Go(func() {
			e, _ := f.check(bogus)
			answered.Add(1)
			if e == nil || e.Code != protocol.CodeAuthInvalid {
				t.Errorf("bogus JWT %d: %v, want auth_invalid", i, e)
			}
		})
	}
	testenv.Eventually(t, 10*time.Second, "the JWKS fetch", func() bool { return f.fetches.Load() >= 1 })
	for range 20 {
		if e, _ := f.check(oauthStaticToken); e != nil {
			t.Fatalf("static token during the hang: %s", e.Code)
		}
	}
	if n := answered.Load(); n != 0 {
		t.Errorf("%d bogus JWTs answered while the one fetch hangs", n)
	}
	close(f.unhang) // the fetch fails: an empty key set
	wg.Wait()
	if n := f.fetches.Load(); n != 1 {
		t.Errorf("12 concurrent JWTs made %d fetches, want 1", n)
	}
	// The failure is cached: the next JWTs answer at once, without a fetch.
	for range 12 {
		if e, _ := f.check(bogus); e == nil || e.Code != protocol.CodeAuthInvalid {
			t.Errorf("a JWT after the failed fetch: %v", e)
		}
	}
	if n := f.fetches.Load(); n != 1 {
		t.Errorf("after the failure was cached: %d fetches, want 1", n)
	}
}

// TestOAuthFetchTimeout: FetchTimeout ends a fetch that never answers; the
// JWT waiting for it is answered auth_invalid.
func TestOAuthFetchTimeout(t *testing.T) {
	f := newOAuthFixture(t, "hang", 50*time.Millisecond)
	done := make(chan *protocol.Error, 1)
	go func() {
		e, _ := f.check(f.jwt(t, "k1"))
		done <- e
	}()
	select {
	case e := <-done:
		if e == nil || e.Code != protocol.CodeAuthInvalid {
			t.Errorf("JWT with a hanging JWKS: %v, want auth_invalid", e)
		}
	case <-time.After(testenv.Budget(30 * time.Second)):
		t.Fatal("the fetch timeout did not end a hanging fetch")
	}
}

// TestOAuthJWKSFailureBackoff (issue 26 item 11): failures were not cached
// (13 requests, 13 fetches). Now a failed fetch is not repeated before a
// backoff that doubles, and the last good key set keeps serving.
func TestOAuthJWKSFailureBackoff(t *testing.T) {
	f := newOAuthFixture(t, "fail", time.Second)
	bogus := f.jwt(t, "k1")
	expect := func(step string, token string, want protocol.Code, fetches int64) {
		t.Helper()
		e, _ := f.check(token)
		got := protocol.Code("")
		if e != nil {
			got = e.Code
		}
		if got != want {
			t.Errorf("%s: %q, want %q", step, got, want)
		}
		if n := f.fetches.Load(); n != fetches {
			t.Errorf("%s: %d fetches, want %d", step, n, fetches)
		}
	}
	for range 13 {
		expect("13 JWTs while the JWKS fails", bogus, protocol.CodeAuthInvalid, 1)
	}
	f.advance(time.Second)
	expect("1 s later", bogus, protocol.CodeAuthInvalid, 2)
	f.advance(time.Second)
	expect("1 s after the second failure", bogus, protocol.CodeAuthInvalid, 2)
	f.advance(time.Second)
	expect("2 s after the second failure", bogus, protocol.CodeAuthInvalid, 3)
	// The issuer is back: after the backoff the key set is fetched.
	f.mode.Store("ok")
	f.advance(4 * time.Second)
	expect("the issuer back", f.jwt(t, "k1"), "", 4)
	// It fails again; the last good set keeps serving known keys, and an
	// unknown key id, once due, fetches without losing it.
	f.mode.Store("fail")
	expect("known key, issuer down", f.jwt(t, "k1"), "", 4)
	f.advance(time.Minute)
	expect("unknown key id, issuer down", f.jwt(t, "k2"), protocol.CodeAuthInvalid, 5)
	expect("known key after a failed refresh", f.jwt(t, "k1"), "", 5)
	expect("static token", oauthStaticToken, "", 5)
}

// TestOAuthRejectionsLoggedWithinBudget: a rejected JWT is logged (with
// its reason, never the token) only while its client is within its
// budget of failures, so a flood of bogus JWTs does not flood the log.
func TestOAuthRejectionsLoggedWithinBudget(t *testing.T) {
	f := newOAuthFixture(t, "ok", time.Second)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f.key, other = other, f.key
	forged := f.jwt(t, "k1") // the issuer's key id, signed by another key
	f.key = other
	for range 300 {
		e := f.h.srv.CheckCredentials(context.Background(), &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: forged}, "203.0.113.50")
		if e == nil || (e.Code != protocol.CodeAuthInvalid && e.Code != protocol.CodeRateLimited) {
			t.Fatalf("forged JWT: %v", e)
		}
	}
	logs := f.h.logs.String()
	if n := strings.Count(logs, "OAuth token rejected"); n == 0 || n > 20 {
		t.Errorf("300 forged JWTs from one client logged %d rejections, want 1 to 20", n)
	}
	if strings.Contains(logs, forged) {
		t.Error("the log holds the token")
	}
}
