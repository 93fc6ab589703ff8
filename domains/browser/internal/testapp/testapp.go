// Package testapp holds the small web apps the browser domain's tests
// drive in real Chromium, shared by the chrome package's tests and the
// domain's.
package testapp

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Login is the two-page app of issue 28: a login form whose Sign in
// sets a cookie and redirects to a dashboard, which shows its table only
// with the cookie (and sends the visitor back to the form without it).
func Login(t testing.TB) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><head><title>Sign in</title></head><body>
<form method="post" action="/login">
  <label for="email">Email</label> <input id="email" name="email" type="email">
  <label for="password">Password</label> <input id="password" name="password" type="password">
  <button id="signin" type="submit">Sign in</button>
</form></body></html>`))
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("email") != "ada@example.com" || r.FormValue("password") != "s3cret" {
			http.Redirect(w, r, "/?error=1", http.StatusSeeOther)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "ada", Path: "/", HttpOnly: true})
		http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie("sid"); err != nil || c.Value != "ada" {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><head><title>Dashboard</title></head><body>
<h1>Dashboard</h1><table><tr><th>Region</th><th>Revenue</th></tr><tr><td>North</td><td>4,210</td></tr></table>
</body></html>`))
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}
