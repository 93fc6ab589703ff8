package browser_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/domains/browser/internal/testapp"
	"github.com/manglecp/manglecp/protocol"
)

// prop is the schema of one parameter of a macro-tool, as JSON.
func prop(m *protocol.MacroTool, name string) string {
	props, _ := m.InputSchema["properties"].(map[string]any)
	raw, _ := json.Marshal(props[name])
	return string(raw)
}

// TestWidgetRules: the rules offer the gallery's native form as fill_form
// parameters each in the form its kind takes (a date is one parameter
// with its format, a multiple select a list of its options), and the
// file input as upload_file's element, not a field; a value the page does not hold is an answer with ok false that
// says what the page holds.
func TestWidgetRules(t *testing.T) {
	t.Parallel()
	app := testapp.Serve(t, testapp.Dir("../gallery"))
	uploads := t.TempDir()
	if err := os.WriteFile(filepath.Join(uploads, "scan.pdf"), []byte("%PDF-1.4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j := openJob(t, browser.Config{Config: chrome.Config{UploadDir: uploads}}, app.URL, "native.html")
	form := j.offered("automate", "fill_form")
	for name, want := range map[string]string{
		"Arrival date": `"description":"A date, YYYY-MM-DD."`,
		"Arrival time": `"description":"A time, HH:MM."`,
		"Meeting":      `YYYY-MM-DDTHH:MM`,
		"Card month":   `YYYY-MM.`,
		"Week":         `YYYY-Www`,
		"Colour":       `#rrggbb`,
		"Volume":       `"description":"A number."`,
		"Extras":       `"items":{"enum":["Breakfast","Late checkout","Parking"]},"type":"array"`,
		"Meal":         `"enum":["Choose","Fish","Vegan"]`,
		"Newsletter":   `"type":"boolean"`,
		"Room":         `"enum":["Double","Single"]`,
	} {
		if got := prop(form, name); !strings.Contains(got, want) {
			t.Errorf("fill_form's %q is %s, want %s", name, got, want)
		}
	}
	for _, p := range params(form) {
		if strings.Contains(p, "Day") || strings.Contains(p, "picker") || p == "Passport scan" || p == "Single" {
			t.Errorf("fill_form offers %q", p)
		}
	}
	// The file input is upload_file's (listed, so described only when
	// asked; the call shows it works on it).
	res := j.do("automate", "upload_file", map[string]any{"element_id": "Passport scan", "files": []any{"scan.pdf"}})
	j.wantIn("the upload", result(res), `"ok":true`)
	res = j.do("automate", "fill_form", map[string]any{"Arrival date": "2026-11-30", "Extras": []any{"Parking", "Breakfast"},
		"Volume": "14", "Room": "Single", "submit": "Book"})
	j.wantIn("the booking", result(res), "Booked 2026-11-30")

	// A value the page does not take: ok false, what the page holds, not
	// submitted.
	m := j.offered("automate", "fill_form")
	bad, err := j.c.Invoke(context.Background(), &protocol.InvokeRequest{MacroID: m.MacroID,
		Args: map[string]any{"Rating": "14", "Guests": "2", "submit": "Book"}}, client.WithConfirmation(sessionKey, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if bad.Result["ok"] != false || !strings.Contains(result(bad), `\"Rating\" holds \"10\", not \"14\"`) || !strings.Contains(result(bad), "not submitted") {
		t.Errorf("a value the page does not hold: %s", result(bad))
	}
}

// TestWidgetGenericTier: on the ARIA gallery act_on_element types into
// the combobox (its options, loaded by fetch, become a list box fill_form
// offers with those options), and fill_form picks one by its text.
func TestWidgetGenericTier(t *testing.T) {
	t.Parallel()
	app := testapp.Serve(t, testapp.Dir("../gallery"))
	j := openJob(t, browser.Config{}, app.URL, "aria.html")
	j.do("automate", "act_on_element", map[string]any{"element_id": "Destination", "text": "Pa"})
	form := j.offered("automate", "fill_form")
	if got := prop(form, "Destinations"); !strings.Contains(got, `"items":{"enum":["Paris","Parma"]}`) {
		t.Fatalf("the options after typing: %s (%v)", got, params(form))
	}
	res := j.do("automate", "fill_form", map[string]any{"Destinations": []any{"Parma"}})
	j.wantIn("the choice", result(res), "Destination Parma")
	res = j.do("automate", "press_key", map[string]any{"key": "End", "element_id": "Bags"})
	if !strings.Contains(result(res), `"ok":true`) {
		t.Errorf("press_key on an element: %s", result(res))
	}
	// The key is a name, not an enum: a name the browser does not press
	// is refused with the names it does.
	key := j.offered("automate", "press_key")
	bad, err := j.c.Invoke(context.Background(), &protocol.InvokeRequest{MacroID: key.MacroID, Args: map[string]any{"key": "Down"}})
	if err != nil || bad.Result["ok"] != false || !strings.Contains(result(bad), "ArrowDown") {
		t.Errorf("press_key with an unknown key: %v %v", err, bad)
	}
	form = j.offered("automate", "fill_form")
	if got := prop(form, "Bags"); !strings.Contains(got, "A number.") {
		t.Errorf("the slider's parameter: %s", got)
	}
}

// TestWidgetRulesTableForm: the table form written apart (claim.html:
// inputs without labels named by their row headers, a multiple select in
// a shadow root, a slider in steps of 5) is one fill_form whose
// parameters are those names, and one call files the claim.
func TestWidgetRulesTableForm(t *testing.T) {
	t.Parallel()
	app := testapp.Serve(t, testapp.Dir("../gallery"))
	j := openJob(t, browser.Config{}, app.URL, "claim.html")
	form := j.offered("automate", "fill_form")
	for _, p := range []string{"Employee", "Date of expense", "Reimbursed share", "Categories", "submit"} {
		if !slices.Contains(params(form), p) {
			t.Errorf("fill_form lacks %q: %v", p, params(form))
		}
	}
	res := j.do("automate", "fill_form", map[string]any{"Employee": "Ada Lovelace", "Date of expense": "2026-11-30",
		"Reimbursed share": "35", "Categories": []any{"Travel", "Books"}, "submit": "File claim"})
	j.wantIn("the claim", result(res), "Claim filed: Ada Lovelace | 2026-11-30 | 35% | Travel+Books")
}
