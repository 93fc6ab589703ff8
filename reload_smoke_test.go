package manglecp_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
)

// browserRulesWith returns the browser domain's rules plus extra files.
func browserRulesWith(t *testing.T, extra map[string]string) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(browser.Rules(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(browser.Rules(), p)
		out[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range extra {
		out[name] = &fstest.MapFile{Data: []byte(src)}
	}
	return out
}

// TestSamplesPassOnShippedRules: the browser domain's sample requests
// evaluate on its rules, and each selects tools, so they reach the rules
// the way real requests do.
func TestSamplesPassOnShippedRules(t *testing.T) {
	h := newHarness(t, nil, nil)
	if err := h.srv.CheckSamples(context.Background()); err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(browser.Samples(), "*.json")
	if err != nil || len(names) < 3 {
		t.Fatalf("samples %v, %v; want one per intent", names, err)
	}
	for _, name := range names {
		raw, _ := fs.ReadFile(browser.Samples(), name)
		r := h.post("/manglecp/evaluate", raw, nil)
		if p := r.intentResponse(t); len(p.MacroTools) == 0 {
			t.Errorf("%s selects no tool", name)
		}
	}
}

// TestReloadRunsSamples: a reload whose rules load but fail the domain's
// sample requests (a string compared with >, an unbounded recursion) is
// rejected: the old rules keep serving, the status is degraded with a
// public reason naming the sample and the code (no rule text, no file),
// the log has the cause. Fixed rules bring ready back. Rules the lint
// can see fail already at load, with file and line.
func TestReloadRunsSamples(t *testing.T) {
	tests := []struct {
		name     string
		extra    string
		wantCode protocol.Code // "" means: rejected at load
		wantLog  string
	}{
		{
			// The comparison is on a derived string: only evaluation shows it.
			name:     "string compared with > in a derived predicate",
			extra:    "level_text(M) :- console_error(_, M, _).\nloud(1) :- level_text(M), M > 3.\n",
			wantCode: protocol.CodeEvaluationFailed,
			wantLog:  "is not a number",
		},
		{
			// The bound never holds: the recursion derives a new fact each round.
			name:     "unbounded recursion behind a bound that always holds",
			extra:    "tick(0) :- current_url(_).\ntick(M) :- tick(N), N >= 0, M = fn:plus(N, 1).\n",
			wantCode: protocol.CodeDerivationLimitExceeded,
			wantLog:  "derivation_limit_exceeded",
		},
		{
			name:    "string constant compared with >",
			extra:   "\nloud(1) :- console_error(_, _, T), T > \"soon\".\n",
			wantLog: "domain/zz.mg:2",
		},
		{
			name:    "unbounded recursion",
			extra:   "tick(0) :- current_url(_).\ntick(M) :- tick(N), M = fn:plus(N, 1).\n",
			wantLog: "domain/zz.mg:2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil, func(o *manglecp.Options) { o.Limits.MaxDerivedFacts = 5000 })
			start := time.Now()
			err := h.srv.Reload(browserRulesWith(t, map[string]string{"domain/zz.mg": tt.extra}))
			took := time.Since(start)
			if err == nil {
				t.Fatal("Reload accepted rules that fail every sample request")
			}
			var se *manglecp.SampleError
			switch {
			case tt.wantCode == "" && errors.As(err, &se):
				t.Errorf("want a load error with file and line, got %v", err)
			case tt.wantCode != "" && (!errors.As(err, &se) || se.Code != tt.wantCode):
				t.Errorf("want a sample failing with %s, got %v", tt.wantCode, err)
			}
			m := h.srv.Manifest()
			reason, _ := m.Extensions["x-degraded_reason"].(string)
			if m.Status != protocol.StatusDegraded || reason == "" {
				t.Errorf("status %s, reason %q; want degraded with a reason", m.Status, reason)
			}
			for _, leak := range []string{".mg", ":-", "level_text", "tick", "not a number"} {
				if strings.Contains(reason, leak) {
					t.Errorf("public reason leaks %q: %s", leak, reason)
				}
			}
			if tt.wantCode != "" && !strings.Contains(reason, string(tt.wantCode)) {
				t.Errorf("reason %q does not name %s", reason, tt.wantCode)
			}
			if !strings.Contains(h.logs.String(), tt.wantLog) {
				t.Errorf("the log lacks %q:\n%s", tt.wantLog, h.logs.String())
			}
			// The old rules keep serving.
			if r := h.evaluate("after", diagnoseRequest()); r.status != http.StatusOK || len(r.intentResponse(t).MacroTools) == 0 {
				t.Errorf("after the rejected reload: %s", r.raw)
			}
			if err := h.srv.Reload(browser.Rules()); err != nil || h.srv.Status() != protocol.StatusReady {
				t.Errorf("reload of good rules: %v, status %s", err, h.srv.Status())
			}
			t.Logf("rejected in %v: %v", took, err)
		})
	}
}
