package chrome_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/testenv"
)

// needChromium returns the Chromium binary or skips/fails the test (see
// internal/testenv). MANGLECP_NO_BROWSER=1 opts out explicitly; CI never
// sets it.
func needChromium(t *testing.T) string {
	t.Helper()
	return needChromiumB(t)
}

func needChromiumB(t testing.TB) string {
	t.Helper()
	if os.Getenv("MANGLECP_NO_BROWSER") == "1" {
		t.Skip("MANGLECP_NO_BROWSER=1: browser tests are turned off")
	}
	return testenv.LookPath(t, chrome.DefaultNames...)
}

// app is the local web app of the browser tests: its page fetches a URL
// that answers 404 and then logs a console error; its form has a button
// that changes the page.
func app(t testing.TB) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><head><title>Orders</title></head><body>
<h1>Orders</h1>
<form id="order" onsubmit="event.preventDefault(); document.getElementById('status').textContent = 'Saved ' + document.getElementById('qty').value;">
  <label for="qty">Quantity</label> <input id="qty" name="qty">
  <button id="save" type="submit">Save order</button>
</form>
<p id="status">Not saved</p>
<script>
fetch('/api/orders').then(r => { if (!r.ok) console.error('Failed to load orders: HTTP ' + r.status); });
</script>
</body></html>`))
	})
	mux.HandleFunc("/cookie", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<script>document.title = document.cookie || 'none'; document.cookie = 'seen=1; max-age=3600'; localStorage.setItem('k', '1');</script>`))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://192.0.2.1/internal", http.StatusFound)
	})
	mux.HandleFunc("/subresource", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<img src="http://192.0.2.1/pixel.png"><script>fetch('http://192.0.2.1/api').catch(e => console.error('blocked fetch'))</script>`))
	})
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", "attachment; filename=x.bin")
		_, _ = w.Write(bytes.Repeat([]byte("x"), 1000))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<p>" + strings.Repeat("big ", 1<<20) + "</p>"))
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: chrome.Disabled}))
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/", true},
		{"https://localhost/x", true},
		{"http://[::1]:9/", true},
		{"file:///etc/passwd", false},
		{"javascript:alert(1)", false},
		{"http://10.0.0.1/", false},
		{"http://example.com/", false},
		{"http://user:pw@127.0.0.1/", false},
		{"ftp://127.0.0.1/", false},
	} {
		_, err := b.CheckURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
	any := chrome.New(chrome.Budgeted(chrome.Config{Path: chrome.Disabled, AllowedHosts: []string{"*"}}))
	if _, err := any.CheckURL("https://example.com/"); err != nil {
		t.Errorf("allowed_hosts [*]: %v", err)
	}
	ported := chrome.New(chrome.Budgeted(chrome.Config{Path: chrome.Disabled, AllowedHosts: []string{"127.0.0.1:8080", "localhost"}}))
	for u, ok := range map[string]bool{"http://127.0.0.1:8080/": true, "http://127.0.0.1:8081/": false, "http://127.0.0.1/": false, "http://localhost:9/": true} {
		if _, err := ported.CheckURL(u); (err == nil) != ok {
			t.Errorf("allowed_hosts [127.0.0.1:8080 localhost]: CheckURL(%q) = %v", u, err)
		}
	}
	if ok, reason := b.Available(); ok || !strings.Contains(reason, "turned off") {
		t.Errorf("Available() = %v, %q", ok, reason)
	}
}

func TestMissingBinaryIsUnavailable(t *testing.T) {
	t.Parallel()
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: "/nonexistent/chromium"}))
	ok, reason := b.Available()
	if ok || strings.Contains(reason, "/nonexistent") {
		t.Fatalf("Available() = %v, %q (want false, without the path)", ok, reason)
	}
	if _, err := b.Run(context.Background(), chrome.Task{URL: "http://127.0.0.1/"}); err == nil {
		t.Fatal("Run without a browser succeeded")
	}
}

func TestRunObservesActsAndCleansUp(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := app(t)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path, MaxPageBytes: 1 << 20}))
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()

	obs, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Status != 200 || obs.Title != "Orders" {
		t.Errorf("status %d title %q", obs.Status, obs.Title)
	}
	var got404 bool
	for _, r := range obs.Requests {
		got404 = got404 || (strings.HasSuffix(r.URL, "/api/orders") && r.Status == 404)
	}
	var gotError bool
	for _, c := range obs.Console {
		gotError = gotError || (c.Level == "error" && strings.Contains(c.Message, "Failed to load orders: HTTP 404"))
	}
	if !got404 || !gotError {
		t.Errorf("404 seen %v, console error seen %v: %+v %+v", got404, gotError, obs.Requests, obs.Console)
	}
	ids := map[string]string{}
	for _, e := range obs.Elements {
		ids[e.ID] = e.Kind
	}
	if ids["save"] != "button" || ids["qty"] != "input" {
		t.Errorf("elements %+v", obs.Elements)
	}

	obs, err = b.Run(ctx, chrome.Task{URL: ts.URL + "/", Act: &chrome.Act{Kind: "fill", ElementID: "qty", Value: "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Action == nil {
		t.Fatal("no action result")
	}
	obs, err = b.Run(ctx, chrome.Task{URL: ts.URL + "/", Act: &chrome.Act{Kind: "click", ElementID: "save"}, Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Action.Changed || !strings.Contains(obs.Text, "Saved") {
		t.Errorf("click: changed %v, text %q", obs.Action.Changed, obs.Text)
	}
	if !bytes.HasPrefix(obs.PNG, []byte("\x89PNG")) {
		t.Errorf("screenshot is not a PNG (%d bytes)", len(obs.PNG))
	}
	_, err = b.Run(ctx, chrome.Task{URL: ts.URL + "/", Act: &chrome.Act{Kind: "click", ElementID: "nope"}})
	var nf *chrome.ElementError
	if !(errors.As(err, &nf) && nf.Kind == chrome.ElementNotFound) {
		t.Errorf("click on a missing element: %v", err)
	}
	// Over the byte budget: stopped with a clear error.
	if _, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/big"}); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("big page: %v", err)
	}
	// A redirect or a subresource to a host that is not allowed is
	// failed by the browser, never sent.
	if o, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/redirect"}); err != nil || !strings.Contains(o.LoadError, "BLOCKED") || len(o.Blocked) == 0 {
		t.Errorf("redirect to a disallowed host: %+v %v", o, err)
	}
	if o, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/subresource"}); err != nil || len(o.Blocked) < 2 {
		t.Errorf("subresources of a disallowed host: %+v %v", o, err)
	}
	// A download is denied, not written.
	if _, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/download"}); err != nil {
		t.Logf("download page: %v", err)
	}
	if home, err := os.UserHomeDir(); err == nil {
		if _, err := os.Stat(filepath.Join(home, "Downloads", "x.bin")); err == nil {
			t.Error("the download was written to ~/Downloads")
		}
	}
	// A timeout stops the run.
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if _, err := b.Run(short, chrome.Task{URL: ts.URL + "/"}); err == nil {
		t.Error("a 1ms run succeeded")
	}

	// Concurrent runs share the browser; each has its own browser
	// context, so a cookie one run sets is not seen by another.
	errs := make(chan error, 3)
	titles := make(chan string, 3)
	for range 3 {
		go func() {
			o, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/cookie"})
			if err == nil {
				titles <- o.Title
			}
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(titles)
	for title := range titles {
		if title != "none" {
			t.Errorf("a run saw another run's cookie: %q", title)
		}
	}
	if o, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/cookie"}); err != nil || o.Title != "none" {
		t.Errorf("a later run saw an earlier cookie: %v %v", o, err)
	}

	if chrome.BrowserPID(b) == 0 {
		t.Error("no Chromium process while the browser runs")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/"}); !errors.Is(err, chrome.ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
	// What Close leaves (processes, goroutines): TestCloseEndsEverything.
}

// TestLeavingDuringStart: a caller whose context ends while Chromium
// starts returns at once; Close then waits for the start and stops the
// browser it made.
func TestLeavingDuringStart(t *testing.T) {
	path := needChromium(t)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := b.Run(ctx, chrome.Task{URL: "http://127.0.0.1:9/"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run: %v", err)
	}
	if d := time.Since(start); d > testenv.Budget(2*time.Second) {
		t.Errorf("Run returned %v after its context ended", d)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitGone(t, testenv.ChildPIDs(t))
}
