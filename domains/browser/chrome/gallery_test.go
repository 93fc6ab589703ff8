package chrome_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/domains/browser/internal/testapp"
)

// The widget gallery (domains/browser/testdata/gallery): one page per
// kind of widget (native controls, ARIA widgets, frames, shadow DOM,
// dialogs, live regions, pages that navigate or re-render late), each
// driven on a live session as an agent does, every value read back.
// Nothing here waits a fixed time: every wait is the browser's, bounded
// and ended by the page's own events.

// gallery serves the gallery and returns the browser of one test: the
// test binary's shared browser (chrome.SharedBrowser) for a zero cfg,
// else one of its own with cfg, its limits the test does not set
// stretched by the machine's speed (chrome.Budgeted: under load 30
// Chromium did not start within 30 s).
func gallery(t *testing.T, cfg chrome.Config) (*chrome.Browser, *httptest.Server) {
	t.Helper()
	ts := testapp.Serve(t, testapp.Dir("../gallery"))
	if reflect.ValueOf(cfg).IsZero() {
		return chrome.SharedBrowser(t), ts
	}
	cfg.Path = needChromium(t)
	b := chrome.New(chrome.Budgeted(cfg))
	t.Cleanup(func() { _ = b.Close() })
	return b, ts
}

// galleryPage opens a gallery page in a new session.
func galleryPage(t *testing.T, b *chrome.Browser, ts *httptest.Server, page string) (string, *chrome.Observation) {
	t.Helper()
	obs, err := b.OpenSession(context.Background(), "ada", ts.URL+"/"+page)
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Live || obs.Page == nil {
		t.Fatalf("%s: not live: %+v", page, obs)
	}
	return obs.Session, obs
}

// element is the element of a page with ref, or nil.
func element(p *chrome.Page, ref string) *chrome.PageElement {
	if p == nil {
		return nil
	}
	for i := range p.Elements {
		if p.Elements[i].Ref == ref {
			return &p.Elements[i]
		}
	}
	return nil
}

// refs are the refs of a page.
func refs(p *chrome.Page) []string {
	var out []string
	if p == nil {
		return out
	}
	for _, e := range p.Elements {
		out = append(out, e.Ref)
	}
	return out
}

// pageText is what a page's elements say (names and values), to look for
// texts in.
func pageText(p *chrome.Page) string {
	var b strings.Builder
	if p == nil {
		return ""
	}
	for _, e := range p.Elements {
		b.WriteString(e.Role + " " + e.Name + " = " + e.Value + "\n")
	}
	return b.String()
}

// TestGalleryNativeControls: every native control of native.html set by
// value in one fill_form call and read back; a date is one field (no
// "Day Day" parts); a value the page does not hold is an error that says
// what it holds, and the form is then not submitted.
func TestGalleryNativeControls(t *testing.T) {
	t.Parallel()
	b, ts := gallery(t, chrome.Config{})
	ctx := context.Background()
	id, obs := galleryPage(t, b, ts, "native.html")
	for _, ref := range refs(obs.Page) {
		if strings.Contains(ref, "Day") || strings.Contains(ref, "picker") || strings.Contains(ref, "AM/PM") {
			t.Errorf("the page lists a part of a native input: %q (%v)", ref, refs(obs.Page))
		}
	}
	kinds := []struct {
		ref, role, value string
		values           []string
		want             string // the value the page then holds (checked state for boxes)
	}{
		{"Full name", "textbox", "Ada Lovelace", nil, "Ada Lovelace"},
		{"Email", "textbox", "ada@example.com", nil, "ada@example.com"},
		{"Password", "textbox", "s3cret", nil, "••••••"}, // the tree masks it
		{"Phone", "textbox", "+44 20 7946 0000", nil, "+44 20 7946 0000"},
		{"Website", "textbox", "https://example.com", nil, "https://example.com"},
		{"Search", "searchbox", "sea view", nil, "sea view"},
		{"Notes", "textbox", "Late arrival", nil, "Late arrival"},
		{"Guests", "spinbutton", "3", nil, "3"},
		{"Volume", "slider", "14", nil, "14"},
		{"Arrival date", "date", "2026-11-30", nil, "2026-11-30"},
		{"Arrival time", "time", "14:30", nil, "14:30"},
		{"Meeting", "datetime-local", "2026-11-30T09:15", nil, "2026-11-30T09:15"},
		{"Card month", "month", "2027-03", nil, "2027-03"},
		{"Week", "week", "2026-W48", nil, "2026-W48"},
		{"Colour", "color", "#ff8800", nil, "#ff8800"},
		{"Newsletter", "checkbox", "true", nil, "true"},
		{"Double", "radio", "true", nil, "true"},
		{"Meal", "combobox", "Fish", nil, "Fish"},
		{"Extras", "listbox", "", []string{"Parking", "Late checkout"}, "Parking, Late checkout"},
	}
	var fields []chrome.Field
	for _, k := range kinds {
		e := element(obs.Page, k.ref)
		if e == nil || e.Role != k.role {
			t.Fatalf("%s: %+v, want role %s (page: %v)", k.ref, e, k.role, refs(obs.Page))
		}
		fields = append(fields, chrome.Field{ElementID: k.ref, Value: k.value, Values: k.values})
	}
	if e := element(obs.Page, "Passport scan"); e == nil || e.Role != "file" {
		t.Errorf("the file input is %+v, want role file", e)
	}
	after, err := b.Session("ada", id).FillForm(ctx, fields, "Book")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		t.Run(k.ref, func(t *testing.T) {
			e := element(after.Page, k.ref)
			if e == nil {
				t.Fatalf("gone after the fill: %v", refs(after.Page))
			}
			got := e.Value
			switch k.role {
			case "checkbox", "radio":
				got = map[bool]string{true: "true", false: "false"}[e.Checked]
			case "listbox", "combobox":
				var sel []string
				for _, o := range after.Page.Elements {
					if o.Role == "option" && o.Parent == e.ID && o.Selected {
						sel = append(sel, o.Name)
					}
				}
				got = strings.Join(sel, ", ")
			}
			if got != k.want {
				t.Errorf("holds %q, want %q", got, k.want)
			}
		})
	}
	if !strings.Contains(pageText(after.Page), "Booked 2026-11-30 14:30 volume 14") {
		t.Errorf("the form's own answer is missing: %s", pageText(after.Page))
	}

	// Values the page does not take are errors naming what it holds; the
	// other fields are set, the form is not submitted.
	bad := []struct {
		field chrome.Field
		says  string
	}{
		{chrome.Field{ElementID: "Rating", Value: "14"}, `"Rating" holds "10", not "14" (a number from 0 to 50 in steps of 10)`},
		{chrome.Field{ElementID: "Arrival date", Value: "30/11/2026"}, `"Arrival date" holds "", not "30/11/2026" (a date is YYYY-MM-DD)`},
		{chrome.Field{ElementID: "Meal", Value: "Pasta"}, `"Meal" has no option "Pasta"; it offers "Choose", "Vegan", "Fish"`},
		{chrome.Field{ElementID: "Passport scan", Value: "scan.pdf"}, "upload_file"},
		{chrome.Field{ElementID: "Full name", Values: []string{"a", "b"}}, "it takes one value, not 2"},
	}
	var fs []chrome.Field
	for _, c := range bad {
		fs = append(fs, c.field)
	}
	fs = append(fs, chrome.Field{ElementID: "Guests", Value: "5"})
	obs, err = b.Session("ada", id).FillForm(ctx, fs, "Book")
	var fe *chrome.FieldErrors
	if !errors.As(err, &fe) || len(fe.Errs) != len(bad) || obs == nil {
		t.Fatalf("bad values: %v (%T), obs %v", err, err, obs != nil)
	}
	for i, c := range bad {
		if !strings.Contains(fe.Errs[i].Error(), c.says) {
			t.Errorf("error %d is %q, want it to say %q", i, fe.Errs[i], c.says)
		}
	}
	if e := element(obs.Page, "Guests"); e == nil || e.Value != "5" {
		t.Errorf("the good field beside the bad ones: %+v", e)
	}
	if obs.Action != nil {
		t.Errorf("the form was submitted: %+v", obs.Action)
	}
}

// TestGalleryARIAWidgets: each ARIA widget of aria.html set as an agent
// names its value (fill_form's fields, or act_on_element for a widget no
// field rule lists) and read back.
func TestGalleryARIAWidgets(t *testing.T) {
	t.Parallel()
	b, ts := gallery(t, chrome.Config{})
	ctx := context.Background()
	id, obs := galleryPage(t, b, ts, "aria.html")
	for _, want := range []struct{ ref, role string }{
		{"Destination", "combobox"}, {"Seat", "listbox"}, {"Services", "listbox"}, {"Email alerts", "switch"},
		{"Bags", "slider"}, {"Nights", "spinbutton"}, {"Message to the host", "textbox"}, {"Details", "tab"},
		{"Reviews", "tab"}, {"Booking actions", "button"}, {"Europe", "treeitem"},
	} {
		if e := element(obs.Page, want.ref); e == nil || e.Role != want.role {
			t.Errorf("%s: %+v, want role %s", want.ref, e, want.role)
		}
	}
	fill := func(t *testing.T, f chrome.Field) *chrome.Observation {
		t.Helper()
		o, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{f}, "")
		if err != nil {
			t.Fatalf("%s: %v", f.ElementID, err)
		}
		return o
	}
	value := func(o *chrome.Observation, ref string) string {
		e := element(o.Page, ref)
		if e == nil {
			return "(gone)"
		}
		return e.Value
	}
	t.Run("combobox options loaded by fetch", func(t *testing.T) {
		o := fill(t, chrome.Field{ElementID: "Destination", Value: "Paris"})
		if got := value(o, "Destination"); got != "Paris" {
			t.Errorf("holds %q", got)
		}
		if !strings.Contains(pageText(o.Page), "Destination Paris") {
			t.Errorf("the page did not take the option: %s", pageText(o.Page))
		}
		// An option the page does not offer: the error lists what it does.
		_, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Destination", Value: "Pa"}}, "")
		if err == nil || !strings.Contains(err.Error(), `"Paris", "Parma"`) {
			t.Errorf("an ambiguous option: %v", err)
		}
		// Typing shows the options as the page's elements, for the next
		// call to pick by text.
		o, err = b.Session("ada", id).Interact(ctx, chrome.Interaction{Ref: "Destination", Text: "Ro", TextSet: true})
		if err != nil {
			t.Fatal(err)
		}
		var opts []string
		for _, e := range o.Page.Elements {
			if e.Role == "option" && e.Parent == element(o.Page, "Destinations").ID {
				opts = append(opts, e.Name)
			}
		}
		if !slices.Equal(opts, []string{"Rome"}) {
			t.Fatalf("options after typing Ro: %v (%s)", opts, pageText(o.Page))
		}
		o, err = b.Session("ada", id).Interact(ctx, chrome.Interaction{Ref: "Destinations", Options: []string{"Rome"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := value(o, "Destination"); got != "Rome" {
			t.Errorf("picked from the list: holds %q", got)
		}
	})
	t.Run("listbox", func(t *testing.T) {
		o := fill(t, chrome.Field{ElementID: "Seat", Values: []string{"Aisle"}})
		if !strings.Contains(pageText(o.Page), "Seat Aisle") {
			t.Errorf("%s", pageText(o.Page))
		}
	})
	t.Run("listbox multiple", func(t *testing.T) {
		o := fill(t, chrome.Field{ElementID: "Services", Values: []string{"Wifi", "Lounge"}})
		var sel []string
		for _, e := range o.Page.Elements {
			if e.Role == "option" && e.Selected && e.Parent == element(o.Page, "Services").ID {
				sel = append(sel, e.Name)
			}
		}
		if !slices.Equal(sel, []string{"Wifi", "Lounge"}) {
			t.Errorf("selected %v", sel)
		}
	})
	t.Run("switch", func(t *testing.T) {
		o := fill(t, chrome.Field{ElementID: "Email alerts", Value: "true"})
		if e := element(o.Page, "Email alerts"); e == nil || !e.Checked {
			t.Errorf("%+v", e)
		}
	})
	t.Run("slider", func(t *testing.T) {
		o := fill(t, chrome.Field{ElementID: "Bags", Value: "35"})
		if got := value(o, "Bags"); got != "35" {
			t.Errorf("holds %q", got)
		}
		_, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Bags", Value: "12"}}, "")
		var ve *chrome.ElementError
		if !(errors.As(err, &ve) && ve.Kind == chrome.NotHeld) || (ve.Holds != "10" && ve.Holds != "15") {
			t.Errorf("a value between its steps: %v", err)
		}
	})
	t.Run("spinbutton", func(t *testing.T) {
		o := fill(t, chrome.Field{ElementID: "Nights", Value: "4"})
		if got := value(o, "Nights"); got != "4" {
			t.Errorf("holds %q", got)
		}
	})
	t.Run("contenteditable", func(t *testing.T) {
		o := fill(t, chrome.Field{ElementID: "Message to the host", Value: "Arriving by train"})
		if got := value(o, "Message to the host"); !strings.Contains(got, "Arriving by train") {
			t.Errorf("holds %q (%s)", got, pageText(o.Page))
		}
	})
	t.Run("tabs", func(t *testing.T) {
		o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Reviews"})
		if err != nil {
			t.Fatal(err)
		}
		if e := element(o.Page, "Reviews"); e == nil || !e.Selected || !strings.Contains(strings.Join(o.Action.Appeared, " "), "Rated 4.6") {
			t.Errorf("%+v %v", e, o.Action.Appeared)
		}
	})
	t.Run("menu", func(t *testing.T) {
		o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Booking actions"})
		if err != nil {
			t.Fatal(err)
		}
		if e := element(o.Page, "Archive booking"); e == nil || e.Role != "menuitem" {
			t.Fatalf("the open menu: %v", refs(o.Page))
		}
		o, err = b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Archive booking"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(pageText(o.Page), "Did Archive booking") {
			t.Errorf("%s", pageText(o.Page))
		}
	})
	t.Run("tree", func(t *testing.T) {
		o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Europe"})
		if err != nil {
			t.Fatal(err)
		}
		if element(o.Page, "France") == nil {
			t.Fatalf("the expanded tree: %v", refs(o.Page))
		}
		o, err = b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Spain"})
		if err != nil {
			t.Fatal(err)
		}
		if e := element(o.Page, "Spain"); e == nil || !e.Selected {
			t.Errorf("%+v", e)
		}
	})
}

// TestGalleryFrames: the fields of a same-site frame and of a cross-site
// frame (its own renderer) are elements with refs that name their frame,
// set and submitted like any other; a frame of a host the allow-list
// refuses never loads and has none.
func TestGalleryFrames(t *testing.T) {
	t.Parallel()
	b, ts := gallery(t, chrome.Config{})
	ctx := context.Background()
	id, obs := galleryPage(t, b, ts, "frames.html")
	for _, ref := range []string{"Email (frame Newsletter)", "Weekly (frame Newsletter)", "Subscribe (frame Newsletter)",
		"Recipient (frame Payment)", "Delivery date (frame Payment)", "Send gift (frame Payment)"} {
		if element(obs.Page, ref) == nil {
			t.Errorf("no %q: %v", ref, refs(obs.Page))
		}
	}
	o, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Email (frame Newsletter)", Value: "ada@example.com"},
		{ElementID: "Weekly (frame Newsletter)", Value: "true"}}, "Subscribe (frame Newsletter)")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pageText(o.Page), "Subscribed ada@example.com weekly=true") {
		t.Errorf("same-site frame: %s", pageText(o.Page))
	}
	o, err = b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Recipient (frame Payment)", Value: "Grace"},
		{ElementID: "Delivery date (frame Payment)", Value: "2026-12-24"}}, "Send gift (frame Payment)")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pageText(o.Page), "Gift for Grace on 2026-12-24") {
		t.Errorf("cross-site frame: %s", pageText(o.Page))
	}

	// The other site is not allowed: its frame has no fields.
	b2, _ := gallery(t, chrome.Config{AllowedHosts: []string{"127.0.0.1"}})
	_, obs = galleryPage(t, b2, ts, "frames.html")
	if element(obs.Page, "Recipient (frame Payment)") != nil || element(obs.Page, "Email (frame Newsletter)") == nil {
		t.Errorf("with localhost refused: %v", refs(obs.Page))
	}
}

// TestGalleryShadowDOM: fields inside open shadow roots (nested, with a
// date) are set by their labels and submitted.
func TestGalleryShadowDOM(t *testing.T) {
	t.Parallel()
	b, ts := gallery(t, chrome.Config{})
	id, obs := galleryPage(t, b, ts, "shadow.html")
	for _, want := range []struct{ ref, role string }{{"Promo code", "textbox"}, {"Check-in", "date"}, {"Size", "combobox"}, {"Apply code", "button"}} {
		if e := element(obs.Page, want.ref); e == nil || e.Role != want.role {
			t.Errorf("%s: %+v (%v)", want.ref, e, refs(obs.Page))
		}
	}
	o, err := b.Session("ada", id).FillForm(context.Background(), []chrome.Field{{ElementID: "Promo code", Value: "WINTER"},
		{ElementID: "Check-in", Value: "2026-12-01"}, {ElementID: "Size", Value: "L"}}, "Apply code")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pageText(o.Page), "Applied WINTER from 2026-12-01 size L") {
		t.Errorf("%s", pageText(o.Page))
	}
}

// TestGalleryDialogs: a custom modal dialog (role dialog, aria-modal) and
// a native modal <dialog>: while one is open the page's elements are the
// dialog's; its buttons and fields act like any other.
func TestGalleryDialogs(t *testing.T) {
	t.Parallel()
	b, ts := gallery(t, chrome.Config{})
	ctx := context.Background()
	id, _ := galleryPage(t, b, ts, "dialogs.html")
	o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Delete account"})
	if err != nil {
		t.Fatal(err)
	}
	if e := element(o.Page, "Delete this account?"); e == nil || e.Role != "dialog" {
		t.Fatalf("the custom dialog: %v", refs(o.Page))
	}
	o, err = b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Delete"})
	if err != nil {
		t.Fatal(err)
	}
	if element(o.Page, "Delete this account?") != nil || !strings.Contains(pageText(o.Page), "Account deleted") {
		t.Errorf("after Delete: %s", pageText(o.Page))
	}
	o, err = b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Rename account"})
	if err != nil {
		t.Fatal(err)
	}
	if e := element(o.Page, "Account name"); e == nil || element(o.Page, "Delete account") != nil {
		t.Fatalf("the native modal dialog: %v", refs(o.Page))
	}
	o, err = b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Account name", Value: "Travel"}}, "Save name")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pageText(o.Page), "Renamed to Travel") {
		t.Errorf("%s", pageText(o.Page))
	}
}

// TestGalleryLiveRegions: what live regions say after an action is in
// the answer, also a toast the page removed before the answer.
func TestGalleryLiveRegions(t *testing.T) {
	t.Parallel()
	b, ts := gallery(t, chrome.Config{})
	ctx := context.Background()
	id, _ := galleryPage(t, b, ts, "live.html")
	for _, c := range []struct{ button, says string }{
		{"Save draft", "Draft saved at 10:42"},
		{"Publish", "Publishing failed: title missing"},
	} {
		o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: c.button})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(o.Announced, c.says) {
			t.Errorf("%s: announced %v, appeared %v", c.button, o.Announced, o.Action.Appeared)
		}
	}
}

// TestGalleryAnswersAfterTheAction: a submit whose handler works, asks
// the server and navigates late answers with the page it leads to; a
// button whose content comes after a request and a pause answers with
// that content.
func TestGalleryAnswersAfterTheAction(t *testing.T) {
	t.Parallel()
	b, ts := gallery(t, chrome.Config{})
	ctx := context.Background()
	id, _ := galleryPage(t, b, ts, "nav.html")
	o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Show more"})
	if err != nil {
		t.Fatal(err)
	}
	if element(o.Page, "Member number") == nil {
		t.Errorf("the re-rendered page: %v", refs(o.Page))
	}
	o, err = b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "User", Value: "ada"}}, "Sign in")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(o.URL, "/welcome.html?user=ada") || element(o.Page, "Welcome, ada") == nil {
		t.Errorf("after Sign in: %s %v", o.URL, refs(o.Page))
	}
}

// TestGallerySecondForm: a form written apart from the code (booking.html:
// labels that wrap, aria-label only, a framework's own state, a formatted
// phone number, a list box behind a button, an ARIA 1.2 combobox, a
// custom checkbox and radio group, a read-only stepper) done as an agent
// would: every value set is held, and the one the page refuses (typing
// into the read-only stepper) is an error saying what it holds, with the
// field left as it was.
func TestGallerySecondForm(t *testing.T) {
	t.Parallel()
	b, ts := gallery(t, chrome.Config{})
	ctx := context.Background()
	id, obs := galleryPage(t, b, ts, "booking.html")
	o, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{
		{ElementID: "Your name", Value: "Ada"}, {ElementID: "Phone number", Value: "2025550123"},
		{ElementID: "Day", Value: "2026-12-31"}, {ElementID: "Time", Value: "20:30"},
		{ElementID: "Occasion", Value: "Birthday"}, {ElementID: "High chair", Value: "true"},
		{ElementID: "Outside", Value: "true"},
	}, "")
	if err != nil {
		t.Fatalf("%v (page: %v)", err, refs(obs.Page))
	}
	var area string
	for _, e := range o.Page.Elements {
		if e.Role == "button" && strings.HasPrefix(e.Ref, "Area") {
			area = e.Ref
		}
	}
	if _, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: area}); err != nil {
		t.Fatalf("%q: %v", area, err)
	}
	if _, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Area", Values: []string{"Garden room"}}}, ""); err != nil {
		t.Fatal(err)
	}
	_, err = b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Party size", Value: "4"}}, "")
	var ke *chrome.ElementError
	if !(errors.As(err, &ke) && ke.Kind == chrome.TakesNoValue) || !strings.Contains(err.Error(), `it is read-only and holds "2"`) {
		t.Errorf("the read-only stepper: %v", err)
	}
	for range 2 {
		if _, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "More people"}); err != nil {
			t.Fatal(err)
		}
	}
	o, err = b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Reserve"})
	if err != nil {
		t.Fatal(err)
	}
	want := "Reserved for Ada | 2025550123 | 2026-12-31 | 20:30 | Garden room | Birthday | true | Outside | 4"
	if !strings.Contains(pageText(o.Page), want) {
		t.Errorf("want %q in %s", want, pageText(o.Page))
	}
}

// TestGalleryTableForm: a form written apart from this code in another
// markup style (claim.html): inputs without labels in a table's cells
// (named by their row headers: "Date of expense"), a multiple select in
// a custom element's shadow root, a slider in steps of 5, an input as the
// submit button. Every value is set whole and read back; a slider value
// between its steps is an error saying what the slider holds.
func TestGalleryTableForm(t *testing.T) {
	t.Parallel()
	b, ts := gallery(t, chrome.Config{})
	ctx := context.Background()
	id, obs := galleryPage(t, b, ts, "claim.html")
	for ref, role := range map[string]string{"Employee": "textbox", "Date of expense": "date", "Reimbursed share": "slider", "Categories": "listbox"} {
		if e := element(obs.Page, ref); e == nil || e.Role != role {
			t.Errorf("%q: %+v, want a %s (refs %v)", ref, e, role, refs(obs.Page))
		}
	}
	_, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Reimbursed share", Value: "37"}}, "")
	if err == nil || !strings.Contains(err.Error(), `"Reimbursed share" holds "35", not "37"`) && !strings.Contains(err.Error(), `"Reimbursed share" holds "40", not "37"`) {
		t.Errorf("a value between the slider's steps: %v", err)
	}
	o, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{
		{ElementID: "Employee", Value: "Ada Lovelace"}, {ElementID: "Date of expense", Value: "2026-11-30"},
		{ElementID: "Reimbursed share", Value: "35"}, {ElementID: "Categories", Values: []string{"Travel", "Books"}},
	}, "File claim")
	if err != nil {
		t.Fatalf("fill: %v (refs %v)", err, refs(obs.Page))
	}
	want := "Claim filed: Ada Lovelace | 2026-11-30 | 35% | Travel+Books"
	if o.Action == nil || !slices.Contains(o.Action.Appeared, want) {
		t.Errorf("want %q to appear: %+v", want, o.Action)
	}
}
