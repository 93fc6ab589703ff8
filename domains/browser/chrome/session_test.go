package chrome_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/domains/browser/internal/testapp"
	"github.com/manglecp/manglecp/internal/testenv"
)

// TestSessionLoginJob: the two-page job done as separate calls on one
// live session (open, fill, fill, click); the cookie set by Sign in
// lasts, a second tab of the session sees it, another identity is
// refused, and an idle session is reaped with its tabs (what Close
// leaves: TestCloseEndsEverything).
func TestSessionLoginJob(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := testapp.Login(t)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path, SessionIdle: testenv.Budget(3 * time.Second), MaxSessionsPerIdentity: 2}))
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()

	// A warm browser: its own first tab is counted before sessions.
	if _, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	targets0, err := chrome.PageTargets(b)
	if err != nil {
		t.Fatal(err)
	}

	obs, err := b.OpenSession(ctx, "ada", ts.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	id := obs.Session
	if !strings.HasPrefix(id, "bs-") || obs.Title != "Sign in" {
		t.Fatalf("session %q title %q", id, obs.Title)
	}
	for _, step := range []chrome.Act{
		{Kind: "fill", ElementID: "email", Value: "ada@example.com"},
		{Kind: "fill", ElementID: "password", Value: "s3cret"},
	} {
		o, err := b.Session("ada", id).Act(ctx, &step)
		if err != nil {
			t.Fatalf("%s %s: %v", step.Kind, step.ElementID, err)
		}
		if o.Session != id || o.Title != "Sign in" {
			t.Fatalf("after %s: session %q title %q", step.ElementID, o.Session, o.Title)
		}
	}
	o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "signin"})
	if err != nil {
		t.Fatal(err)
	}
	if !o.Action.Changed || o.Title != "Dashboard" || !strings.Contains(o.Text, "North 4,210") || !strings.HasSuffix(o.URL, "/dashboard") {
		t.Fatalf("after Sign in: changed %v title %q url %q text %q %+v %+v %+v", o.Action.Changed, o.Title, o.URL, o.Text, o.Requests, o.Console, o.Blocked)
	}
	// Request ids go on counting across the calls of a session.
	for _, r := range o.Requests {
		if r.ID == "r1" {
			t.Errorf("request id r1 reused in a later call: %+v", o.Requests)
		}
	}

	// Another identity is refused; an unknown session is gone.
	if _, err := b.Session("eve", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "signin"}); chrome.KindOf(err) != chrome.NotOwner {
		t.Errorf("another identity: %v", err)
	}
	if _, err := b.Session("ada", "bs-0000000000000000").Act(ctx, &chrome.Act{Kind: "click", ElementID: "x"}); chrome.KindOf(err) != chrome.SessionGone {
		t.Errorf("unknown session: %v", err)
	}

	// A second tab of the session shares its cookie; a fresh session
	// does not.
	o, err = b.Session("ada", id).OpenTab(ctx, ts.URL+"/dashboard")
	if err != nil || o.Title != "Dashboard" {
		t.Fatalf("second tab: %v %+v", err, o)
	}
	other, err := b.OpenSession(ctx, "ada", ts.URL+"/dashboard")
	if err != nil || other.Title != "Sign in" {
		t.Fatalf("a new session saw the cookie: %v %+v", err, other)
	}
	if n := b.SessionCount(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
	if n, _ := chrome.PageTargets(b); n != targets0+3 {
		t.Errorf("%d page targets with 3 session tabs, %d before", n, targets0)
	}
	// A third session of the identity ends its least recently used one.
	third, err := b.OpenSession(ctx, "ada", ts.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "signin"}); chrome.KindOf(err) != chrome.SessionGone {
		t.Errorf("evicted session: %v", err)
	}
	if err := b.Session("ada", third.Session).End(ctx); err != nil {
		t.Fatal(err)
	}

	// The idle one is reaped with its tab.
	testenv.Poll(5*time.Second+testenv.Budget(3*time.Second), func() bool { return b.SessionCount() == 0 })
	if n := b.SessionCount(); n != 0 {
		t.Errorf("%d sessions after the idle timeout", n)
	}
	// Chromium drops a closed tab's target a moment later (on a loaded
	// machine, seconds).
	n := 0
	testenv.Poll(5*time.Second, func() bool { n, _ = chrome.PageTargets(b); return n == targets0 })
	if n != targets0 {
		t.Errorf("%d page targets after the sessions ended, %d before", n, targets0)
	}
	if _, err := b.Session("ada", other.Session).Act(ctx, &chrome.Act{Kind: "click", ElementID: "signin"}); chrome.KindOf(err) != chrome.SessionGone {
		t.Errorf("reaped session: %v", err)
	}

}

// TestSessionLimits: the server's session limit refuses a session beyond
// it with a BusyError (no identity's session is ended for another's), an
// ended session answers SessionGoneError, and calls on one session from
// many goroutines run one at a time without failing.
func TestSessionLimits(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := testapp.Login(t)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path, MaxSessions: 2}))
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	a, err := b.OpenSession(ctx, "a", ts.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.OpenSession(ctx, "b", ts.URL+"/"); err != nil {
		t.Fatal(err)
	}
	var busy *chrome.Error
	if _, err := b.OpenSession(ctx, "c", ts.URL+"/"); !(errors.As(err, &busy) && busy.Kind == chrome.Busy) || busy.RetryAfter <= 0 {
		t.Errorf("a third session on a server of two: %v", err)
	}
	if n := b.SessionCount(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}

	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := b.Session("a", a.Session).Act(ctx, &chrome.Act{Kind: "fill", ElementID: "email", Value: strings.Repeat("x", i+1)})
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}

	if err := b.Session("b", a.Session).End(ctx); chrome.KindOf(err) != chrome.NotOwner {
		t.Errorf("ending another identity's session: %v", err)
	}
	if err := b.Session("a", a.Session).End(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Session("a", a.Session).Act(ctx, &chrome.Act{Kind: "click", ElementID: "signin"}); chrome.KindOf(err) != chrome.SessionGone {
		t.Errorf("ended session: %v", err)
	}
	if _, err := b.OpenSession(ctx, "c", ts.URL+"/"); err != nil {
		t.Errorf("a session after one ended: %v", err)
	}
}

// liveSession opens a live session of identity "ada" on url in the
// test binary's shared browser (chrome.SharedBrowser; path is the
// Chromium the test looked up). The session ends with the test.
func liveSession(t *testing.T, path, url string) (*chrome.Browser, string) {
	t.Helper()
	return openSession(t, chrome.SharedBrowser(t), url)
}

// ownSession is liveSession in a browser of the test's own, for a test
// that counts what the whole browser holds (its targets, its sessions);
// the browser closes with the test.
func ownSession(t *testing.T, path, url string) (*chrome.Browser, string) {
	t.Helper()
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path}))
	t.Cleanup(func() { _ = b.Close() })
	return openSession(t, b, url)
}

// openSession opens a live session of "ada" on url in b, ended with the
// test.
func openSession(t *testing.T, b *chrome.Browser, url string) (*chrome.Browser, string) {
	t.Helper()
	obs, err := b.OpenSession(context.Background(), "ada", url)
	if err != nil || !obs.Live {
		t.Fatalf("open %s: %v %+v", url, err, obs)
	}
	t.Cleanup(func() { _ = b.Session("ada", obs.Session).End(context.Background()) })
	return b, obs.Session
}

// TestEveryCallReturnsThePage: each live-session call returns the page
// after it (Observation.Page), whose refs the next call takes; a form is
// filled and submitted in one call.
func TestEveryCallReturnsThePage(t *testing.T) {
	t.Parallel()
	ts := testapp.Login(t)
	b := chrome.SharedBrowser(t)
	ctx := context.Background()
	open, err := b.OpenSession(ctx, "ada", ts.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	id := open.Session
	t.Cleanup(func() { _ = b.Session("ada", id).End(ctx) })
	for _, c := range []struct {
		name  string
		call  func() (*chrome.Observation, error)
		title string // of the Page
		ref   string // one of its refs
	}{
		{"open", func() (*chrome.Observation, error) { return open, nil }, "Sign in", "Email"},
		{"fill", func() (*chrome.Observation, error) {
			return b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "fill", ElementID: "Email", Value: "nobody"})
		}, "Sign in", "Password"},
		{"fill the form and submit", func() (*chrome.Observation, error) {
			return b.Session("ada", id).FillForm(ctx, []chrome.Field{{ElementID: "Email", Value: "ada@example.com"}, {ElementID: "Password", Value: "s3cret"}}, "Sign in")
		}, "Dashboard", "4,210"},
		{"navigate", func() (*chrome.Observation, error) { return b.Session("ada", id).Navigate(ctx, ts.URL+"/?again=1") }, "Sign in", "Sign in"},
		{"back", func() (*chrome.Observation, error) { return b.Session("ada", id).Back(ctx) }, "Dashboard", "North"},
		{"press a key", func() (*chrome.Observation, error) { return b.Session("ada", id).PressKey(ctx, "Tab") }, "Dashboard", "Revenue"},
		{"wait for a text", func() (*chrome.Observation, error) {
			o, _, err := b.Session("ada", id).Wait(ctx, chrome.Wait{Text: "North", Timeout: time.Second})
			return o, err
		}, "Dashboard", "Region"},
		{"open a tab", func() (*chrome.Observation, error) { return b.Session("ada", id).OpenTab(ctx, ts.URL+"/?tab=2") }, "Sign in", "Email"},
		{"switch tabs", func() (*chrome.Observation, error) { return b.Session("ada", id).SwitchTab(ctx, 0) }, "Dashboard", "North"},
	} {
		o, err := c.call()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if o.Page == nil {
			t.Fatalf("%s: no page", c.name)
		}
		found := false
		for _, e := range o.Page.Elements {
			found = found || e.Ref == c.ref
		}
		if o.Page.Title != c.title || !found {
			t.Errorf("%s: page %q without ref %q: %+v", c.name, o.Page.Title, c.ref, o.Page.Elements)
		}
	}
}
