package browser

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/plural"
	"github.com/manglecp/manglecp/protocol"
)

// CodeBrowserDialogOpen: the live page has a JavaScript dialog open;
// nothing else runs on it until answer_dialog answers it.
const CodeBrowserDialogOpen protocol.Code = "x-browser_dialog_open"

// dialogCode is the registry entry of CodeBrowserDialogOpen.
var dialogCode = protocol.CodeInfo{Code: CodeBrowserDialogOpen, HTTPStatus: http.StatusConflict, Recoverable: true,
	Description: "The live page has a JavaScript dialog open (page_dialog); answer it with answer_dialog first"}

// maxCellFacts bounds the table facts (cells and row keys) of one page:
// with the page's other facts and a call's console and network facts they
// fit the server's default max_state_delta (500).
const maxCellFacts = 200

// pagePreds are the predicates of the live page: each action's state
// delta retracts the previous page's facts of these predicates and
// asserts the new page's.
var pagePreds = map[string]int{
	"page_element": 3, "field_state": 4, "option_of": 3, "table_cell": 4,
	"page_alert": 2, "page_dialog": 2, "browser_tab": 4, "interactive_element": 3, "payment_field": 1, "table_row_key": 3,
}

// fieldRoles are the accessibility roles of form fields (field_state);
// boxRoles those whose value is checked or not.
var (
	fieldRoles = map[string]bool{"textbox": true, "searchbox": true, "combobox": true, "listbox": true,
		"spinbutton": true, "slider": true, "checkbox": true, "radio": true, "switch": true,
		"date": true, "time": true, "datetime-local": true, "month": true, "week": true, "color": true,
		"radiogroup": true}
	boxRoles = map[string]bool{"checkbox": true, "radio": true, "switch": true}
	// cellRoles are table cells (table_cell); their header cells name
	// the columns and are not facts of their own.
	cellRoles = map[string]bool{"cell": true, "gridcell": true, "rowheader": true}
	// quietRoles are kept by the page reader for structure but are not
	// page_element facts: rows, header cells, options, forms.
	quietRoles = map[string]bool{"row": true, "columnheader": true, "option": true, "form": true,
		"cell": true, "gridcell": true, "rowheader": true, "group": true}
)

// paymentName matches the labels of payment card fields (the codec's
// classification; the policy rules decide what a payment form forbids).
var paymentName = regexp.MustCompile(`(?i)card.?num|credit.?card|\bcvc\b|\bcvv\b|security code|expir`)

// pageFacts turns the page after a call (its accessibility tree, its
// dialog, the session's tabs) into facts, with the browser as their
// source. They describe the page as it is; rules choose which of them an
// answer carries.
func livePageFacts(obs *chrome.Observation, tabs []chrome.TabInfo, now time.Time) []protocol.Fact {
	var facts []protocol.Fact
	add := func(f protocol.Fact) { facts = append(facts, browserFact(f, now)) }
	if d := obs.Dialog; d != nil {
		add(protocol.NewFact("page_dialog", d.Type, d.Message))
	}
	if len(tabs) > 1 {
		for _, t := range tabs {
			add(protocol.NewFact("browser_tab", t.Index+1, t.Title, t.URL, t.Current))
		}
	}
	p := obs.Page
	if p == nil {
		return facts
	}
	// A table is named by its caption (accessible name) when no other
	// table has that name, else by its ref.
	refOf := make(map[string]string, len(p.Elements))
	tableNames := map[string]int{}
	for _, e := range p.Elements {
		refOf[e.ID] = e.Ref
		if e.Role == "table" || e.Role == "grid" {
			tableNames[e.Name]++
		}
	}
	tableOf := func(id string) string {
		for _, e := range p.Elements {
			if e.ID == id {
				if e.Name != "" && tableNames[e.Name] == 1 {
					return e.Name
				}
				return e.Ref
			}
		}
		return id
	}
	// A group (a fieldset, a radiogroup) of radio buttons is one field:
	// its radios are its options (option_of), not fields of their own.
	radioGroup := map[string]bool{} // group ID
	checkedIn := map[string]string{}
	for _, e := range p.Elements {
		if e.Role == "radio" && e.Parent != "" {
			radioGroup[e.Parent] = true
			if e.Checked {
				checkedIn[e.Parent] = e.Name
			}
		}
	}
	for _, e := range p.Elements {
		if !radioGroup[e.ID] || (e.Role != "group" && e.Role != "radiogroup") || e.Name == "" {
			delete(radioGroup, e.ID)
		}
	}
	tables := map[string]string{}
	keyed := map[string]bool{}
	// Table cells come last and at most maxCellFacts (find_on_page reads
	// rows on request): the rest of the page comes first in the delta.
	var cells []protocol.Fact
	for _, e := range p.Elements {
		switch {
		case e.Role == "option":
			if parent := refOf[e.Parent]; parent != "" {
				add(protocol.NewFact("option_of", parent, e.Name, e.Selected))
			}
		case cellRoles[e.Role] && e.Table != "":
			col := e.ColHeader
			if col == "" {
				col = fmt.Sprintf("column %d", e.Col)
			}
			t, ok := tables[e.Table]
			if !ok {
				t = tableOf(e.Table)
				tables[e.Table] = t
			}
			if len(cells) < maxCellFacts {
				cells = append(cells, browserFact(protocol.NewFact("table_cell", t, e.Row, col, e.Name), now))
				if !keyed[e.Table+"\x00"+fmt.Sprint(e.Row)] && e.Name != "" {
					keyed[e.Table+"\x00"+fmt.Sprint(e.Row)] = true // the row's first cell with text
					cells = append(cells, browserFact(protocol.NewFact("table_row_key", t, e.Row, e.Name), now))
				}
			}
		case e.Role == "alert" || e.Role == "status":
			if e.Name != "" {
				add(protocol.NewFact("page_alert", e.Ref, e.Name))
			}
		case radioGroup[e.ID]:
			add(protocol.NewFact("page_element", e.Ref, "radiogroup", e.Name))
			add(protocol.NewFact("field_state", e.Ref, checkedIn[e.ID], e.Required, e.Invalid))
			continue
		case e.Role == "radio" && radioGroup[e.Parent]:
			add(protocol.NewFact("option_of", refOf[e.Parent], e.Name, e.Checked))
			add(protocol.NewFact("page_element", e.Ref, e.Role, e.Name))
			continue
		}
		if quietRoles[e.Role] {
			continue
		}
		add(protocol.NewFact("page_element", e.Ref, e.Role, e.Name))
		if fieldRoles[e.Role] {
			value := e.Value
			if boxRoles[e.Role] {
				value = fmt.Sprint(e.Checked)
			}
			add(protocol.NewFact("field_state", e.Ref, value, e.Required, e.Invalid))
			if paymentName.MatchString(e.Name) {
				add(protocol.NewFact("payment_field", e.Ref))
			}
		}
	}
	return append(facts, cells...)
}

// browserFact marks f as seen by the server's browser: a session fact the
// client sends back with its next intent.
func browserFact(f protocol.Fact, now time.Time) protocol.Fact {
	f.Source = &protocol.Provenance{SourceType: protocol.SourceExternal, SourceID: BrowserSource, AssertedAt: now.UTC().Format(time.RFC3339Nano)}
	f.Category = protocol.CategorySession
	return f
}

// pageRetractions retract every fact of the previous page.
func pageRetractions() []protocol.Fact {
	out := make([]protocol.Fact, 0, len(pagePreds))
	for _, pred := range slices.Sorted(maps.Keys(pagePreds)) {
		out = append(out, protocol.NewFact(pred, make([]any, pagePreds[pred])...))
	}
	return out
}

// noSession is the answer of a live-session tool without a session fact
// (a client that dropped it from its state).
func noSession(out *manglecp.Outcome, c *manglecp.Call) (*manglecp.Outcome, error) {
	return problem(out, c.Tool, "no live browser session: open_page starts one")
}

// liveCall is one call on the live session a browser_session fact names.
type liveCall func(s *chrome.Session) (*chrome.Observation, error)

// session is the handle on the caller's live session id.
func (w *browse) session(ctx context.Context, id string) *chrome.Session {
	return w.b.Session(owner(ctx), id)
}

// live runs call on the session of c's facts and turns what the browser
// saw into the outcome: a short account (verb says what was done), the
// page after the call as facts, the console and network facts of the
// call, and the session fact naming the page now.
func (w *browse) live(ctx context.Context, c *manglecp.Call, verb string, call liveCall) (*manglecp.Outcome, error) {
	out := &manglecp.Outcome{}
	session := sessionOf(c.Facts)
	if session == "" {
		return noSession(out, c)
	}
	s := w.session(ctx, session)
	obs, msg, err := w.do(out, func() (*chrome.Observation, error) { return call(s) })
	if err != nil {
		return nil, err
	}
	if obs == nil || obs.LoadError != "" {
		return problem(out, c.Tool, msg)
	}
	w.settleLive(ctx, out, obs, s, verb)
	return out, ctx.Err()
}

// settleLive fills out from the observation of a call on a live session.
func (w *browse) settleLive(ctx context.Context, out *manglecp.Outcome, obs *chrome.Observation, s *chrome.Session, verb string) {
	now := time.Now()
	session := s.ID()
	tabs, _ := s.Tabs(ctx)
	out.Result, out.Summary = liveResult(obs, verb)
	out.Retract = append(pageRetractions(), protocol.NewFact("browser_session", session, nil), protocol.NewFact("current_url", nil))
	// What matters first: a delta over the server's max_state_delta keeps
	// the first facts (and says so).
	out.Assert = append([]protocol.Fact{sessionFact(session, obs.URL), currentURL(obs.URL, now)}, livePageFacts(obs, tabs, now)...)
	out.Assert = append(out.Assert, consoleNetFacts(obs, now)...)
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("current_url", obs.URL)}
}

// currentURL is the state's current_url after a call: the page the
// browser shows now, in place of any earlier one (the delta retracts
// those). A model that reached open_page or click_element from the tool
// list, without stating the page with an intent, has it in its working
// state all the same, so the intents that need it (automate,
// diagnose_error) are evaluated on the page it is on.
func currentURL(url string, now time.Time) protocol.Fact {
	return browserFact(protocol.NewFact("current_url", url), now)
}

// consoleNetFacts are the console and network facts of a call (the
// observation's facts without its interactive elements).
func consoleNetFacts(obs *chrome.Observation, now time.Time) []protocol.Fact {
	o := *obs
	o.Elements = nil
	return observationFacts(&o, now)
}

// liveResult is the short account of a call on a live page: where it is
// now, what failed, and a dialog or new tab. Everything else the model
// may need is in the facts, which the rules offer as the next tools'
// parameters and instructions.
func liveResult(obs *chrome.Observation, verb string) (map[string]any, string) {
	res := map[string]any{"ok": true}
	// A page behind a dialog has no title or URL to say.
	if obs.URL != "" {
		res["url"] = obs.URL
	}
	if obs.Title != "" {
		res["title"] = obs.Title
	}
	if obs.Status != 0 && obs.Status != http.StatusOK {
		res["status"] = obs.Status
	}
	var failed []string
	for _, r := range obs.Requests {
		if r.Status >= 400 || r.Failed != "" {
			what := fmt.Sprint(r.Status)
			if r.Failed != "" {
				what = r.Failed
			}
			failed = append(failed, fmt.Sprintf("%s %s %s (%s)", r.Method, pathOf(r.URL), what, r.ID))
		}
	}
	if len(failed) > 0 {
		res["failed_requests"] = first(failed, 5)
	}
	var errs []string
	for _, c := range obs.Console {
		// The browser's own "Failed to load resource" entries repeat
		// failed_requests.
		if c.Level == "error" && !(len(failed) > 0 && strings.HasPrefix(c.Message, "Failed to load resource:")) {
			errs = append(errs, c.Message) // clipped by the browser (300 bytes)
		}
	}
	if len(errs) > 0 {
		res["console_errors"] = first(errs, 3)
	}
	if a := obs.Action; a != nil {
		if !a.Changed {
			res["changed"] = false
		}
		if len(a.Appeared) > 0 && a.URLBefore == obs.URL {
			res["appeared"] = a.Appeared // on another page everything is new
		}
	}
	if len(obs.Announced) > 0 {
		// What live regions said (toasts, errors), also texts gone by now;
		// not those appeared already lists.
		shown := map[string]bool{}
		if a, ok := res["appeared"].([]string); ok {
			for _, t := range a {
				shown[t] = true
			}
		}
		var said []string
		for _, t := range obs.Announced {
			if !shown[t] {
				said = append(said, t)
			}
		}
		if len(said) > 0 {
			res["announced"] = first(said, 5)
		}
	}
	if d := obs.Dialog; d != nil {
		res["dialog"] = map[string]any{"type": d.Type, "message": d.Message}
	}
	if obs.TabOpened > 0 {
		res["tab_opened"] = obs.TabOpened + 1
	}
	if obs.Incomplete != "" {
		res["incomplete"] = obs.Incomplete
	}
	if obs.Page != nil && obs.Page.Truncated {
		res["elements"] = fmt.Sprintf("first %d of %d", len(obs.Page.Elements), obs.Page.Total)
	}
	sum := fmt.Sprintf("%s; page %q.", verb, obs.Title)
	if obs.Dialog != nil {
		sum = fmt.Sprintf("%s; the page opened a %s dialog.", verb, obs.Dialog.Type)
	}
	return res, sum
}

// maxFormFields bounds the fields of one fill_form call (as
// chrome.Session.FillForm does).
const maxFormFields = 50

// fillForm fills the page's form: every argument but submit names a field
// by its ref (as the rules offered it); booleans check or clear boxes, a
// list chooses several options. Each field is read back from the page: a
// field that does not hold its value makes the answer ok false, saying
// what the page holds (the form is then not submitted), with the page
// as it is.
func (w *browse) fillForm(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	var fields []chrome.Field
	submit := ""
	for _, name := range slices.Sorted(maps.Keys(c.Args)) {
		v := c.Args[name]
		if name == "submit" {
			submit, _ = v.(string)
			continue
		}
		f := chrome.Field{ElementID: name}
		switch x := v.(type) {
		case bool:
			f.Value = fmt.Sprint(x)
		case string:
			f.Value = x
		case []any:
			for _, o := range x {
				f.Values = append(f.Values, fmt.Sprint(o))
			}
			if len(f.Values) == 0 {
				f.Values = []string{}
			}
		default:
			f.Value = fmt.Sprint(x)
		}
		fields = append(fields, f)
	}
	if len(fields) > maxFormFields || (len(fields) == 0 && submit == "") {
		out := &manglecp.Outcome{}
		return problem(out, c.Tool, fmt.Sprintf("name 1 to %d fields, or submit", maxFormFields))
	}
	if len(fields) == 0 { // only press the button
		a := &chrome.Act{Kind: "click", ElementID: submit}
		return w.live(ctx, c, "Pressed "+protocol.Quote(submit), func(s *chrome.Session) (*chrome.Observation, error) {
			return s.Act(ctx, a)
		})
	}
	verb := "Filled " + plural.S(len(fields), "field")
	if submit != "" {
		verb += " and pressed " + protocol.Quote(submit)
	}
	var bad *chrome.FieldErrors
	out, err := w.live(ctx, c, verb, func(s *chrome.Session) (*chrome.Observation, error) {
		obs, err := s.FillForm(ctx, fields, submit)
		if errors.As(err, &bad) && obs != nil {
			return obs, nil
		}
		return obs, err
	})
	return withFieldErrors(out, err, bad, submit != "")
}

// withFieldErrors makes out, the answer of a call that set fields, say
// which fields do not hold their values: ok false and the problem, with
// the page as it is.
func withFieldErrors(out *manglecp.Outcome, err error, bad *chrome.FieldErrors, submitted bool) (*manglecp.Outcome, error) {
	if err != nil || bad == nil || out == nil || out.Result == nil || out.Result["ok"] == false {
		return out, err
	}
	msg := bad.Error()
	if submitted {
		msg += "; the form was not submitted"
	}
	out.Result["ok"] = false
	out.Result["problem"] = msg
	delete(out.Result, "changed")
	out.Summary = "Not every field holds its value: " + msg + "."
	return out, nil
}

// find reads the live page afresh and returns the elements and table rows
// that match a text: the part of the page the model asked for.
func (w *browse) find(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	out := &manglecp.Outcome{}
	session := sessionOf(c.Facts)
	if session == "" {
		return noSession(out, c)
	}
	needle := arg(c.Args, "text")
	const maxTexts = 5
	var page *chrome.Page
	var texts []string
	_, msg, err := w.do(out, func() (*chrome.Observation, error) {
		p, t, obs, err := w.session(ctx, session).Find(ctx, needle, maxTexts)
		page, texts = p, t
		return obs, err
	})
	if err != nil {
		return nil, err
	}
	if page == nil {
		return problem(out, c.Tool, msg)
	}
	const maxMatches, maxRows = 10, 5
	matches, total := page.Match(needle, maxMatches)
	found := make([]any, 0, len(matches))
	for _, e := range matches {
		if cellRoles[e.Role] || e.Role == "row" {
			continue // rows come whole, below
		}
		m := map[string]any{"ref": e.Ref, "role": e.Role}
		if e.Name != e.Ref {
			m["name"] = e.Name
		}
		if e.Value != "" {
			m["value"] = e.Value
		}
		found = append(found, m)
	}
	cells, nrows := page.Rows(needle, maxRows)
	rows := tableRows(cells)
	out.Result = map[string]any{}
	if len(found) > 0 {
		out.Result["elements"] = found
	}
	if len(rows) > 0 {
		out.Result["rows"] = rows
	}
	if len(texts) > 0 && len(rows) == 0 {
		out.Result["texts"] = texts
	}
	if total > maxMatches || nrows > maxRows {
		out.Result["more"] = fmt.Sprintf("%d elements and %d rows match; the first are shown", total, nrows)
	}
	out.Summary = fmt.Sprintf("%s, %s and %s match %s.", plural.S(len(found), "element"), plural.S(len(rows), "table row"), plural.S(len(texts), "text"), protocol.Quote(needle))
	return out, ctx.Err()
}

// tableRows groups cells by table and row into objects keyed by column
// header.
func tableRows(cells []chrome.PageElement) []any {
	type key struct {
		table string
		row   int
	}
	var order []key
	rows := map[key]map[string]any{}
	for _, e := range cells {
		if e.Role == "columnheader" {
			continue
		}
		k := key{e.Table, e.Row}
		r, ok := rows[k]
		if !ok {
			r = map[string]any{}
			rows[k] = r
			order = append(order, k)
		}
		col := e.ColHeader
		if col == "" {
			col = fmt.Sprintf("column %d", e.Col)
		}
		r[col] = e.Name
	}
	out := make([]any, 0, len(order))
	for _, k := range order {
		out = append(out, rows[k])
	}
	return out
}

// navigate loads a URL in the session's tab, or goes back, forward or
// reloads.
func (w *browse) navigate(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	to := arg(c.Args, "url")
	switch to {
	case "back":
		return w.live(ctx, c, "Went back", func(s *chrome.Session) (*chrome.Observation, error) { return s.Back(ctx) })
	case "forward":
		return w.live(ctx, c, "Went forward", func(s *chrome.Session) (*chrome.Observation, error) { return s.Forward(ctx) })
	case "reload":
		return w.live(ctx, c, "Reloaded", func(s *chrome.Session) (*chrome.Observation, error) { return s.Reload(ctx) })
	}
	return w.live(ctx, c, "Loaded "+protocol.Quote(to), func(s *chrome.Session) (*chrome.Observation, error) {
		return s.Navigate(ctx, to)
	})
}

// pressKey presses a key on the live page: on the focused element, or on
// the element named.
func (w *browse) pressKey(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	key, ref := arg(c.Args, "key"), arg(c.Args, "element_id")
	if ref != "" {
		return w.live(ctx, c, "Pressed "+key+" on "+protocol.Quote(ref), func(s *chrome.Session) (*chrome.Observation, error) {
			return s.Interact(ctx, chrome.Interaction{Ref: ref, Key: key})
		})
	}
	return w.live(ctx, c, "Pressed "+key, func(s *chrome.Session) (*chrome.Observation, error) {
		return s.PressKey(ctx, key)
	})
}

// interact acts on any element the page showed (act_on_element): types
// text into it, chooses options, presses a key on it. A value the page
// does not hold afterwards makes the answer ok false, saying what it
// holds.
func (w *browse) interact(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	in := chrome.Interaction{Ref: arg(c.Args, "element_id"), Key: arg(c.Args, "key")}
	if t, ok := c.Args["text"].(string); ok {
		in.Text, in.TextSet = t, true
	}
	if list, ok := c.Args["options"].([]any); ok {
		for _, v := range list {
			in.Options = append(in.Options, fmt.Sprint(v))
		}
	}
	var did []string
	if in.TextSet {
		did = append(did, "typed "+protocol.Quote(in.Text))
	}
	if len(in.Options) > 0 {
		did = append(did, "chose "+plural.S(len(in.Options), "option"))
	}
	if in.Key != "" {
		did = append(did, "pressed "+in.Key)
	}
	if len(did) == 0 {
		return problem(&manglecp.Outcome{}, c.Tool, "give text, options or key")
	}
	verb := strings.Join(did, ", ") + " on " + protocol.Quote(in.Ref)
	verb = strings.ToUpper(verb[:1]) + verb[1:]
	var bad *chrome.FieldErrors
	out, err := w.live(ctx, c, verb, func(s *chrome.Session) (*chrome.Observation, error) {
		obs, err := s.Interact(ctx, in)
		if errors.As(err, &bad) && obs != nil {
			return obs, nil
		}
		return obs, err
	})
	return withFieldErrors(out, err, bad, false)
}

// hover moves the mouse over an element.
func (w *browse) hover(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	ref := arg(c.Args, "element_id")
	return w.live(ctx, c, "Hovered over "+protocol.Quote(ref), func(s *chrome.Session) (*chrome.Observation, error) {
		return s.Hover(ctx, ref)
	})
}

// wait waits for a text, an element or a quiet network.
func (w *browse) wait(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	wt := chrome.Wait{Text: arg(c.Args, "text"), Ref: arg(c.Args, "element_id")}
	wt.NetworkIdle, _ = c.Args["network_idle"].(bool)
	if ms := integer(c.Args["timeout_ms"]); ms > 0 {
		wt.Timeout = time.Duration(min(ms, 60000)) * time.Millisecond
	}
	met := false
	out, err := w.live(ctx, c, "Waited", func(s *chrome.Session) (*chrome.Observation, error) {
		obs, ok, err := s.Wait(ctx, wt)
		met = ok
		return obs, err
	})
	if err == nil && out.Result != nil && out.Result["ok"] != false {
		out.Result["met"] = met
		if !met {
			out.Summary = "The wait ran out; " + strings.TrimPrefix(out.Summary, "Waited; ")
		}
	}
	return out, err
}

// answerDialog accepts or dismisses the page's dialog.
func (w *browse) answerDialog(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	accept, _ := c.Args["accept"].(bool)
	text := arg(c.Args, "text")
	verb := "Dismissed the dialog"
	if accept {
		verb = "Accepted the dialog"
	}
	return w.live(ctx, c, verb, func(s *chrome.Session) (*chrome.Observation, error) {
		return s.AnswerDialog(ctx, accept, text)
	})
}

// switchTab makes another tab current; closeTab closes one. Tabs are
// numbered from 1 in facts and arguments.
func (w *browse) switchTab(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	n := integer(c.Args["tab"])
	return w.live(ctx, c, fmt.Sprintf("Switched to tab %d", n), func(s *chrome.Session) (*chrome.Observation, error) {
		return s.SwitchTab(ctx, int(n)-1)
	})
}

func (w *browse) closeTab(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	n := integer(c.Args["tab"])
	return w.live(ctx, c, fmt.Sprintf("Closed tab %d", n), func(s *chrome.Session) (*chrome.Observation, error) {
		return s.CloseTab(ctx, int(n)-1)
	})
}

// upload chooses files of the server's upload directory for a file field.
func (w *browse) upload(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	ref := arg(c.Args, "element_id")
	var names []string
	if list, ok := c.Args["files"].([]any); ok {
		for _, v := range list {
			if s, ok := v.(string); ok {
				names = append(names, s)
			}
		}
	}
	return w.live(ctx, c, "Chose "+plural.S(len(names), "file"), func(s *chrome.Session) (*chrome.Observation, error) {
		return s.Upload(ctx, ref, names)
	})
}

// script runs page script (the policy rules allow it only where the
// operator enabled it, and ask the user each time).
func (w *browse) script(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	src := arg(c.Args, "script")
	var value string
	out, err := w.live(ctx, c, "Ran the script", func(s *chrome.Session) (*chrome.Observation, error) {
		v, obs, err := s.Eval(ctx, src)
		value = v
		return obs, err
	})
	if err == nil && out.Result != nil && out.Result["ok"] != false {
		out.Result["value"] = value
	}
	return out, err
}

// closeSession ends the live session; the state delta retracts the page.
func (w *browse) closeSession(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	out := &manglecp.Outcome{}
	session := sessionOf(c.Facts)
	if session == "" {
		return noSession(out, c)
	}
	if _, _, err := w.do(out, func() (*chrome.Observation, error) {
		return &chrome.Observation{Session: session}, w.session(ctx, session).End(ctx)
	}); err != nil {
		return nil, err
	}
	out.Result = map[string]any{"closed": session}
	out.Summary = "Ended the browser session " + session + "."
	out.Retract = append(pageRetractions(), protocol.NewFact("browser_session", session, nil))
	return out, ctx.Err()
}

// snapshotPNG takes a PNG of the live page's viewport. The result holds
// it as base64 (media_type, encoding, data), which the MCP bridge turns
// into a resource: the model reads its URI and size, never the data.
func (w *browse) snapshotPNG(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	out := &manglecp.Outcome{}
	session := sessionOf(c.Facts)
	if session == "" {
		return noSession(out, c)
	}
	var png []byte
	obs, msg, err := w.do(out, func() (*chrome.Observation, error) {
		b, obs, err := w.session(ctx, session).Screenshot(ctx)
		png = b
		return obs, err
	})
	if err != nil {
		return nil, err
	}
	if obs == nil || png == nil {
		return problem(out, c.Tool, msg)
	}
	out.Result = map[string]any{"url": obs.URL, "screenshot": map[string]any{"media_type": "image/png", "encoding": "base64",
		"bytes": len(png), "data": base64.StdEncoding.EncodeToString(png)}}
	out.Summary = fmt.Sprintf("Captured a PNG (%d bytes) of %q.", len(png), obs.Title)
	return out, ctx.Err()
}
