package manglecp_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// normalize rewrites volatile fields (durations, timestamps from the clock
// of the action) to fixed values so golden files are stable.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch k {
			case "eval_duration_ms", "duration_ms":
				x[k] = 0
			case "asserted_at":
				x[k] = "<normalized>"
			default:
				x[k] = normalize(val)
			}
		}
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
	}
	return v
}

// golden compares got (JSON) with testdata/golden/name, rewriting it under
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	pretty, err := json.MarshalIndent(normalize(v), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	pretty = append(pretty, '\n')
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pretty, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(want, pretty) {
		t.Errorf("%s differs from the golden file; got:\n%s", path, pretty)
	}
}

// exchange is a golden request/response pair with what it proves.
type exchange struct {
	Proves   string          `json:"proves"`
	Request  json.RawMessage `json:"request"`
	Status   int             `json:"status"`
	Response json.RawMessage `json:"response"`
}

func TestManifestGolden(t *testing.T) {
	h := newHarness(t, nil, nil)
	req, _ := http.NewRequest(http.MethodGet, h.http.URL+"/.well-known/manglecp/manifest.json", nil)
	r := h.do(req)
	if r.status != http.StatusOK || r.header.Get("ETag") == "" || r.header.Get("Cache-Control") == "" {
		t.Fatalf("status %d headers %v", r.status, r.header)
	}
	golden(t, "manifest.json", r.raw)

	req.Header.Set("If-None-Match", r.header.Get("ETag"))
	if r2 := h.do(req); r2.status != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", r2.status)
	}
}

// TestExchangesGolden replays the specs' example exchanges adapted to the
// default domain: Spec 05 section 7 (evaluate, then Spec 07 section 9
// invoke) and Spec 09 section 8 (fact validation error).
func TestExchangesGolden(t *testing.T) {
	h := newHarness(t, nil, nil)
	record := func(name, proves, path string, body []byte) *reply {
		t.Helper()
		r := h.post(path, body, nil)
		ex := exchange{Proves: proves, Request: body, Status: r.status, Response: r.raw}
		raw, err := json.Marshal(ex)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, name, raw)
		return r
	}
	eval := record("spec05_evaluate.json",
		"Spec 05 section 7 adapted: a failed GET followed by a TypeError selects the causal-chain tools; schemas hold the failed request ids.",
		"/manglecp/evaluate", envelope(t, "intent_request", "req-001", diagnoseRequest()))
	m := tool(t, eval.intentResponse(t), "diagnose_causal_chain")
	record("spec07_invoke.json",
		"Spec 07 section 9 adapted: invoking diagnose_causal_chain traces r42 to the TypeError and returns a state delta and next steps.",
		"/manglecp/invoke", envelope(t, "invoke_request", "inv-001", map[string]any{
			"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42", "include_network": true}, "eval_time": "2026-02-19T14:30:10Z"}))
	record("spec09_invalid_facts.json",
		"Spec 09 section 8: every violation of the request is reported at once with its fact index.",
		"/manglecp/evaluate", []byte(`{"type":"intent_request","id":"req-bad","manglecp":"2026-02-draft","payload":{"intent":{"name":"observe"},"facts":[{"pred":"current_url","args":["https://example.com"]},{"pred":"console_event","args":["s1","error","TypeError"]},{"pred":"_manglecp_internal","args":["hack"]}]}}`))
}
