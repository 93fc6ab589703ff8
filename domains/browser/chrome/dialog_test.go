package chrome_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/testenv"
)

// dialogApp serves pages that open JavaScript dialogs.
func dialogApp(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(path, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(body))
		})
	}
	page("/{$}", `<!doctype html><title>Dialogs</title>
<button onclick="alert('Saved')">Alert</button>
<button onclick="out.textContent = confirm('Delete it?') ? 'deleted' : 'kept'">Confirm</button>
<button onclick="out.textContent = 'name: ' + prompt('Your name?', 'Ada')">Prompt</button>
<button onclick="for (;;) confirm('again?')">Loop</button>

<p role="status" id="out">none</p>`)
	page("/other", `<!doctype html><title>Other</title><h1>Other page</h1>`)
	page("/onload", `<!doctype html><title>Welcome</title><script>alert('welcome')</script><h1>Loaded</h1>`)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// TestSessionDialogs: in a live session a dialog stays open and the call
// that opened it returns with it (no page); every other call is refused
// with a DialogOpenError until it is answered; the answer (accept,
// dismiss, a prompt's text) returns the page after it. (Headless
// Chromium leaves a page with a beforeunload handler without asking, by
// a link or Page.navigate: no beforeunload case.) A page that opens dialogs while it loads is kept
// with its dialog; a run dismisses them; a page that opens confirm() in
// a loop does not wedge its session, which ends with its tab.
func TestSessionDialogs(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := dialogApp(t)
	b, id := ownSession(t, path, ts.URL+"/") // counts the browser's page targets
	ctx := context.Background()
	status := func(o *chrome.Observation) string {
		if o.Page == nil {
			return "(no page)"
		}
		for _, e := range o.Page.Elements {
			if e.Role == "status" {
				return e.Name
			}
		}
		return o.Page.Title
	}
	for _, c := range []struct {
		name          string
		cause         func() (*chrome.Observation, error)
		dialog        chrome.Dialog
		accept        bool
		text          string
		after         string // the status (or title) after the answer
		refusedBefore bool   // check that calls are refused while it is open
	}{
		{"alert", func() (*chrome.Observation, error) {
			return b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Alert"})
		}, chrome.Dialog{Type: "alert", Message: "Saved"}, true, "", "none", true},
		{"confirm accepted", func() (*chrome.Observation, error) {
			return b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Confirm"})
		}, chrome.Dialog{Type: "confirm", Message: "Delete it?"}, true, "", "deleted", false},
		{"confirm dismissed", func() (*chrome.Observation, error) {
			return b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Confirm"})
		}, chrome.Dialog{Type: "confirm", Message: "Delete it?"}, false, "", "kept", false},
		{"prompt", func() (*chrome.Observation, error) {
			return b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Prompt"})
		}, chrome.Dialog{Type: "prompt", Message: "Your name?", DefaultPrompt: "Ada"}, true, "Grace", "name: Grace", false},
	} {
		start := time.Now()
		o, err := c.cause()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		took := time.Since(start)
		if o.Dialog == nil || o.Page != nil || *o.Dialog != c.dialog {
			t.Fatalf("%s: dialog %+v, page %v", c.name, o.Dialog, o.Page != nil)
		}
		if c.refusedBefore {
			var de *chrome.Error
			if _, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Confirm"}); !(errors.As(err, &de) && de.Kind == chrome.DialogOpen) || de.Dialog.Message != "Saved" {
				t.Errorf("%s: a click while it is open: %v", c.name, err)
			}
			if _, _, err := b.Session("ada", id).Read(ctx, 0); !(errors.As(err, &de) && de.Kind == chrome.DialogOpen) {
				t.Errorf("%s: a read while it is open: %v", c.name, err)
			}
			if _, err := b.Session("ada", id).Navigate(ctx, ts.URL+"/other"); !(errors.As(err, &de) && de.Kind == chrome.DialogOpen) {
				t.Errorf("%s: a navigation while it is open: %v", c.name, err)
			}
			tabs, err := b.Session("ada", id).Tabs(ctx)
			if err != nil || len(tabs) != 1 || tabs[0].Dialog == nil {
				t.Errorf("%s: tabs while it is open: %v %+v", c.name, err, tabs)
			}
		}
		a, err := b.Session("ada", id).AnswerDialog(ctx, c.accept, c.text)
		if err != nil || a.Dialog != nil {
			t.Fatalf("%s: answer: %v %+v", c.name, err, a)
		}
		if got := status(a); got != c.after {
			t.Errorf("%s: after the answer %q, want %q", c.name, got, c.after)
		}
		t.Logf("%s: the call returned the dialog in %v", c.name, took.Round(time.Millisecond))
	}
	if _, err := b.Session("ada", id).AnswerDialog(ctx, true, ""); chrome.KindOf(err) != chrome.NoDialog {
		t.Errorf("answer with no dialog: %v", err)
	}
	if _, err := b.Session("eve", id).AnswerDialog(ctx, true, ""); chrome.KindOf(err) != chrome.NotOwner {
		t.Errorf("another identity answers: %v", err)
	}

	// A dialog while the page loads: the session is kept with it.
	o, err := b.OpenSession(ctx, "ada", ts.URL+"/onload")
	if err != nil || !o.Live || o.Dialog == nil || o.Dialog.Message != "welcome" {
		t.Fatalf("open a page that alerts as it loads: %v %+v", err, o)
	}
	if a, err := b.Session("ada", o.Session).AnswerDialog(ctx, true, ""); err != nil || a.Page == nil || a.Page.Title != "Welcome" {
		t.Errorf("answer the load's alert: %v %+v", err, a)
	}
	// A run dismisses it.
	if r, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/onload"}); err != nil || r.Title != "Welcome" || r.Dialog != nil {
		t.Errorf("a run of a page that alerts: %v %+v", err, r)
	}

	// confirm() in a loop: every answer brings the next; the session
	// still ends, with its tab.
	if err := b.Session("ada", o.Session).End(ctx); err != nil {
		t.Fatal(err)
	}
	targets0, err := chrome.PageTargets(b)
	if err != nil {
		t.Fatal(err)
	}
	loop, err := b.OpenSession(ctx, "ada", ts.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	o, err = b.Session("ada", loop.Session).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Loop"})
	if err != nil || o.Dialog == nil || o.Dialog.Message != "again?" {
		t.Fatalf("loop: %v %+v", err, o)
	}
	for i := range 3 {
		if a, err := b.Session("ada", loop.Session).AnswerDialog(ctx, i%2 == 0, ""); err != nil || a.Dialog == nil {
			t.Fatalf("loop answer %d: %v %+v", i, err, a)
		}
	}
	start := time.Now()
	if err := b.Session("ada", loop.Session).End(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("the loop's session ended in %v", time.Since(start).Round(time.Millisecond))
	if n, err := chrome.PageTargets(b); err != nil || n != targets0 {
		t.Errorf("%d page targets after the loop's session ended, %d before (%v)", n, targets0, err)
	}
	// The browser goes on.
	if _, err := b.Session("ada", id).Navigate(ctx, ts.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Confirm"}); err != nil || o.Dialog == nil {
		t.Errorf("after the loop: %v %+v", err, o)
	}
}

// TestDialogInAnotherTab: a dialog a tab of the session opens while
// another tab is current (a page a click opened, a moment after it
// loaded) is recorded on its tab: the tab list shows it, switching to the
// tab returns it, and the answer shows the tab's page. A page that opens
// a dialog before it could be made a tab (as it loads) cannot be
// attached (every command waits for the dialog): it is closed, and the
// session goes on.
func TestDialogInAnotherTab(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Opener</title><a href="/early" target="_blank">Early</a><a href="/late" target="_blank">Late</a>`))
	})
	for _, p := range []struct{ path, script string }{
		{"/early", `alert('early')`},
		{"/late", `setTimeout(() => alert('late'), 1500)`},
	} {
		mux.HandleFunc(p.path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(`<!doctype html><title>Popup</title><h1>Popup</h1><script>` + p.script + `</script>`))
		})
	}
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	b, id := liveSession(t, path, ts.URL+"/")
	ctx := context.Background()

	o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Late"})
	if err != nil || o.TabOpened != 1 || o.Dialog != nil {
		t.Fatalf("click: %v %+v", err, o)
	}
	var tabs []chrome.TabInfo
	testenv.Poll(5*time.Second, func() bool { // the dialog opens 1.5 s after the page loaded
		tabs, err = b.Session("ada", id).Tabs(ctx)
		return err != nil || len(tabs) != 2 || tabs[1].Dialog != nil
	})
	if err != nil || len(tabs) != 2 || tabs[1].Dialog == nil || tabs[1].Dialog.Message != "late" || !tabs[0].Current {
		t.Fatalf("tabs: %v %+v", err, tabs)
	}
	if o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Late"}); err != nil || o.Dialog != nil {
		t.Errorf("the current tab acts while another has a dialog: %v %+v", err, o)
	}
	o, err = b.Session("ada", id).SwitchTab(ctx, 1)
	if err != nil || o.Dialog == nil || o.Dialog.Message != "late" {
		t.Fatalf("switch: %v %+v", err, o)
	}
	o, err = b.Session("ada", id).AnswerDialog(ctx, true, "")
	if err != nil || o.Page == nil || o.Page.Title != "Popup" {
		t.Fatalf("answer: %v %+v", err, o)
	}

	if _, err := b.Session("ada", id).SwitchTab(ctx, 0); err != nil {
		t.Fatal(err)
	}
	tabs0, err := b.Session("ada", id).Tabs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o, err = b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "Early"})
	if err != nil || o.TabOpened != 0 || o.PopupsClosed != 1 || o.Dialog != nil || o.Page == nil {
		t.Fatalf("a page with a dialog as it loads: %v %+v", err, o)
	}
	if tabs, err := b.Session("ada", id).Tabs(ctx); err != nil || len(tabs) != len(tabs0) {
		t.Errorf("tabs after it: %v %+v", err, tabs)
	}
}
