package transport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// fake answers every message with a fixed envelope and records what it got.
type fake struct {
	transport.HandlerDefaults
	reply *protocol.Envelope
	got   *protocol.Inbound
}

func (f *fake) Handle(_ context.Context, in *protocol.Inbound) *protocol.Envelope {
	f.got = in
	return f.reply
}

func (f *fake) ManifestJSON() ([]byte, string) { return []byte(`{"status":"ready"}`), `"v1"` }

func (f *fake) MaxMessageBytes() int64 { return 64 }

func TestHTTPBinding(t *testing.T) {
	f := &fake{reply: protocol.ErrorEnvelope("x", protocol.Errorf(protocol.CodeRateLimited, "slow down").WithRetryAfter(1500))}
	srv := httptest.NewServer(transport.NewHTTPHandler(f, nil))
	defer srv.Close()
	for _, tc := range []struct {
		name, method, path, ctype, body string
		header                          map[string]string
		status                          int
		code                            protocol.Code
	}{
		{"manifest", "GET", transport.ManifestPath, "", "", nil, 200, ""},
		{"manifest by POST", "POST", transport.ManifestPath, "application/json", "{}", nil, 405, protocol.CodeMethodNotAllowed},
		{"evaluate by GET", "GET", "/manglecp/evaluate", "", "", nil, 405, protocol.CodeMethodNotAllowed},
		{"wrong content type", "POST", "/manglecp/evaluate", "text/plain", "{}", nil, 415, protocol.CodeUnsupportedMediaType},
		{"too large", "POST", "/manglecp/invoke", "application/json", strings.Repeat("x", 65), nil, 413, protocol.CodeMessageTooLarge},
		{"handler error status from the registry", "POST", "/manglecp/evaluate", "application/json; charset=utf-8", "{}", nil, 429, protocol.CodeRateLimited},
		{"unknown path", "GET", "/elsewhere", "", "", nil, 404, protocol.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, raw := doStatus(t, http.DefaultClient, req, tc.status)
			if tc.code == "" {
				return
			}
			if e := decodeError(t, raw); e.Code != tc.code {
				t.Errorf("body %s, want %s", raw, tc.code)
			}
			if tc.code == protocol.CodeRateLimited && resp.Header.Get("Retry-After") != "2" {
				t.Errorf("Retry-After %q, want 2", resp.Header.Get("Retry-After"))
			}
		})
	}
}

func TestCredentialsReachTheHandler(t *testing.T) {
	f := &fake{reply: protocol.ErrorEnvelope("", protocol.Errorf(protocol.CodeAuthInvalid, "no"))}
	srv := httptest.NewServer(transport.NewHTTPHandler(f, &transport.HTTPOptions{BasePath: "/api/"}))
	defer srv.Close()
	for _, tc := range []struct {
		header, value, scheme, token string
	}{
		{"Authorization", "Bearer abc", protocol.SchemeBearer, "abc"},
		{"X-MangleCP-API-Key", "k1", protocol.SchemeAPIKey, "k1"},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/api/invoke", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(tc.header, tc.value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if f.got == nil || f.got.Credentials == nil || f.got.Credentials.Scheme != tc.scheme || f.got.Credentials.Token != tc.token || f.got.Expect != protocol.TypeInvokeRequest {
			t.Errorf("%s: handler got %+v", tc.header, f.got)
		}
	}
}

type authFake struct {
	fake
	auth bool
}

func (a *authFake) AuthRequired() bool { return a.auth }

func TestCORS(t *testing.T) {
	for _, tc := range []struct {
		name      string
		auth      bool
		origins   []string
		origin    string
		wantAllow string
	}{
		{"listed origin", true, []string{"https://app.example"}, "https://app.example", "https://app.example"},
		{"unlisted origin", false, []string{"https://app.example"}, "https://evil.example", ""},
		{"wildcard without auth", false, []string{"*"}, "https://any.example", "*"},
		{"wildcard with auth is never *", true, []string{"*"}, "https://any.example", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &authFake{fake: fake{reply: protocol.ErrorEnvelope("", protocol.Errorf(protocol.CodeAuthRequired, "x"))}, auth: tc.auth}
			srv := httptest.NewServer(transport.NewHTTPHandler(h, &transport.HTTPOptions{AllowedOrigins: tc.origins}))
			defer srv.Close()
			pre, _ := http.NewRequest(http.MethodOptions, srv.URL+"/manglecp/evaluate", nil)
			pre.Header.Set("Origin", tc.origin)
			pre.Header.Set("Access-Control-Request-Method", "POST")
			resp, err := http.DefaultClient.Do(pre)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.wantAllow {
				t.Errorf("preflight Allow-Origin %q, want %q", got, tc.wantAllow)
			}
			if tc.wantAllow != "" && (resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")) {
				t.Errorf("preflight %d %v", resp.StatusCode, resp.Header)
			}
			get, _ := http.NewRequest(http.MethodGet, srv.URL+transport.ManifestPath, nil)
			get.Header.Set("Origin", tc.origin)
			resp, err = http.DefaultClient.Do(get)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.wantAllow {
				t.Errorf("GET Allow-Origin %q, want %q", got, tc.wantAllow)
			}
		})
	}
}

func TestIfNoneMatch(t *testing.T) {
	srv := httptest.NewServer(transport.NewHTTPHandler(&fake{}, nil))
	defer srv.Close()
	for header, want := range map[string]int{`"v1"`: 304, `"x", "v1"`: 304, `W/"v1"`: 304, `*`: 304, `"x"`: 200, ``: 200} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+transport.ManifestPath, nil)
		if header != "" {
			req.Header.Set("If-None-Match", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("If-None-Match %q: %d, want %d", header, resp.StatusCode, want)
		}
	}
}
