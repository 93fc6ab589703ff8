package manglecp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// authentications reads manglecp_authentications_total{result="ok"}.
func authentications(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "manglecp_authentications_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "ok" {
					return int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return 0
}

// TestOneAuthenticationPerRequest: each request is authenticated once, over
// HTTP (where the binding authenticates the headers before reading the
// body and hands the caller to the server), WebSocket and stdio; counted
// by manglecp_authentications_total.
func TestOneAuthenticationPerRequest(t *testing.T) {
	const token = "one-auth-token-0123456789"
	reg := prometheus.NewRegistry()
	h := newHarness(t, nil, func(o *manglecp.Options) {
		o.Identities = []manglecp.Identity{{Name: "ci", Token: token, Permissions: []string{"*"}}}
		o.Metrics = reg
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const requests = 3

	t.Run("http", func(t *testing.T) {
		before := authentications(t, reg)
		for i := 0; i < requests; i++ {
			r := h.post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "h", diagnoseRequest()),
				map[string]string{"Authorization": "Bearer " + token})
			if r.status != http.StatusOK {
				t.Fatalf("evaluate: %d %s", r.status, r.raw)
			}
		}
		if got := authentications(t, reg) - before; got != requests {
			t.Errorf("%d authentications for %d requests", got, requests)
		}
	})

	session := func(t *testing.T, w *sessionWire) {
		t.Helper()
		before := authentications(t, reg) // the session's credentials were checked as it opened
		for i := 0; i < requests; i++ {
			env := w.roundTrip(t, protocol.TypeIntentRequest, envelope(t, protocol.TypeIntentRequest, "s", diagnoseRequest()))
			if env.Type != protocol.TypeIntentResponse {
				t.Fatalf("evaluate: %s %s", env.Type, env.Payload)
			}
		}
		if got := authentications(t, reg) - before; got != requests {
			t.Errorf("%d authentications for %d requests", got, requests)
		}
	}

	t.Run("websocket", func(t *testing.T) {
		session(t, wsSession(t, ctx, h, http.Header{"Authorization": {"Bearer " + token}}))
	})

	t.Run("stdio", func(t *testing.T) {
		session(t, stdioSession(t, ctx, h, &transport.SessionOptions{Peer: "stdio", Credentials: &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: token}}))
	})
}
