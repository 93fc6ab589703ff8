// Package metrics is the server's Prometheus collectors: requests by
// type, transport and outcome, latencies, gas, the macro-tool cache and
// store, reloads, sessions and authentications. A nil *Metrics (metrics
// off) accepts every call and does nothing. It knows the protocol layer
// only; the server calls it from its one accounting point.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/manglecp/manglecp/protocol"
)

// Metrics are the server's Prometheus collectors. A nil *Metrics (metrics
// off) accepts every call and does nothing. It is safe for concurrent use.
type Metrics struct {
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

// New registers the collectors with reg; nil reg: metrics off (a nil
// *Metrics). decoded reports the macro-tools the process keeps decoded
// (entries and bytes), read at each scrape.
func New(reg prometheus.Registerer, decoded func() (entries int, bytes int64)) (*Metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &Metrics{
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
			Help: "Macro-tools this process keeps decoded (with a shared store, in front of it)."}, func() float64 { n, _ := decoded(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "manglecp_macro_cache_bytes",
			Help: "Bytes of the macro-tools this process keeps decoded."}, func() float64 { _, b := decoded(); return float64(b) }))
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

// InflightAdd adds d to the requests being handled.
func (m *Metrics) InflightAdd(d float64) {
	if m != nil {
		m.inflight.Add(d)
	}
}

// MacroLookup counts a macro-tool lookup on invoke: hit, miss, rejected
// or error.
func (m *Metrics) MacroLookup(result string) {
	if m != nil {
		m.macroLookups.WithLabelValues(result).Inc()
	}
}

// MacroStored counts n bytes of definitions written to the store.
func (m *Metrics) MacroStored(n int) {
	if m != nil {
		m.macroBytes.Add(float64(n))
	}
}

// Reload counts a rule reload by outcome: ok or failed.
func (m *Metrics) Reload(outcome string) {
	if m != nil {
		m.reloads.WithLabelValues(outcome).Inc()
	}
}

// storeOps are the operations of the shared state store whose failures
// are counted (StoreError's op): their series exist at zero from the
// start, so an alert on manglecp_store_errors_total has a series to watch
// before the first failure.
var storeOps = []string{"get_macro", "put_macros", "rate_limit"}

// Authentication counts one credential check: ok, or the error's code.
func (m *Metrics) Authentication(err *protocol.Error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = string(err.Code)
	}
	m.auths.WithLabelValues(result).Inc()
}

// StoreError counts a failed operation of the shared store (one of
// storeOps).
func (m *Metrics) StoreError(op string) {
	if m != nil {
		m.storeErrors.WithLabelValues(op).Inc()
	}
}

// SessionOpened counts an open session connection; call the returned
// function when it closes.
func (m *Metrics) SessionOpened() (closed func()) {
	if m == nil {
		return func() {}
	}
	m.sessions.Inc()
	return func() { m.sessions.Dec() }
}

// Request counts one answered request: its type (a bounded label: the
// server maps what the client sent to a known type, "undecoded" or
// "other"), transport and code (ok or the registry error code), its
// latency, and for an intent answer the facts derived (factsDerived < 0:
// none reported).
func (m *Metrics) Request(typ protocol.MessageType, transport, code string, took time.Duration, factsDerived int64) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(string(typ), transport, code).Inc()
	switch typ {
	case protocol.TypeIntentRequest:
		m.evalSeconds.Observe(took.Seconds())
		if factsDerived >= 0 {
			m.gas.Observe(float64(factsDerived))
		}
	case protocol.TypeInvokeRequest:
		m.invokeSeconds.Observe(took.Seconds())
	}
}
