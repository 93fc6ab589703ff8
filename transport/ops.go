package transport

import (
	"encoding/json"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"

	"github.com/manglecp/manglecp/protocol"
)

// Paths of the operations endpoints.
const (
	HealthzPath = "/healthz"
	ReadyzPath  = "/readyz"
	MetricsPath = "/metrics"
)

// OpsOptions configure [WithOps] and [NewOpsHandler].
type OpsOptions struct {
	// Metrics, when set, is served at MetricsPath (for example
	// promhttp.HandlerFor(registry, promhttp.HandlerOpts{})).
	Metrics http.Handler
	// BasePath is the base of the MangleCP endpoints (default "/manglecp"),
	// to tell WebSocket sessions from HTTP requests.
	BasePath string
	// SessionOpened, when set, is called as each WebSocket session opens,
	// and the function it returns as the session ends (e.g. the server's
	// session gauge, manglecp.Server.SessionOpened).
	SessionOpened func() (closed func())
}

// WithOps wraps next (a [NewHTTPHandler]) for operation behind load
// balancers and in Kubernetes:
//
//   - GET /healthz answers 200 while the process serves (liveness).
//   - GET /readyz answers 200 only while the status is "ready", else 503
//     with the registry's server_not_ready envelope (readiness).
//   - GET /metrics serves opts.Metrics, when set.
//   - A W3C trace context (traceparent, tracestate) on a request becomes
//     the parent of the server's spans.
//   - Each request's context names its transport ("http" or "ws"), and
//     WebSocket sessions are counted while open (opts.SessionOpened).
func WithOps(h Handler, next http.Handler, opts *OpsOptions) http.Handler {
	o := OpsOptions{}
	if opts != nil {
		o = *opts
	}
	base := strings.TrimSuffix(o.BasePath, "/")
	if base == "" {
		base = "/manglecp"
	}
	ops := NewOpsHandler(h, &o)
	prop := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case HealthzPath, ReadyzPath:
			ops.ServeHTTP(w, r)
			return
		case MetricsPath:
			if o.Metrics != nil {
				ops.ServeHTTP(w, r)
				return
			}
		}
		ctx := r.Context()
		if r.Header.Get("traceparent") != "" {
			ctx = prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
		}
		if r.URL.Path == base+"/ws" {
			ctx = protocol.WithTransport(ctx, "ws")
			if o.SessionOpened != nil && r.Header.Get("Upgrade") != "" {
				defer o.SessionOpened()()
			}
		} else {
			ctx = protocol.WithTransport(ctx, "http")
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// NewOpsHandler serves only the operations endpoints (/healthz, /readyz
// and, when set, /metrics), for a separate listener (--metrics-addr). They
// answer GET and HEAD; other methods get the registry's method_not_allowed
// envelope with an Allow header, unknown paths not_found.
func NewOpsHandler(h Handler, opts *OpsOptions) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthzPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(`{"status":"alive"}` + "\n"))
	})
	mux.HandleFunc("GET "+ReadyzPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		payload, _ := h.ManifestJSON()
		var m struct {
			Status protocol.Status `json:"status"`
		}
		_ = json.Unmarshal(payload, &m)
		if m.Status != protocol.StatusReady {
			if m.Status == "" {
				m.Status = "unknown"
			}
			writeError(w, "", protocol.Errorf(protocol.CodeServerNotReady, "the server is %s", m.Status).WithRetryAfter(1000))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ready"}` + "\n"))
	})
	if opts != nil && opts.Metrics != nil {
		mux.Handle("GET "+MetricsPath, opts.Metrics)
	}
	// Wrong methods (405 with Allow) and unknown paths answer with the
	// registry's envelopes, as the MangleCP endpoints do.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(&envelopeGuard{ResponseWriter: w}, r)
	})
}
