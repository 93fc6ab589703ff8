package chrome_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/domains/browser/internal/testapp"
)

// formTablePage is a local page with a form, a table, an alert, a status
// message and a dialog; its Flood button starts an endless console flood.
const formTablePage = `<!doctype html><html><head><title>Orders admin</title></head><body>
<h1>Orders</h1>
<div role="alert">Payment service degraded</div>
<p role="status">3 orders loaded</p>
<form aria-label="New order">
  <label for="cust">Customer</label> <input id="cust" name="cust" required value="Ada">
  <label for="qty">Quantity</label> <input id="qty" name="qty" type="number" aria-invalid="true" value="-1">
  <label for="ship">Shipping</label>
  <select id="ship"><option>Standard</option><option selected>Express</option></select>
  <label><input type="checkbox" id="gift" checked> Gift wrap</label>
  <button type="submit">Place order</button>
</form>
<table>
 <thead><tr><th>Order</th><th>Customer</th><th>Total</th></tr></thead>
 <tbody>
  <tr><th scope="row">A-17</th><td>Ada</td><td>42.00</td></tr>
  <tr><th scope="row">B-08</th><td>Grace</td><td>13.50</td></tr>
  <tr><th scope="row">C-99</th><td>Ada</td><td>7.25</td></tr>
 </tbody>
</table>
<a href="/help">Help</a>
<dialog open aria-label="Cookie notice">We use cookies <button>OK</button></dialog>
<button id="flood" onclick="setInterval(() => { for (let i = 0; i < 2000; i++) console.error('flood ' + i) }, 1)">Flood</button>
</body></html>`

func formTableApp(t testing.TB) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(formTablePage))
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestReadSessionPage: a live session's page read as its accessibility
// tree: headings, fields with labels, values, required and invalid
// states, options, table cells with their headers, alert, status,
// dialog; bounded; the queries return the matching elements and rows;
// and reading still answers while the page floods its console.
func TestReadSessionPage(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := formTableApp(t)
	b, id := liveSession(t, path, ts.URL+"/")
	ctx := context.Background()
	p, _, err := b.Session("ada", id).Read(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Title != "Orders admin" || p.Truncated {
		t.Errorf("title %q truncated %v", p.Title, p.Truncated)
	}
	find := func(role, name string) *chrome.PageElement {
		for i := range p.Elements {
			if p.Elements[i].Role == role && p.Elements[i].Name == name {
				return &p.Elements[i]
			}
		}
		t.Errorf("no %s %q in %+v", role, name, p.Elements)
		return &chrome.PageElement{}
	}
	if h := find("heading", "Orders"); h.Level != 1 {
		t.Errorf("heading %+v", h)
	}
	if f := find("textbox", "Customer"); f.Value != "Ada" || !f.Required || f.Invalid {
		t.Errorf("customer %+v", f)
	}
	if f := find("spinbutton", "Quantity"); f.Value != "-1" || !f.Invalid {
		t.Errorf("quantity %+v", f)
	}
	sel := find("combobox", "Shipping")
	if o := find("option", "Express"); !o.Selected {
		t.Errorf("option %+v (select %+v)", o, sel)
	}
	if c := find("checkbox", "Gift wrap"); !c.Checked {
		t.Errorf("checkbox %+v", c)
	}
	find("button", "Place order")
	find("link", "Help")
	find("alert", "Payment service degraded")
	find("status", "3 orders loaded")
	find("dialog", "Cookie notice")
	if c := find("cell", "Grace"); c.RowHeader != "B-08" || c.ColHeader != "Customer" || c.Row != 3 || c.Col != 2 {
		t.Errorf("cell %+v", c)
	}
	for _, e := range p.Elements {
		if e.ID == "" || e.ID[:2] != "ax" {
			t.Errorf("element id %q", e.ID)
		}
	}
	// Ids are stable across reads.
	p2, _, err := b.Session("ada", id).Read(ctx, 0)
	if err != nil || len(p2.Elements) != len(p.Elements) || p2.Elements[3].ID != p.Elements[3].ID {
		t.Errorf("second read: %v", err)
	}
	// Bounded.
	small, _, err := b.Session("ada", id).Read(ctx, 5)
	if err != nil || len(small.Elements) != 5 || small.Total != p.Total || !small.Truncated {
		t.Errorf("bounded read: %v, %d of %d", err, len(small.Elements), small.Total)
	}
	// Queries.
	if m, n := p.Match("ada", 10); n < 3 || len(m) != n {
		t.Errorf("match ada: %d %+v", n, m)
	}
	rows, n := p.Rows("Ada", 1)
	if n != 2 || len(rows) != 3 || rows[0].Name != "A-17" {
		t.Errorf("rows of Ada: %d %+v", n, rows)
	}
	// Another identity is refused.
	if _, _, err := b.Session("eve", id).Read(ctx, 0); err == nil {
		t.Error("another identity read the session")
	}
	// A console flood does not wedge the read (the tab runs without the
	// DOM domain; the accessibility tree needs none).
	if fo, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "flood"}); err != nil || fo.ConsoleTotal < 1000 {
		t.Fatalf("click flood: %v %+v", err, fo)
	}
	for i := range 3 {
		start := time.Now()
		fp, fobs, err := b.Session("ada", id).Read(ctx, 0)
		took := time.Since(start)
		if err != nil || took > 8*time.Second || fp.Title != "Orders admin" {
			t.Fatalf("read %d under a console flood: %v after %v", i, err, took)
		}
		t.Logf("read %d under flood: %v, %d elements, console %d of %d", i, took.Round(time.Millisecond), len(fp.Elements), len(fobs.Console), fobs.ConsoleTotal)
	}
	t.Logf("%d elements: %+v", len(p.Elements), p.Elements)
}

// refsPage has repeated, long, spaced and empty names, and a checkbox, a
// switch and radio buttons.
const refsPage = `<!doctype html><html><head><title>Refs</title></head><body>
<ul><li>One <button onclick="this.textContent='Deleted'">Delete</button></li>
<li>Two <button onclick="this.textContent='Deleted'">Delete</button></li></ul>
<button id="spaced">  Save
    draft  </button>
<a href="#long">` + "A link whose accessible name is much longer than sixty bytes, so its ref is clipped" + `</a>
<input id="noname">
<label><input type="checkbox" id="news"> Newsletter</label>
<div role="switch" aria-checked="true" aria-label="Dark mode" tabindex="0" style="width:40px;height:20px;background:#ccc"
  onclick="this.setAttribute('aria-checked', this.getAttribute('aria-checked') === 'true' ? 'false' : 'true')"></div>
<label><input type="radio" name="size" id="small" checked> Small</label>
<label><input type="radio" name="size" id="large"> Large</label>
<p id="out"></p>
</body></html>`

// TestRefs: element refs are names (whitespace collapsed, clipped to 60
// bytes), roles for unnamed elements, with " #2" on repeats; a session's
// actions take refs, ax ids and the old JavaScript ids; check sets a
// checkbox, a switch and a radio button; an unknown ref is an
// ElementNotFound; and the login job is done with refs only.
func TestRefs(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(refsPage))
	}))
	t.Cleanup(ts.Close)
	b, id := liveSession(t, path, ts.URL+"/")
	ctx := context.Background()
	p, _, err := b.Session("ada", id).Read(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	byRef := map[string]chrome.PageElement{}
	for _, e := range p.Elements {
		refs = append(refs, e.Ref)
		byRef[e.Ref] = e
	}
	for _, c := range []struct{ ref, role string }{
		{"Delete", "button"}, {"Delete #2", "button"}, {"Save draft", "button"},
		{"A link whose accessible name is much longer than sixty bytes", "link"},
		{"textbox", "textbox"}, {"Newsletter", "checkbox"}, {"Dark mode", "switch"},
		{"Small", "radio"}, {"Large", "radio"},
	} {
		if e, ok := byRef[c.ref]; !ok || e.Role != c.role {
			t.Errorf("ref %q: %+v (refs %q)", c.ref, e, refs)
		}
	}
	for _, r := range refs {
		if len(r) > 60 {
			t.Errorf("ref %q is %d bytes", r, len(r))
		}
	}
	state := func(ref string) chrome.PageElement {
		p, _, err := b.Session("ada", id).Read(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Elements {
			if e.Ref == ref {
				return e
			}
		}
		return chrome.PageElement{}
	}
	type want struct {
		ref     string // read after the action
		name    string
		checked bool
	}
	for _, c := range []struct {
		name string
		act  chrome.Act
		want want
	}{
		{"click the second of two", chrome.Act{Kind: "click", ElementID: "Delete #2"}, want{"Delete", "Delete", false}},
		{"fill an unnamed field", chrome.Act{Kind: "fill", ElementID: "textbox", Value: "typed"}, want{"textbox", "", false}},
		{"check a checkbox", chrome.Act{Kind: "check", ElementID: "Newsletter", Value: "true"}, want{"Newsletter", "Newsletter", true}},
		{"check it again", chrome.Act{Kind: "check", ElementID: "Newsletter", Value: "true"}, want{"Newsletter", "Newsletter", true}},
		{"turn a switch off", chrome.Act{Kind: "check", ElementID: "Dark mode", Value: "false"}, want{"Dark mode", "Dark mode", false}},
		{"choose a radio button", chrome.Act{Kind: "check", ElementID: "Large", Value: "true"}, want{"Large", "Large", true}},
		{"by ax id", chrome.Act{Kind: "click", ElementID: byRef["Delete"].ID}, want{"Deleted", "Deleted", false}},
		{"by JavaScript id", chrome.Act{Kind: "check", ElementID: "news", Value: "false"}, want{"Newsletter", "Newsletter", false}},
	} {
		if _, err := b.Session("ada", id).Act(ctx, &c.act); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if e := state(c.want.ref); e.Name != c.want.name || e.Checked != c.want.checked {
			t.Errorf("%s: after it %+v, want %+v", c.name, e, c.want)
		}
	}
	if e := state("textbox"); e.Value != "typed" {
		t.Errorf("the unnamed field holds %q", e.Value)
	}
	for _, c := range []struct {
		name string
		act  chrome.Act
	}{
		{"unknown ref", chrome.Act{Kind: "click", ElementID: "Nope"}},
		{"unknown ax id", chrome.Act{Kind: "click", ElementID: "ax999999"}},
	} {
		if _, err := b.Session("ada", id).Act(ctx, &c.act); chrome.KindOf(err) != chrome.ElementNotFound {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	for _, c := range []struct {
		name string
		act  chrome.Act
	}{
		{"uncheck a radio button", chrome.Act{Kind: "check", ElementID: "Large", Value: "false"}},
		{"check a button", chrome.Act{Kind: "check", ElementID: "Save draft", Value: "true"}},
		{"check with a bad value", chrome.Act{Kind: "check", ElementID: "Newsletter", Value: "yes"}},
	} {
		if _, err := b.Session("ada", id).Act(ctx, &c.act); chrome.KindOf(err) != chrome.CannotCheck {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	// The login job with refs only (no read first: the refs are looked
	// up on first use).
	login := testapp.Login(t)
	lb, lid := liveSession(t, path, login.URL+"/")
	for _, step := range []chrome.Act{{Kind: "fill", ElementID: "Email", Value: "ada@example.com"},
		{Kind: "fill", ElementID: "Password", Value: "s3cret"}, {Kind: "click", ElementID: "Sign in"}} {
		o, err := lb.Session("ada", lid).Act(ctx, &step)
		if err != nil {
			t.Fatalf("%s %s: %v", step.Kind, step.ElementID, err)
		}
		if step.Kind == "click" && o.Title != "Dashboard" {
			t.Errorf("after Sign in: %q", o.Title)
		}
	}
}

// hugePage builds 100,000 elements (25,000 list items, each with a
// button and a link, and a text field every 25 items) after a heading
// and an alert.
const hugePage = `<!doctype html><title>Huge</title><body><h1>Inventory</h1><div role="alert">Stock is low</div>
<p role="status" id="out">idle</p><ul id="list"></ul><script>
const parts = [];
for (let i = 0; i < 25000; i++) parts.push('<li><button onclick="out.textContent=\'took ' + i + '\'">Take ' + i + '</button><a href="#i' + i + '">Item ' + i + '</a>' + (i % 25 === 0 ? '<input aria-label="Note ' + i + '">' : '') + '</li>');
document.getElementById('list').innerHTML = parts.join('');
</script>`

// TestHugePageIsReadBounded: a page of 100,000 elements is read with
// bounded work (the first elements, element by element, instead of the
// whole accessibility tree, which did not come back within 120 s on
// such a page); its refs work.
func TestHugePageIsReadBounded(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(hugePage))
	}))
	t.Cleanup(ts.Close)
	// A browser of its own: beside the tests sharing one, the huge page's
	// load waited behind theirs past its limit on a busy machine.
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: needChromium(t)}))
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	var m0, m1 goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&m0)
	start := time.Now()
	o, err := b.OpenSession(ctx, "ada", ts.URL+"/")
	took := time.Since(start)
	goruntime.ReadMemStats(&m1)
	if err != nil || !o.Live || o.Page == nil {
		t.Fatalf("open: %v %+v", err, o)
	}
	p := o.Page
	if len(p.Elements) != chrome.DefaultMaxPageElements || !p.Truncated || p.Total <= len(p.Elements) {
		t.Errorf("%d elements of %d, truncated %v", len(p.Elements), p.Total, p.Truncated)
	}
	refs := map[string]chrome.PageElement{}
	for _, e := range p.Elements {
		refs[e.Ref] = e
	}
	for _, c := range []struct{ ref, role string }{
		{"Inventory", "heading"}, {"Stock is low", "alert"}, {"Take 3", "button"}, {"Item 3", "link"}, {"Note 25", "textbox"},
	} {
		if e, ok := refs[c.ref]; !ok || e.Role != c.role {
			t.Errorf("ref %q: %+v", c.ref, e)
		}
	}
	t.Logf("open: %v, %d of %d elements, %d MB allocated", took.Round(time.Millisecond), len(p.Elements), p.Total, (m1.TotalAlloc-m0.TotalAlloc)>>20)
	goruntime.GC()
	goruntime.ReadMemStats(&m0)
	start = time.Now()
	if _, _, err := b.Session("ada", o.Session).Read(ctx, 0); err != nil {
		t.Fatal(err)
	}
	took = time.Since(start)
	goruntime.ReadMemStats(&m1)
	t.Logf("read: %v, %d KB allocated", took.Round(time.Millisecond), (m1.TotalAlloc-m0.TotalAlloc)>>10)
	a, err := b.Session("ada", o.Session).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Take 3"})
	if err != nil || a.Page == nil {
		t.Fatalf("click by ref: %v %+v", err, a)
	}
	found := false
	for _, e := range a.Page.Elements {
		found = found || e.Role == "status" && e.Name == "took 3"
	}
	if !found {
		t.Errorf("the click did not reach the button: %+v", a.Page.Elements[:4])
	}
}

// TestScriptReadMatchesTree: a page over the size at which the
// accessibility tree is no longer read (its elements are read by script)
// reads as the same page under it does: roles, names, values, states,
// table cells and their headers, alerts, status, dialogs.
func TestScriptReadMatchesTree(t *testing.T) {
	t.Parallel()
	padded := strings.Replace(formTablePage, "</body>", `<div hidden>`+strings.Repeat("<span>x</span>", 6000)+`</div></body>`, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Query().Has("padded") {
			_, _ = w.Write([]byte(padded))
			return
		}
		_, _ = w.Write([]byte(formTablePage))
	}))
	t.Cleanup(ts.Close)
	b := chrome.SharedBrowser(t)
	ctx := context.Background()
	type want struct {
		role, name, value            string
		level                        int
		required, invalid, checked   bool
		selected                     bool
		row, col                     int
		rowHeader, colHeader, parent string // parent: its role
	}
	wants := []want{
		{role: "heading", name: "Orders", level: 1},
		{role: "alert", name: "Payment service degraded"},
		{role: "status", name: "3 orders loaded"},
		{role: "form", name: "New order"},
		{role: "textbox", name: "Customer", value: "Ada", required: true, parent: "form"},
		{role: "spinbutton", name: "Quantity", value: "-1", invalid: true, parent: "form"},
		{role: "combobox", name: "Shipping", value: "Express", parent: "form"},
		{role: "option", name: "Express", selected: true, parent: "combobox"},
		{role: "checkbox", name: "Gift wrap", checked: true, parent: "form"},
		{role: "button", name: "Place order", parent: "form"},
		{role: "cell", name: "Grace", row: 3, col: 2, rowHeader: "B-08", colHeader: "Customer", parent: "row"},
		{role: "link", name: "Help"},
		{role: "dialog", name: "Cookie notice"},
		{role: "button", name: "OK", parent: "dialog"},
	}
	for _, c := range []struct{ name, url string }{{"tree", "/"}, {"script", "/?padded=1"}} {
		o, err := b.OpenSession(ctx, "ada", ts.URL+c.url)
		if err != nil || o.Page == nil {
			t.Fatalf("%s: %v %+v", c.name, err, o)
		}
		p := o.Page
		if p.Truncated || p.Total != len(p.Elements) {
			t.Errorf("%s: %d of %d, truncated %v", c.name, len(p.Elements), p.Total, p.Truncated)
		}
		byID := map[string]chrome.PageElement{}
		for _, e := range p.Elements {
			byID[e.ID] = e
		}
		for _, w := range wants {
			var got *chrome.PageElement
			for i := range p.Elements {
				if e := &p.Elements[i]; e.Role == w.role && e.Name == w.name {
					got = e
					break
				}
			}
			if got == nil {
				t.Errorf("%s: no %s %q", c.name, w.role, w.name)
				continue
			}
			g := want{role: got.Role, name: got.Name, value: got.Value, level: got.Level, required: got.Required,
				invalid: got.Invalid, checked: got.Checked, selected: got.Selected, row: got.Row, col: got.Col,
				rowHeader: got.RowHeader, colHeader: got.ColHeader, parent: byID[got.Parent].Role}
			if g != w {
				t.Errorf("%s: %+v, want %+v", c.name, g, w)
			}
		}
		if err := b.Session("ada", o.Session).End(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
