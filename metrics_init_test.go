package manglecp_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMetricsExistAtZero: before any traffic, a scrape already has the
// store-error series (one per store operation the server counts) and the
// other labelled counters' common series, at zero, so an alert has a
// series to watch before the first failure (issue 29:
// manglecp_store_errors_total was absent until the first error).
func TestMetricsExistAtZero(t *testing.T) {
	h, _ := opsHarness(t, nil)
	_, body := get(t, h.http.URL+"/metrics")
	// Every op the server counts, read from the source, so a new one is
	// not forgotten.
	ops := map[string]bool{}
	for _, f := range []string{"server.go", "macrostore.go", "accounting.go", "confirm.go", "store.go", "invoke.go", "evaluate.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, m := range regexp.MustCompile(`[sS]toreError\("([a-z_]+)"\)`).FindAllStringSubmatch(string(src), -1) {
			ops[m[1]] = true
		}
	}
	if len(ops) == 0 {
		t.Fatal("found no storeError call in the source")
	}
	for op := range ops {
		if want := `manglecp_store_errors_total{op="` + op + `"} 0`; !strings.Contains(body, want) {
			t.Errorf("no %s before traffic", want)
		}
	}
	for _, want := range []string{`manglecp_rule_reloads_total{outcome="failed"} 0`, `manglecp_macro_cache_lookups_total{result="error"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s before traffic", want)
		}
	}
}
