package manglecp

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/manglecp/manglecp/protocol"
)

// metrics are the server's Prometheus collectors. A nil *metrics (metrics
// off) accepts every call and does nothing.
type metrics struct {
	requests      *prometheus.CounterVec
	evalSeconds   prometheus.Histogram
	invokeSeconds prometheus.Histogram
	gas           prometheus.Histogram
	macroLookups  *prometheus.CounterVec
	macroBytes    prometheus.Counter
	inflight      prometheus.Gauge
	sessions      prometheus.Gauge
	reloads       *prometheus.CounterVec
	storeErrors   *prometheus.CounterVec
	auths         *prometheus.CounterVec
}

// latencyBuckets span 1 ms to about 30 s (max_compute_ms defaults to 30 s).
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2.5, 12)

func newMetrics(reg prometheus.Registerer, s *Server) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "manglecp_requests_total",
			Help: "Requests answered, by message type, transport and outcome (ok or the registry error code)."},
			[]string{"type", "transport", "code"}),
		evalSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "manglecp_evaluation_duration_seconds",
			Help: "Time to answer intent requests (decode, evaluate, render, store).", Buckets: latencyBuckets}),
		invokeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "manglecp_invocation_duration_seconds",
			Help: "Time to answer invoke requests, action included.", Buckets: latencyBuckets}),
		gas: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "manglecp_evaluation_gas_facts",
			Help:    "Facts derived per successful evaluation (the gas the created-facts limit bounds).",
			Buckets: prometheus.ExponentialBuckets(10, 4, 9)}),
		macroLookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "manglecp_macro_cache_lookups_total",
			Help: "Macro-tool lookups on invoke: hit, miss (unknown, evicted, expired), rejected (a stored record that does not authenticate or has an unknown version; answered macro_not_found) or error (store failed)."},
			[]string{"result"}),
		macroBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "manglecp_macro_cache_stored_bytes_total",
			Help: "Bytes of macro-tool definitions written to the store."}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "manglecp_inflight_requests",
			Help: "Requests being handled now."}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "manglecp_sessions",
			Help: "Open session connections (WebSocket, stdio)."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "manglecp_rule_reloads_total",
			Help: "Rule reloads by outcome (ok or failed)."}, []string{"outcome"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "manglecp_store_errors_total",
			Help: "Failed operations of the shared state store, by operation."}, []string{"op"}),
		auths: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "manglecp_authentications_total",
			Help: "Credential checks while authentication is required (one per request), by result: ok or the registry error code."}, []string{"result"}),
	}
	cs := []prometheus.Collector{m.requests, m.evalSeconds, m.invokeSeconds, m.gas, m.macroLookups, m.macroBytes,
		m.inflight, m.sessions, m.reloads, m.storeErrors, m.auths}
	cs = append(cs,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "manglecp_macro_cache_entries",
			Help: "Macro-tools this process keeps decoded (with a shared store, in front of it)."}, func() float64 { n, _ := s.macros.Stats(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "manglecp_macro_cache_bytes",
			Help: "Bytes of the macro-tools this process keeps decoded."}, func() float64 { _, b := s.macros.Stats(); return float64(b) }))
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Pre-create the common series so dashboards see zeros, not gaps.
	for _, r := range []string{"hit", "miss", "rejected", "error"} {
		m.macroLookups.WithLabelValues(r)
	}
	for _, o := range []string{"ok", "failed"} {
		m.reloads.WithLabelValues(o)
	}
	for _, op := range storeOps {
		m.storeErrors.WithLabelValues(op)
	}
	return m, nil
}

func (m *metrics) inflightAdd(d float64) {
	if m != nil {
		m.inflight.Add(d)
	}
}

func (m *metrics) macroLookup(result string) {
	if m != nil {
		m.macroLookups.WithLabelValues(result).Inc()
	}
}

func (m *metrics) macroStored(n int) {
	if m != nil {
		m.macroBytes.Add(float64(n))
	}
}

func (m *metrics) reload(outcome string) {
	if m != nil {
		m.reloads.WithLabelValues(outcome).Inc()
	}
}

// storeOps are the operations of the shared state store whose failures
// are counted (storeError's op): their series exist at zero from the
// start, so an alert on manglecp_store_errors_total has a series to watch
// before the first failure.
var storeOps = []string{"get_macro", "put_macros", "rate_limit"}

// authentication counts one credential check: ok, or the error's code.
func (m *metrics) authentication(err *protocol.Error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = string(err.Code)
	}
	m.auths.WithLabelValues(result).Inc()
}

func (m *metrics) storeError(op string) {
	if m != nil {
		m.storeErrors.WithLabelValues(op).Inc()
	}
}

// SessionOpened counts an open session connection (WebSocket or stdio) in
// the metrics; call the returned function when it closes.
func (s *Server) SessionOpened() (closed func()) {
	if !s.loaded.Load() || s.metrics == nil { // booting: no metrics yet
		return noEnd
	}
	s.metrics.sessions.Inc()
	return func() { s.metrics.sessions.Dec() }
}

// finishRequest is the single place a request is accounted for: the
// access log line, the metrics and the end of its span.
func (s *Server) finishRequest(ctx context.Context, span trace.Span, in *protocol.Inbound, out *protocol.Envelope, rec *requestInfo, took time.Duration) {
	code := "ok"
	if out.Type == protocol.TypeError {
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(out.Payload, &p)
		code = p.Code
	}
	typ := rec.typ
	switch typ {
	case protocol.TypeIntentRequest, protocol.TypeInvokeRequest, protocol.TypeAuthenticate:
	case "":
		typ = "undecoded"
	default:
		typ = "other" // bounded label values: the type comes from the client
	}
	transport := transportFrom(ctx)
	if m := s.metrics; m != nil {
		m.requests.WithLabelValues(string(typ), transport, code).Inc()
		switch typ {
		case protocol.TypeIntentRequest:
			m.evalSeconds.Observe(took.Seconds())
			if r, ok := rec.resp.(*protocol.IntentResponse); ok && r.Diagnostics != nil {
				m.gas.Observe(float64(r.Diagnostics.FactsDerived))
			}
		case protocol.TypeInvokeRequest:
			m.invokeSeconds.Observe(took.Seconds())
		}
	}
	endRequest(span, rec, code, len(out.Payload))
	if s.log.Enabled(ctx, slog.LevelInfo) {
		identity := rec.identity
		if identity == "" {
			identity = "-"
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, "request",
			slog.String("request_id", rec.id),
			slog.String("log_id", rec.logID),
			slog.String("identity", identity),
			slog.String("type", string(typ)),
			slog.String("transport", transport),
			slog.String("code", code),
			slog.Float64("duration_ms", float64(took.Microseconds())/1000),
			slog.Int("bytes_in", len(in.Data)),
			slog.Int("bytes_out", len(out.Payload)))
	}
}
