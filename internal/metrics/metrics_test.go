package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/manglecp/manglecp/protocol"
)

// TestNilAcceptsEverything: metrics off is a nil *Metrics that every call
// accepts.
func TestNilAcceptsEverything(t *testing.T) {
	m, err := New(nil, nil)
	if err != nil || m != nil {
		t.Fatalf("New(nil): %v, %v", m, err)
	}
	m.InflightAdd(1)
	m.MacroLookup("hit")
	m.MacroStored(3)
	m.Reload("ok")
	m.Authentication(nil)
	m.StoreError("get_macro")
	m.Request(protocol.TypeIntentRequest, "http", "ok", time.Millisecond, 5)
	m.SessionOpened()()
}

// value is the value of the series of family name whose labels are
// labels (name=value pairs), from a scrape of reg; ok false when absent.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// TestRequestAndZeroSeries: the common series exist at zero before any
// traffic, and a request is counted by type, transport and code, with the
// facts it derived.
func TestRequestAndZeroSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, func() (int, int64) { return 2, 100 })
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range storeOps {
		if v, ok := value(t, reg, "manglecp_store_errors_total", "op", op); !ok || v != 0 {
			t.Errorf("store errors of %s before traffic: %v %v", op, v, ok)
		}
	}
	m.Request(protocol.TypeIntentRequest, "http", "ok", time.Millisecond, 7)
	m.Request(protocol.TypeIntentRequest, "http", "ok", time.Millisecond, -1)
	m.Request(protocol.TypeInvokeRequest, "ws", "macro_not_found", time.Millisecond, -1)
	m.Authentication(protocol.Errorf(protocol.CodeAuthInvalid, "no"))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"manglecp_requests_total", []string{"type", "intent_request", "transport", "http", "code", "ok"}, 2},
		{"manglecp_requests_total", []string{"type", "invoke_request", "transport", "ws", "code", "macro_not_found"}, 1},
		{"manglecp_authentications_total", []string{"result", "auth_invalid"}, 1},
		{"manglecp_evaluation_duration_seconds", nil, 2},
		{"manglecp_invocation_duration_seconds", nil, 1},
		{"manglecp_evaluation_gas_facts", nil, 1}, // only the answer that reported facts
		{"manglecp_macro_cache_entries", nil, 2},
		{"manglecp_macro_cache_bytes", nil, 100},
	} {
		if got, ok := value(t, reg, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s %v: %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
}
