package transport

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Behind a reverse proxy every request comes from the proxy's address, so
// what limits callers by address (failed logins, anonymous rate limits)
// would hold every caller to one budget. [HTTPOptions.TrustedProxies]
// names the proxies whose forwarding header is believed; for a request from
// one of them the client is the right-most address of that header that is
// not itself a trusted proxy: the one the nearest untrusted hop handed to
// the trusted chain. Addresses further left were written by the client or
// by proxies nobody vouches for, so they are never used. A header from a
// peer that is not a trusted proxy is ignored.

// ParseTrustedProxies parses addresses and CIDR prefixes ("10.0.0.0/8",
// "192.0.2.1", "2001:db8::/32") for [HTTPOptions.TrustedProxies]; empty
// entries are skipped.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
			}
			if p.Addr().Is4In6() {
				return nil, fmt.Errorf("trusted proxy %q: write IPv4 prefixes in IPv4 form", s)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: not an address or CIDR prefix", s)
		}
		a = a.Unmap().WithZone("")
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// maxForwardedHops bounds the trusted hops read from the right of a
// forwarding header; a longer chain of trusted proxies yields the last one
// read.
const maxForwardedHops = 32

// clientAddrHandler sets r.RemoteAddr to the client's address (see
// ParseTrustedProxies) before next sees the request.
type clientAddrHandler struct {
	next    http.Handler
	trusted []netip.Prefix
	header  string
}

// withClientAddr wraps next so that requests from trusted proxies carry
// the forwarded client's address as RemoteAddr (port 0); next unchanged
// when no proxy is trusted.
func withClientAddr(next http.Handler, trusted []netip.Prefix, header string) http.Handler {
	if len(trusted) == 0 {
		return next
	}
	if header == "" {
		header = "X-Forwarded-For"
	}
	return &clientAddrHandler{next: next, trusted: trusted, header: http.CanonicalHeaderKey(header)}
}

func (h *clientAddrHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a, ok := h.client(r); ok {
		r.RemoteAddr = netip.AddrPortFrom(a, 0).String()
	}
	h.next.ServeHTTP(w, r)
}

// client returns the client's address when the direct peer is a trusted
// proxy and its header names a client; false leaves RemoteAddr as it is.
func (h *clientAddrHandler) client(r *http.Request) (netip.Addr, bool) {
	peer, ok := parseNode(r.RemoteAddr)
	if !ok || !h.isTrusted(peer) {
		return netip.Addr{}, false
	}
	current := peer // the nearest hop known so far
	lines := r.Header[h.header]
	hops := 0
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for rest != "" {
			elem := rest
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				elem, rest = rest[j+1:], rest[:j]
			} else {
				rest = ""
			}
			elem = strings.TrimSpace(elem)
			if elem == "" {
				continue
			}
			if hops++; hops > maxForwardedHops {
				return current, current != peer
			}
			if h.header == "Forwarded" {
				elem = forwardedFor(elem)
			}
			a, ok := parseNode(elem)
			if !ok {
				// "unknown", an obfuscated name, garbage: the hop that wrote
				// it is the nearest we can name.
				return current, current != peer
			}
			if !h.isTrusted(a) {
				return a, true
			}
			current = a
		}
	}
	// Every hop is trusted: the left-most is the client.
	return current, current != peer
}

func (h *clientAddrHandler) isTrusted(a netip.Addr) bool {
	for _, p := range h.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor returns the for= node of one element of an RFC 7239
// Forwarded header ("for=192.0.2.1;proto=https"), unquoted; "" when
// there is none.
func forwardedFor(elem string) string {
	for pair := range strings.SplitSeq(elem, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "for") {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}

// parseNode parses an address as proxies write it: "192.0.2.1",
// "192.0.2.1:4711", "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:4711".
// IPv4-mapped IPv6 addresses become IPv4; zones are dropped.
func parseNode(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err2 := netip.ParseAddrPort(s)
		switch {
		case err2 == nil:
			a = ap.Addr()
		case len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']':
			if a, err = netip.ParseAddr(s[1 : len(s)-1]); err != nil {
				return netip.Addr{}, false
			}
		default:
			return netip.Addr{}, false
		}
	}
	return a.Unmap().WithZone(""), true
}
