package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestClientAddr: the client of a request from a trusted proxy is the
// right-most address of the configured header that is not a trusted
// proxy; headers from anyone else, and the header not configured, are
// ignored (issue 26 item 4).
func TestClientAddr(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", " 192.0.2.1 ", "", "2001:db8:ffff::/48"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		header  string // ForwardedHeader; "" is X-Forwarded-For
		remote  string
		headers map[string][]string
		want    string // RemoteAddr next sees
	}{
		{"no header from a proxy", "", "10.0.0.2:5000", nil, "10.0.0.2:5000"},
		{"nginx appends the client", "", "10.0.0.2:5000",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7:0"},
		{"the client's own entries are left of it", "", "10.0.0.2:5000",
			map[string][]string{"X-Forwarded-For": {"1.1.1.1, 2.2.2.2, 203.0.113.7"}}, "203.0.113.7:0"},
		{"chain of trusted proxies", "", "10.0.0.2:5000",
			map[string][]string{"X-Forwarded-For": {"6.6.6.6, 203.0.113.7, 10.9.9.9", "192.0.2.1"}}, "203.0.113.7:0"},
		{"all hops trusted: the left-most", "", "10.0.0.2:5000",
			map[string][]string{"X-Forwarded-For": {"10.1.1.1, 10.2.2.2"}}, "10.1.1.1:0"},
		{"untrusted peer: header ignored", "", "198.51.100.9:5000",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "198.51.100.9:5000"},
		{"ports and brackets", "", "10.0.0.2:5000",
			map[string][]string{"X-Forwarded-For": {"[2001:db8::7]:4711"}}, "[2001:db8::7]:0"},
		{"IPv4 with port", "", "10.0.0.2:5000",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7:4711"}}, "203.0.113.7:0"},
		{"IPv4-mapped peer", "", "[::ffff:10.0.0.2]:5000",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7:0"},
		{"trusted IPv6 prefix", "", "[2001:db8:ffff:1::2]:5000",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7:0"},
		{"garbage: the nearest named hop", "", "10.0.0.2:5000",
			map[string][]string{"X-Forwarded-For": {"203.0.113.7, unknown, 10.3.3.3"}}, "10.3.3.3:0"},
		{"garbage next to the peer: unchanged", "", "10.0.0.2:5000",
			map[string][]string{"X-Forwarded-For": {"not-an-address"}}, "10.0.0.2:5000"},
		{"Forwarded not read unless configured", "", "10.0.0.2:5000",
			map[string][]string{"Forwarded": {"for=6.6.6.6"}, "X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7:0"},
		{"X-Forwarded-For not read when Forwarded is", "Forwarded", "10.0.0.2:5000",
			map[string][]string{"Forwarded": {`for=1.1.1.1, for="[2001:db8::9]:80";proto=https`}, "X-Forwarded-For": {"6.6.6.6"}}, "[2001:db8::9]:0"},
		{"Forwarded with an obfuscated node", "Forwarded", "10.0.0.2:5000",
			map[string][]string{"Forwarded": {"for=_hidden;by=10.0.0.2"}}, "10.0.0.2:5000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			h := withClientAddr(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.RemoteAddr }), trusted, tt.header)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			for k, vs := range tt.headers {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			if got != tt.want {
				t.Errorf("RemoteAddr %q, want %q", got, tt.want)
			}
		})
	}
}

// A chain of trusted hops longer than maxForwardedHops stops at the last
// hop read, whatever the client wrote further left.
func TestClientAddrBoundsHops(t *testing.T) {
	trusted, _ := ParseTrustedProxies([]string{"10.0.0.0/8"})
	var got string
	h := withClientAddr(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.RemoteAddr }), trusted, "")
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.2:1"
	r.Header.Set("X-Forwarded-For", "6.6.6.6,"+strings.Repeat("10.0.0.9,", 10000)+"10.0.0.8")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if got != "10.0.0.9:0" {
		t.Errorf("RemoteAddr %q", got)
	}
}

func TestParseTrustedProxies(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "example.com", "::ffff:10.0.0.0/104", "10.0.0.1/8/2"} {
		if _, err := ParseTrustedProxies([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	got, err := ParseTrustedProxies([]string{"10.1.2.3/8", "::1", "::ffff:192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].String() != "10.0.0.0/8" || got[1].String() != "::1/128" || got[2].String() != "192.0.2.1/32" {
		t.Errorf("parsed %v", got)
	}
}
