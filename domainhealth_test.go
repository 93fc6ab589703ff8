package manglecp_test

import (
	"net/http"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestDomainHealth: a part the domain reports degraded makes the server
// degraded (manifest, /readyz) with the part's extension, whatever
// SetDegraded("") (a successful reload) says, until the part is reported
// back.
func TestDomainHealth(t *testing.T) {
	var report manglecp.HealthReport
	d := codeDomain()
	d.Extensions = map[string]any{"x-engine": map[string]any{"available": true}}
	d.Health = func(r manglecp.HealthReport) { report = r }
	h := newHarness(t, d, nil)
	h.http.Config.Handler = transport.WithOps(h.srv, transport.NewHTTPHandler(h.srv, nil), nil)
	if report == nil {
		t.Fatal("NewServer did not call Domain.Health")
	}
	report("x-engine", map[string]any{"available": false}, "the engine is restarting")
	m := h.srv.Manifest()
	x, _ := m.Extensions["x-engine"].(map[string]any)
	if m.Status != protocol.StatusDegraded || m.Extensions["x-degraded_reason"] != "the engine is restarting" || x["available"] != false {
		t.Fatalf("manifest %s %v", m.Status, m.Extensions)
	}
	if status, _ := get(t, h.http.URL+"/readyz"); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz while a part is down: %d", status)
	}
	h.srv.SetDegraded("") // e.g. a reload that worked
	if h.srv.Status() != protocol.StatusDegraded {
		t.Error("ready while a part is down")
	}
	h.srv.SetDegraded("rules reload failed")
	if got := h.srv.Manifest().Extensions["x-degraded_reason"]; got != "rules reload failed; the engine is restarting" {
		t.Errorf("reason %v", got)
	}
	h.srv.SetDegraded("")
	report("x-engine", map[string]any{"available": true}, "")
	m = h.srv.Manifest()
	x, _ = m.Extensions["x-engine"].(map[string]any)
	if m.Status != protocol.StatusReady || x["available"] != true || m.Extensions["x-degraded_reason"] != nil {
		t.Errorf("manifest after the part is back: %s %v", m.Status, m.Extensions)
	}
	if status, _ := get(t, h.http.URL+"/readyz"); status != http.StatusOK {
		t.Errorf("/readyz after the part is back: %d", status)
	}
}
