package manglecp_test

import (
	"log/slog"
	"strings"
	"testing"

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
