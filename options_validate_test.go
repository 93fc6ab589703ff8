package manglecp_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
)

// TestOptionsValidate: invalid options are reported by their field's
// name, and NewServer fails with them.
func TestOptionsValidate(t *testing.T) {
	good := &manglecp.OAuth{Issuer: "https://idp.example", Audience: "a", JWKSURL: "http://127.0.0.1:1/jwks"}
	for _, tc := range []struct {
		name string
		o    *manglecp.Options
		want string // "": valid
	}{
		{"nil", nil, ""},
		{"zero", &manglecp.Options{}, ""},
		{"oauth", &manglecp.Options{OAuth: good}, ""},
		{"oauth without keys", &manglecp.Options{OAuth: &manglecp.OAuth{Issuer: "https://idp.example", Audience: "a"}}, "OAuth.JWKSURL must be set"},
		{"message limit below the spec (serve refuses it)", &manglecp.Options{Limits: manglecp.Limits{MaxMessageBytes: 1024}}, ""},
		{"negative", &manglecp.Options{MaxEvents: -1, RateLimit: -0.5, QueueTimeout: -time.Second, Limits: manglecp.Limits{MaxDerivedFacts: -2}},
			"Limits.MaxDerivedFacts must not be negative (got -2)\nMaxEvents must not be negative (got -1)\nRateLimit must not be negative (got -0.5)\nQueueTimeout must not be negative (got -1s)"},
		{"result cache off", &manglecp.Options{ResultCacheBytes: -1}, ""},
		{"result cache below -1", &manglecp.Options{ResultCacheBytes: -2}, "ResultCacheBytes must be at least -1 (got -2)"},
		{"disclosure out of order", &manglecp.Options{Disclosure: manglecp.Disclosure{Full: 10, Condensed: 40}},
			"Disclosure.Full must be at least condensed, and condensed at least minimal (got 10, 40, 0)"},
		{"short macro ttl", &manglecp.Options{MacroTTL: time.Minute}, "MacroTTL must be at least 300 seconds (Spec 07 section 2.4)"},
		{"identities", &manglecp.Options{Identities: []manglecp.Identity{{Name: "a", Token: "t"}, {Name: "a", Token: "u", TrustLevel: "root"}, {Token: "v", AutoConfirmEffects: []string{"fs"}}}},
			"Identities[1] needs a unique name\nIdentities[1] trust_level must be \"automated\" or absent\nIdentities[2] needs a unique name\nIdentities[2] auto_confirm_effects needs trust_level \"automated\""},
		{"oauth relative token url", &manglecp.Options{OAuth: &manglecp.OAuth{Issuer: "i", Audience: "a", JWKSURL: "https://idp/jwks", TokenURL: "/token"}},
			"OAuth.TokenURL must be an absolute http or https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && err.Error() != tc.want) {
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
			o := tc.o
			if o == nil {
				o = &manglecp.Options{}
			}
			o.Logger = slog.New(slog.DiscardHandler)
			srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir(), Config: chrome.Config{Path: "none"}}), o)
			if srv != nil {
				defer srv.Close()
			}
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("NewServer: %v, want %q", err, tc.want)
			}
		})
	}
}
