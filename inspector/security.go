package inspector

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// contentSecurityPolicy allows the page's own files only: no inline
// script, no outside connection, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// protect wraps every response: the Host check against DNS rebinding, the
// refusal of cross-origin requests and CORS preflights, and the security
// headers.
func (in *Inspector) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if !in.hostAllowed(r.Host) {
			http.Error(w, "inspector: unexpected Host header", http.StatusMisdirectedRequest)
			return
		}
		if r.Method == http.MethodOptions {
			// No CORS: a preflight gets no Access-Control-* header.
			http.Error(w, "inspector: cross-origin requests are not served", http.StatusForbidden)
			return
		}
		if !sameOrigin(r) {
			http.Error(w, "inspector: cross-origin requests are not served", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host header names this inspector.
func (in *Inspector) hostAllowed(hostport string) bool {
	if len(in.opts.AllowedHosts) > 0 {
		for _, a := range in.opts.AllowedHosts {
			if strings.EqualFold(a, hostport) {
				return true
			}
			if h, _, err := net.SplitHostPort(hostport); err == nil && strings.EqualFold(a, h) {
				return true
			}
		}
		return false
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return isLoopbackHost(host)
}

// sameOrigin refuses requests a browser sends on behalf of another site:
// an Origin header other than the page's own, or Sec-Fetch-Site
// cross-site.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	return origin == "http://"+r.Host || origin == "https://"+r.Host
}

// guard requires the session token on an API call.
func (in *Inspector) guard(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get(TokenHeader)
		if subtle.ConstantTimeCompare([]byte(got), []byte(in.token)) != 1 {
			writeJSON(w, http.StatusForbidden, apiError{Error: "missing or wrong session token: open the URL that manglecp inspect printed"})
			return
		}
		next(w, r)
	}
}

// handleAsset serves the embedded page.
func (in *Inspector) handleAsset(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	if name == "" {
		name = "index.html"
	}
	types := map[string]string{
		"index.html":  "text/html; charset=utf-8",
		"app.js":      "text/javascript; charset=utf-8",
		"style.css":   "text/css; charset=utf-8",
		"favicon.svg": "image/svg+xml",
	}
	ct, ok := types[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := readAsset(in.assets, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ct)
	if name == "index.html" {
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
	}
	_, _ = w.Write(body)
}
