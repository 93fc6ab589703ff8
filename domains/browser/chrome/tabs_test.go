package chrome_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
)

// TestFormTabsAndSelect: a whole form filled in one call (text fields
// and a select), a select option chosen alone, an unknown option
// refused, a second tab listed and switched to, and the session ended.
func TestFormTabsAndSelect(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := formTableApp(t)
	b, id := liveSession(t, path, ts.URL+"/")
	ctx := context.Background()
	if _, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Customer", Value: "Grace"}, {ElementID: "qty", Value: "3"}, {ElementID: "Shipping", Value: "Standard"}, {ElementID: "Gift wrap", Value: "false"}}, ""); err != nil {
		t.Fatal(err)
	}
	value := func(role, name string) string {
		p, _, err := b.Session("ada", id).Read(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Elements {
			if e.Role == role && e.Name == name {
				return e.Value
			}
		}
		return "(none)"
	}
	if c, q, s := value("textbox", "Customer"), value("spinbutton", "Quantity"), value("combobox", "Shipping"); c != "Grace" || q != "3" || s != "Standard" {
		t.Errorf("after the form fill: %q %q %q", c, q, s)
	}
	p, _, err := b.Session("ada", id).Read(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range p.Elements {
		if e.Ref == "Gift wrap" && e.Checked {
			t.Errorf("the form fill left Gift wrap checked")
		}
	}
	if _, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "select", ElementID: "ship", Value: "Express"}); err != nil {
		t.Fatal(err)
	}
	if s := value("combobox", "Shipping"); s != "Express" {
		t.Errorf("after select: %q", s)
	}
	if _, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "select", ElementID: "ship", Value: "Teleport"}); chrome.KindOf(err) != chrome.NoSuchOption {
		t.Errorf("unknown option: %v", err)
	}
	if _, err := b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "nope", Value: "x"}}, ""); chrome.KindOf(err) != chrome.ElementNotFound {
		t.Errorf("unknown field: %v", err)
	}
	// Tabs.
	if _, err := b.Session("ada", id).OpenTab(ctx, ts.URL+"/second"); err != nil {
		t.Fatal(err)
	}
	tabs, err := b.Session("ada", id).Tabs(ctx)
	if err != nil || len(tabs) != 2 || !tabs[1].Current || tabs[1].URL != ts.URL+"/second" || tabs[0].Title != "Orders admin" {
		t.Fatalf("tabs: %v %+v", err, tabs)
	}
	o, err := b.Session("ada", id).SwitchTab(ctx, 0)
	if err != nil || o.URL != ts.URL+"/" {
		t.Fatalf("switch: %v %+v", err, o)
	}
	if s := value("combobox", "Shipping"); s != "Express" {
		t.Errorf("the first tab kept its state? %q", s)
	}
	if _, err := b.Session("ada", id).SwitchTab(ctx, 5); chrome.KindOf(err) != chrome.NoSuchTab {
		t.Errorf("tab 5: %v", err)
	}
	if _, err := b.Session("eve", id).Tabs(ctx); chrome.KindOf(err) != chrome.NotOwner {
		t.Errorf("another identity: %v", err)
	}
	// close_session.
	if err := b.Session("ada", id).End(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Session("ada", id).Tabs(ctx); chrome.KindOf(err) != chrome.SessionGone {
		t.Errorf("after EndSession: %v", err)
	}
}

// TestPagesOpenedBecomeTabs: pages a session's page opens (a
// target=_blank link, window.open) become tabs of the session while it
// has fewer than MaxSessionTabs (Observation.TabOpened), beyond that
// they are closed; a page opened on a host off the allow-list is held
// to it; the tabs end with the session.
func TestPagesOpenedBecomeTabs(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	var offList atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { offList.Add(1) }))
	t.Cleanup(other.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Opener</title>
<a href="/report" target="_blank">Open report</a>
<button onclick="window.open('/report?pop=1')">Pop</button>
<button onclick="window.open('%s/')">Away</button>`, other.URL)
	})
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Report</title><h1>Quarterly report</h1>`))
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path, MaxSessionTabs: 4, AllowedHosts: []string{u.Host}}))
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	if _, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/report"}); err != nil { // a warm browser
		t.Fatal(err)
	}
	targets0, err := chrome.PageTargets(b)
	if err != nil {
		t.Fatal(err)
	}
	open, err := b.OpenSession(ctx, "ada", ts.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	id := open.Session
	for _, c := range []struct {
		click        string
		opened       int // Observation.TabOpened
		closed, tabs int
	}{
		{"Open report", 1, 0, 2},
		{"Pop", 2, 0, 3},
		{"Away", 3, 0, 4},
		{"Pop", 0, 1, 4}, // at the limit
	} {
		st := time.Now()
		o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: c.click})
		t.Logf("%s %v", c.click, time.Since(st))
		if err != nil {
			t.Fatalf("%s: %v", c.click, err)
		}
		if o.TabOpened != c.opened || o.PopupsClosed != c.closed || o.Page == nil || o.Page.Title != "Opener" {
			t.Errorf("%s: opened %d closed %d page %+v, want opened %d closed %d", c.click, o.TabOpened, o.PopupsClosed, o.Page, c.opened, c.closed)
		}
		tabs, err := b.Session("ada", id).Tabs(ctx)
		if err != nil || len(tabs) != c.tabs || !tabs[0].Current {
			t.Errorf("%s: tabs %v %+v", c.click, err, tabs)
		}
	}
	o, err := b.Session("ada", id).SwitchTab(ctx, 1)
	if err != nil || o.Page == nil || o.Page.Title != "Report" || o.URL != ts.URL+"/report" {
		t.Fatalf("switch to the opened tab: %v %+v", err, o)
	}
	// The opened tab acts like the others.
	if o, err := b.Session("ada", id).Navigate(ctx, ts.URL+"/"); err != nil || o.Title != "Opener" {
		t.Errorf("navigate in the opened tab: %v %+v", err, o)
	}
	if o, err := b.Session("ada", id).SwitchTab(ctx, 3); err != nil || o.Page == nil || o.Page.Title == "Report" {
		t.Errorf("the tab off the allow-list: %v %+v", err, o)
	}
	if n := offList.Load(); n != 0 {
		t.Errorf("the server off the allow-list got %d requests", n)
	}
	if n, _ := chrome.PageTargets(b); n != targets0+4 {
		t.Errorf("%d page targets with 4 session tabs, %d before", n, targets0)
	}
	if err := b.Session("ada", id).End(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := chrome.PageTargets(b); n != targets0 {
		t.Errorf("%d page targets after the session ended, %d before", n, targets0)
	}
}

// TestPageClosesItsTab: a tab whose page closes itself (window.close(),
// as a sign-in popup does) leaves the session, which goes on in the tab
// before it; a page closed between calls is dropped by the next call.
func TestPageClosesItsTab(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Opener</title><a href="/closer" target="_blank">Open</a>`))
	})
	mux.HandleFunc("/closer", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Closer</title><button onclick="window.close()">Close</button>
<button onclick="setTimeout(() => window.close(), 50)">Close later</button>`))
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	b, id := liveSession(t, path, ts.URL+"/")
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		close string
	}{{"during the call", "Close"}, {"after it", "Close later"}} {
		o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Open"})
		if err != nil || o.TabOpened != 1 {
			t.Fatalf("%s: open: %v %+v", c.name, err, o)
		}
		if o, err := b.Session("ada", id).SwitchTab(ctx, 1); err != nil || o.Title != "Closer" {
			t.Fatalf("%s: switch: %v %+v", c.name, err, o)
		}
		o, err = b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: c.close})
		if err != nil {
			t.Fatalf("%s: close: %v", c.name, err)
		}
		closed := o.TabsClosed
		if closed == 0 { // closed after the call: the next call drops it
			o, err = b.Session("ada", id).PressKey(ctx, "Tab")
			if err != nil {
				t.Fatalf("%s: the call after: %v", c.name, err)
			}
			closed = o.TabsClosed
		}
		if closed != 1 || o.Page == nil || o.Page.Title != "Opener" || o.Title != "Opener" {
			t.Errorf("%s: closed %d, page %+v", c.name, closed, o)
		}
		tabs, err := b.Session("ada", id).Tabs(ctx)
		if err != nil || len(tabs) != 1 || !tabs[0].Current || tabs[0].Title != "Opener" {
			t.Errorf("%s: tabs %v %+v", c.name, err, tabs)
		}
	}
}
