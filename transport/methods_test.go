package transport_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestEveryMethodOnEveryPathGetsTheRegistry: every method on every path,
// probes and metrics included, on the public listener (WithOps) and on a
// separate operations listener (NewOpsHandler), is answered with a
// registry envelope whose status is the registry's when it is not a
// success; a wrong method gets method_not_allowed (405) with an Allow
// header naming the methods that work, an unknown path not_found (404).
// Issue 26 item 13: PATCH /healthz answered 405 in plain text.
func TestEveryMethodOnEveryPathGetsTheRegistry(t *testing.T) {
	h := &guarded{}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, "manglecp_up 1\n")
	})
	ops := &transport.OpsOptions{Metrics: metrics}
	public := httptest.NewServer(transport.WithOps(h, transport.NewHTTPHandler(h, nil), ops))
	defer public.Close()
	opsOnly := httptest.NewServer(transport.NewOpsHandler(h, ops))
	defer opsOnly.Close()

	getHead := []string{http.MethodGet, http.MethodHead}
	paths := []struct {
		path    string
		allowed []string // nil: the path does not exist
		opsToo  bool     // served by the operations listener too
	}{
		{transport.HealthzPath, getHead, true},
		{transport.ReadyzPath, getHead, true},
		{transport.MetricsPath, getHead, true},
		{transport.ManifestPath, getHead, false},
		{"/manglecp/evaluate", []string{http.MethodPost}, false},
		{"/manglecp/invoke", []string{http.MethodPost}, false},
		{"/manglecp/ws", []string{http.MethodGet}, false},
		{"/manglecp/skills/known", getHead, false},
		{"/nothing/here", nil, true},
		{"/", nil, true},
	}
	methods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND"}
	for _, srv := range []struct {
		name string
		url  string
		ops  bool
	}{{"public", public.URL, false}, {"ops listener", opsOnly.URL, true}} {
		for _, p := range paths {
			allowed := p.allowed
			if srv.ops && !p.opsToo {
				continue
			}
			if srv.ops && (p.path == "/nothing/here" || p.path == "/") {
				allowed = nil
			}
			for _, m := range methods {
				t.Run(srv.name+" "+m+" "+p.path, func(t *testing.T) {
					req, _ := http.NewRequest(m, srv.url+p.path, strings.NewReader("{}"))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer secret")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					raw, _ := io.ReadAll(resp.Body)
					switch {
					case allowed == nil && resp.StatusCode != http.StatusNotFound:
						t.Errorf("status %d on a path that does not exist, want 404: %s", resp.StatusCode, raw)
					case allowed != nil && !slices.Contains(allowed, m):
						if resp.StatusCode != http.StatusMethodNotAllowed {
							t.Errorf("status %d, want 405: %s", resp.StatusCode, raw)
						}
						if got := resp.Header.Get("Allow"); got != strings.Join(allowed, ", ") {
							t.Errorf("Allow %q, want %q", got, strings.Join(allowed, ", "))
						}
					case allowed != nil && resp.StatusCode == http.StatusMethodNotAllowed:
						t.Errorf("405 for an allowed method: %s", raw)
					}
					if resp.StatusCode < 300 {
						return // answers: probes, manifest, metrics
					}
					if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
						t.Errorf("Content-Type %q: %.200s", ct, raw)
					}
					if m == http.MethodHead {
						return // no body
					}
					e := decodeError(t, raw)
					if e.Code.HTTPStatus() != resp.StatusCode {
						t.Errorf("code %s has registry status %d, answered %d", e.Code, e.Code.HTTPStatus(), resp.StatusCode)
					}
					want := map[int]protocol.Code{404: protocol.CodeNotFound, 405: protocol.CodeMethodNotAllowed}[resp.StatusCode]
					if want != "" && e.Code != want {
						t.Errorf("code %s, want %s", e.Code, want)
					}
				})
			}
		}
	}
}
