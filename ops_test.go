package manglecp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// opsHarness serves a server with metrics and tracing behind WithOps.
func opsHarness(t *testing.T, mut func(*manglecp.Options)) (*harness, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	h := newHarness(t, nil, func(o *manglecp.Options) {
		o.Metrics = reg
		if mut != nil {
			mut(o)
		}
	})
	h.http.Config.Handler = transport.WithOps(h.srv, transport.NewHTTPHandler(h.srv, nil),
		&transport.OpsOptions{Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), SessionOpened: h.srv.SessionOpened})
	return h, reg
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestMetricsCountTraffic scrapes /metrics after traffic: request counters
// by type, transport and code, latency and gas histograms and cache
// lookups moved; every request left one access log line.
func TestMetricsCountTraffic(t *testing.T) {
	h, _ := opsHarness(t, nil)
	m := tool(t, h.evaluate("e1", diagnoseRequest()).intentResponse(t), "diagnose_causal_chain")
	h.invoke("i1", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}}).invokeResponse(t)
	h.invoke("i2", map[string]any{"macro_id": "nope-0000", "args": map[string]any{}}).errorPayload(t)

	// A WebSocket session counts while open, and its requests count as "ws".
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.http.URL, "http")+"/manglecp/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if _, _, err := ws.Read(ctx); err != nil { // the manifest
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageText, envelope(t, protocol.TypeIntentRequest, "w1", diagnoseRequest())); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.Read(ctx); err != nil {
		t.Fatal(err)
	}

	status, body := get(t, h.http.URL+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d", status)
	}
	for _, want := range []string{
		`manglecp_requests_total{code="ok",transport="http",type="intent_request"} 1`,
		`manglecp_requests_total{code="ok",transport="http",type="invoke_request"} 1`,
		`manglecp_requests_total{code="macro_not_found",transport="http",type="invoke_request"} 1`,
		`manglecp_requests_total{code="ok",transport="ws",type="intent_request"} 1`,
		`manglecp_evaluation_duration_seconds_count 2`,
		`manglecp_invocation_duration_seconds_count 2`,
		`manglecp_evaluation_gas_facts_count 2`,
		`manglecp_macro_cache_lookups_total{result="hit"} 1`,
		`manglecp_macro_cache_lookups_total{result="miss"} 1`,
		`manglecp_inflight_requests 0`,
		`manglecp_rule_reloads_total{outcome="ok"} 0`,
		`manglecp_sessions 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "manglecp_macro_cache_bytes 0\n") || !strings.Contains(body, "manglecp_macro_cache_bytes ") {
		t.Errorf("cache bytes not reported or zero:\n%s", body)
	}

	var lines []map[string]any
	for _, l := range strings.Split(h.logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "request" {
			lines = append(lines, rec)
		}
	}
	if len(lines) != 4 {
		t.Fatalf("%d access log lines, want 4:\n%s", len(lines), h.logs.String())
	}
	for _, k := range []string{"request_id", "identity", "type", "code", "duration_ms", "bytes_in", "bytes_out", "transport"} {
		if _, ok := lines[2][k]; !ok {
			t.Errorf("access log line lacks %s: %v", k, lines[2])
		}
	}
	if lines[2]["request_id"] != "i2" || lines[2]["code"] != "macro_not_found" || lines[2]["identity"] != "anonymous" || lines[2]["level"] != "INFO" {
		t.Errorf("access log line %v", lines[2])
	}
}

// TestHealthAndReadiness: /healthz answers while the process runs;
// /readyz only while the status is ready, else 503 with the registry
// envelope.
func TestHealthAndReadiness(t *testing.T) {
	h, _ := opsHarness(t, nil)
	if status, body := get(t, h.http.URL+"/healthz"); status != http.StatusOK || !strings.Contains(body, "alive") {
		t.Errorf("/healthz: %d %s", status, body)
	}
	if status, _ := get(t, h.http.URL+"/readyz"); status != http.StatusOK {
		t.Errorf("/readyz while ready: %d", status)
	}
	h.srv.SetDegraded("testing")
	if status, _ := get(t, h.http.URL+"/readyz"); status != http.StatusServiceUnavailable {
		t.Errorf("/readyz while degraded: %d", status)
	}
	h.srv.Drain()
	status, body := get(t, h.http.URL+"/readyz")
	var env protocol.Envelope
	_ = json.Unmarshal([]byte(body), &env)
	if status != http.StatusServiceUnavailable || env.Type != protocol.TypeError || !strings.Contains(string(env.Payload), `"server_not_ready"`) {
		t.Errorf("/readyz while draining: %d %s", status, body)
	}
	if status, _ := get(t, h.http.URL+"/healthz"); status != http.StatusOK {
		t.Errorf("/healthz while draining: %d", status)
	}
}

// TestTraceSpans: with a tracer provider, an evaluation and an invocation
// produce a request span each, under the W3C trace context the client
// sent, with decode, kernel, render, store and action children.
func TestTraceSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	h, _ := opsHarness(t, func(o *manglecp.Options) { o.TracerProvider = tp })

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	post := func(path string, body []byte) *reply {
		req, _ := http.NewRequest(http.MethodPost, h.http.URL+path, bytesReader(body))
		req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
		req.Header.Set("Content-Type", "application/json")
		return h.do(req)
	}
	m := tool(t, post("/manglecp/evaluate", envelope(t, protocol.TypeIntentRequest, "e", diagnoseRequest())).intentResponse(t), "diagnose_causal_chain")
	post("/manglecp/invoke", envelope(t, protocol.TypeInvokeRequest, "i", map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}})).invokeResponse(t)

	spans := exp.GetSpans()
	byName := map[string]int{}
	requestSpans := map[string]bool{}
	for _, s := range spans {
		byName[s.Name]++
		if s.SpanContext.TraceID().String() != traceID {
			t.Errorf("span %s in trace %s, want the client's %s", s.Name, s.SpanContext.TraceID(), traceID)
		}
		if s.Name == "manglecp.request" {
			requestSpans[s.SpanContext.SpanID().String()] = true
			if s.Parent.SpanID().String() != "00f067aa0ba902b7" || !s.Parent.IsRemote() {
				t.Errorf("request span parent %s", s.Parent.SpanID())
			}
		}
	}
	want := map[string]int{"manglecp.request": 2, "manglecp.decode": 2, "manglecp.evaluate": 1, "manglecp.render": 1,
		"manglecp.store.put_macros": 1, "manglecp.store.get_macro": 1, "manglecp.action": 1}
	for name, n := range want {
		if byName[name] != n {
			t.Errorf("%d %s spans, want %d (all: %v)", byName[name], name, n, byName)
		}
	}
	for _, s := range spans {
		if s.Name == "manglecp.decode" || s.Name == "manglecp.evaluate" || s.Name == "manglecp.action" {
			if !requestSpans[s.Parent.SpanID().String()] {
				t.Errorf("%s is not a child of a request span", s.Name)
			}
		}
	}
}
