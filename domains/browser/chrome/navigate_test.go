package chrome_test

import (
	"context"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/domains/browser/internal/testapp"
)

// TestNavigateSession: a session navigates to another page of the app
// and back, keeping its cookie; file:, data:, chrome:, view-source: and
// javascript: URLs and hosts off the allow-list are refused before the
// browser sees them, and the session goes on.
func TestNavigateSession(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := testapp.Login(t)
	b, id := liveSession(t, path, ts.URL+"/")
	ctx := context.Background()
	for _, step := range []chrome.Act{{Kind: "fill", ElementID: "email", Value: "ada@example.com"},
		{Kind: "fill", ElementID: "password", Value: "s3cret"}, {Kind: "click", ElementID: "signin"}} {
		if _, err := b.Session("ada", id).Act(ctx, &step); err != nil {
			t.Fatal(err)
		}
	}
	// The dashboard needs the cookie: navigating to it shows its title.
	o, err := b.Session("ada", id).Navigate(ctx, ts.URL+"/?again=1")
	if err != nil || o.Title != "Sign in" {
		t.Fatalf("navigate to the form: %v %+v", err, o)
	}
	o, err = b.Session("ada", id).Navigate(ctx, ts.URL+"/dashboard")
	if err != nil || o.Title != "Dashboard" {
		t.Fatalf("navigate to the dashboard with the session's cookie: %v %+v", err, o)
	}
	o, err = b.Session("ada", id).Back(ctx)
	if err != nil || o.URL != ts.URL+"/?again=1" || o.Title != "Sign in" {
		t.Fatalf("back: %v %+v", err, o)
	}
	for _, u := range []string{"file:///etc/passwd", "data:text/html,<h1>x</h1>", "chrome://version",
		"view-source:" + ts.URL + "/", "javascript:alert(1)", "http://example.com/"} {
		if _, err := b.Session("ada", id).Navigate(ctx, u); chrome.KindOf(err) != chrome.URLRefused {
			t.Errorf("%s: %v, want a URLError", u, err)
		}
	}
	if _, err := b.Session("eve", id).Navigate(ctx, ts.URL+"/"); chrome.KindOf(err) != chrome.NotOwner {
		t.Errorf("another identity: %v", err)
	}
	if o, err := b.Session("ada", id).Navigate(ctx, ts.URL+"/dashboard"); err != nil || o.Title != "Dashboard" {
		t.Errorf("after the refusals: %v %+v", err, o)
	}
}

// TestPressKeyAndWaitText: Enter in the password field submits the login
// form (the dashboard follows); an unknown key is refused; waiting for a
// text finds one the page adds later and reports one that never comes.
func TestPressKeyAndWaitText(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := testapp.Login(t)
	b, id := liveSession(t, path, ts.URL+"/")
	ctx := context.Background()
	for _, step := range []chrome.Act{{Kind: "fill", ElementID: "email", Value: "ada@example.com"},
		{Kind: "fill", ElementID: "password", Value: "s3cret"}} {
		if _, err := b.Session("ada", id).Act(ctx, &step); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Session("ada", id).PressKey(ctx, "F13"); chrome.KindOf(err) != chrome.UnknownKey {
		t.Errorf("unknown key: %v", err)
	}
	o, err := b.Session("ada", id).PressKey(ctx, "Enter")
	if err != nil {
		t.Fatal(err)
	}
	if o.Title != "Dashboard" {
		o, found, err := b.Session("ada", id).Wait(ctx, chrome.Wait{Text: "North", Timeout: 3 * time.Second})
		if err != nil || !found || o.Title != "Dashboard" {
			t.Fatalf("Enter did not submit: %v %v %+v", err, found, o)
		}
	}
	o, found, err := b.Session("ada", id).Wait(ctx, chrome.Wait{Text: "4,210", Timeout: 2 * time.Second})
	if err != nil || !found {
		t.Errorf("wait for a present text: %v %v", err, found)
	}
	start := time.Now()
	o, found, err = b.Session("ada", id).Wait(ctx, chrome.Wait{Text: "never there", Timeout: 500 * time.Millisecond})
	if err != nil || found || time.Since(start) > 5*time.Second || o.Title != "Dashboard" {
		t.Errorf("wait for an absent text: %v %v after %v", err, found, time.Since(start))
	}
}
