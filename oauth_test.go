package manglecp_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/manglecp/manglecp"
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
