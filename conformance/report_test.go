package conformance_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/conformance"
)

// TestCatalogue: IDs are unique and named after their category, every
// check cites a spec section and a level, and the eight categories of
// Spec 10 section 6.1 all have checks.
func TestCatalogue(t *testing.T) {
	spec := regexp.MustCompile(`^Spec (0[1-9]|10) \d+(\.\d+)*$`)
	seen := map[string]bool{}
	perCategory := map[string]int{}
	for _, c := range conformance.Catalogue() {
		if seen[c.ID] {
			t.Errorf("duplicate check %s", c.ID)
		}
		seen[c.ID] = true
		if !strings.HasPrefix(c.ID, c.Category+".") {
			t.Errorf("%s is in category %s", c.ID, c.Category)
		}
		if !spec.MatchString(c.Spec) {
			t.Errorf("%s cites %q", c.ID, c.Spec)
		}
		if c.Level < 1 || c.Level > 3 {
			t.Errorf("%s has level %d", c.ID, c.Level)
		}
		if c.Title == "" {
			t.Errorf("%s has no title", c.ID)
		}
		switch c.Transport {
		case "", "http", "websocket", "stdio", "session":
		default:
			t.Errorf("%s: transport %q", c.ID, c.Transport)
		}
		perCategory[c.Category]++
	}
	for _, cat := range conformance.Categories() {
		if perCategory[cat] == 0 {
			t.Errorf("category %s has no check", cat)
		}
		delete(perCategory, cat)
	}
	for cat := range perCategory {
		t.Errorf("category %s is not one of Spec 10 section 6.1", cat)
	}
	for _, id := range []string{"evaluation.determinism", "evaluation.gas"} {
		if !seen[id] {
			t.Errorf("the catalogue lacks %s", id)
		}
	}
}

func sampleReport() *conformance.Report {
	return &conformance.Report{
		Target: "http://127.0.0.1:8080", Transport: "http", Server: "manglecp-go 0.1.0", Protocol: "2026-02-draft",
		DeclaredLevel: 3, Level: 3, Fixture: "browser", DurationMS: 1234,
		Checks: []conformance.Check{
			{ID: "manifest.delivered", Category: "manifest", Spec: "Spec 04 2", Level: 1, Title: "the manifest is delivered", Status: conformance.Pass, Detail: "fine"},
			{ID: "errors.http_status", Category: "errors", Spec: "Spec 02 4.2", Level: 1, Title: "registry statuses", Status: conformance.Fail, Detail: "errors.invalid_type: invalid_type came with HTTP 500,\nthe registry says 400"},
			{ID: "security.cors", Category: "security", Spec: "Spec 02 4.2", Level: 1, Title: "no wildcard", Status: conformance.Skip, Detail: "auth.required is false"},
		},
		Summary: conformance.Summary{Pass: 1, Fail: 1, Skip: 1, Total: 3},
	}
}

// TestReportFormat: one line per check with status, ID, spec section and
// level; the detail of FAIL and SKIP on one line below; the summary last.
func TestReportFormat(t *testing.T) {
	out := sampleReport().Format()
	for _, want := range []string{
		"against http://127.0.0.1:8080 over http",
		"declared level 3, checked at level 3, fixture browser",
		"PASS  manifest.delivered",
		"FAIL  errors.http_status",
		"Spec 02 4.2",
		"L1",
		"invalid_type came with HTTP 500, the registry says 400",
		"SKIP  security.cors",
		"3 checks: 1 PASS, 1 FAIL, 1 SKIP (1.2s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Format lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "fine") {
		t.Errorf("Format shows the detail of a PASS:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], "3 checks") {
		t.Errorf("the summary is not last: %q", lines[len(lines)-1])
	}
}

// TestReportJSON: the JSON form round-trips and uses the documented keys.
func TestReportJSON(t *testing.T) {
	r := sampleReport()
	raw, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"target"`, `"transport"`, `"declared_level"`, `"checks"`, `"summary"`, `"status": "FAIL"`, `"spec": "Spec 02 4.2"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("JSON lacks %s:\n%s", key, raw)
		}
	}
	var back conformance.Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Summary != r.Summary || len(back.Checks) != 3 || back.Checks[1].Status != conformance.Fail {
		t.Errorf("round trip: %+v", back)
	}
	if r.OK() || len(r.Failed()) != 1 || r.Check("security.cors") == nil || r.Check("nope") != nil {
		t.Error("OK, Failed or Check")
	}
}

// TestFixtures: the built-in browser fixture loads by name and by path;
// broken fixtures are refused with the reason.
func TestFixtures(t *testing.T) {
	if got := conformance.BuiltinFixtures(); len(got) == 0 || got[0] != "browser" {
		t.Errorf("BuiltinFixtures() = %v", got)
	}
	byName, err := conformance.LoadFixture("browser")
	if err != nil {
		t.Fatal(err)
	}
	byPath, err := conformance.LoadFixture(filepath.Join("testdata", "browser.json"))
	if err != nil {
		t.Fatal(err)
	}
	if byName.Name != "browser" || byPath.Name != "browser" || byName.Evaluate == nil || byName.Invoke == nil ||
		byName.Confirmation == nil || byName.Temporal == nil || byName.Slow == nil {
		t.Errorf("browser fixture incomplete: %+v", byName)
	}
	if _, err := conformance.LoadFixture("nope"); err == nil || !strings.Contains(err.Error(), "browser") {
		t.Errorf("unknown built-in: %v", err)
	}
	bad := []struct{ name, json, want string }{
		{"unknown field", `{"name":"x","evaluate":{"intent":{"name":"i"},"facts":[]},"colour":1}`, "unknown field"},
		{"invoke without evaluate", `{"invoke":{"tool":"t","args":{}}}`, "invoke needs evaluate"},
		{"invoke without args", `{"evaluate":{"intent":{"name":"i"},"facts":[]},"invoke":{"tool":"t"}}`, "invoke.args"},
		{"temporal without outside", `{"evaluate":{"intent":{"name":"i"},"facts":[]},"temporal":{"tool":"t","inside":"x"}}`, "temporal needs"},
		{"slow without count", `{"slow":{"intent":{"name":"i"},"repeat":{"pred":"p","args":[]}}}`, "positive count"},
		{"evaluate without intent", `{"evaluate":{"facts":[]}}`, "evaluate.intent.name"},
		{"slow repeat not a template", `{"slow":{"intent":{"name":"i"},"repeat":5,"count":2}}`, "slow.repeat must be"},
		{"slow repeat an empty list", `{"slow":{"intent":{"name":"i"},"repeat":[],"count":2}}`, "slow.repeat must be"},
	}
	for _, b := range bad {
		if _, err := conformance.ParseFixture([]byte(b.json)); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v, want an error with %q", b.name, err, b.want)
		}
	}
	if _, err := conformance.ParseFixture([]byte(`{"slow":{"intent":{"name":"i"},"count":2,
		"repeat":[{"pred":"a","args":["{i}"]},{"pred":"b","args":["{i:number}"]}]}}`)); err != nil {
		t.Errorf("a list of templates: %v", err)
	}
	p := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(p, []byte(`{"evaluate":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := conformance.LoadFixture(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("a bad file: %v", err)
	}
}

// TestChecksFilter: Options.Checks selects by ID and by category.
func TestChecksFilter(t *testing.T) {
	base := serveHTTP(t, newServer(t, nil), nil, nil)
	rep := run(t, base, &conformance.Options{Checks: []string{"manifest", "errors.invalid_type"}})
	for _, c := range rep.Checks {
		if c.Category != "manifest" && c.ID != "errors.invalid_type" {
			t.Errorf("%s was not selected", c.ID)
		}
	}
	if rep.Check("errors.invalid_type") == nil || rep.Check("manifest.version") == nil || rep.Summary.Total != len(rep.Checks) {
		t.Errorf("selection: %+v", rep.Summary)
	}
}

// TestDocumentsEveryCheck: docs/conformance-suite.md has a row per check
// with its spec section and level.
func TestDocumentsEveryCheck(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "conformance-suite.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, c := range conformance.Catalogue() {
		row := fmt.Sprintf("| `%s` | %s | %d |", c.ID, c.Spec, c.Level)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/conformance-suite.md lacks the row %q", row)
		}
	}
}
