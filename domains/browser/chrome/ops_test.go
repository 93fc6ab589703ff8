package chrome_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/testenv"
)

// opsApp is the small site of the ops tests: two linked pages, a page
// counting its loads, a hover tooltip, late content and a slow request,
// file inputs that show what they got, and a download. served is
// signalled when the download's body was written.
func opsApp(t *testing.T) (ts *httptest.Server, served <-chan string) {
	t.Helper()
	var loads atomic.Int64
	dl := make(chan string, 4)
	name := fmt.Sprintf("manglecp-dl-%d.bin", time.Now().UnixNano())
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, title, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body>%s</body></html>", title, body)
	}
	mux.HandleFunc("/one", func(w http.ResponseWriter, r *http.Request) {
		page(w, "One", `<h1>Page one</h1><a id="next" href="/two">To two</a>`)
	})
	mux.HandleFunc("/two", func(w http.ResponseWriter, r *http.Request) { page(w, "Two", `<h1>Page two</h1>`) })
	mux.HandleFunc("/count", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Count", fmt.Sprintf(`<p>load number %d</p>`, loads.Add(1)))
	})
	mux.HandleFunc("/hover", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Hover", `<button id="save" onmouseover="document.getElementById('tip').textContent = 'Tooltip: keeps a draft'">Save draft</button>
<div id="tip"></div>`)
	})
	mux.HandleFunc("/wait", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Wait", `<div id="out"></div><script>
setTimeout(() => { document.getElementById('out').textContent = 'Ready now'; }, 1200);
setTimeout(() => { const b = document.createElement('button'); b.textContent = 'Late button'; document.body.append(b); }, 1500);
</script>`)
	})
	// A request made after the page settled, and one that does not end
	// while the test looks.
	mux.HandleFunc("/idle", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Wait", `<script>setTimeout(() => fetch('/slow?ms=1500'), 800);</script>`)
	})
	mux.HandleFunc("/inflight", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Wait", `<script>fetch('/slow?ms=60000');</script>`)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		d, _ := time.ParseDuration(r.URL.Query().Get("ms") + "ms")
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "done")
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Upload", `<label>Attachment <input type="file" id="one"></label>
<label>Attachments <input type="file" id="many" multiple></label>
<button id="plain">Plain</button><div id="out"></div><script>
for (const el of document.querySelectorAll('input[type=file]'))
  el.addEventListener('change', () => { document.getElementById('out').textContent = 'got ' + [...el.files].map(f => f.name + ':' + f.size).join(','); });
</script>`)
	})
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Download", `<a id="dl" href="/file">Get the file</a>`)
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		_, _ = w.Write(bytes.Repeat([]byte("x"), 4096))
		dl <- name
	})
	ts = httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts, dl
}

// opsSession opens a live session of "ada" on url: in the test
// binary's shared browser for a zero cfg, else in a browser of its own
// with cfg, closed with the test.
func opsSession(t *testing.T, cfg chrome.Config, url string) (*chrome.Browser, string) {
	t.Helper()
	if reflect.ValueOf(cfg).IsZero() {
		return openSession(t, chrome.SharedBrowser(t), url)
	}
	cfg.Path = needChromium(t)
	b := chrome.New(chrome.Budgeted(cfg))
	t.Cleanup(func() { _ = b.Close() })
	return openSession(t, b, url)
}

// TestForwardReloadHover: back then forward between two pages, a
// reload that loads the page again (the server counts it), and a hover
// over a button named by its accessible name that shows its tooltip.
func TestForwardReloadHover(t *testing.T) {
	t.Parallel()
	ts, _ := opsApp(t)
	b, id := opsSession(t, chrome.Config{}, ts.URL+"/one")
	ctx := context.Background()
	if o, err := b.Session("ada", id).Forward(ctx); err != nil || o.Title != "One" {
		t.Fatalf("forward without a later entry: %v %+v", err, o)
	}
	if _, err := b.Session("ada", id).Navigate(ctx, ts.URL+"/two"); err != nil {
		t.Fatal(err)
	}
	if o, err := b.Session("ada", id).Back(ctx); err != nil || o.Title != "One" {
		t.Fatalf("back: %v %+v", err, o)
	}
	if o, err := b.Session("ada", id).Forward(ctx); err != nil || o.Title != "Two" || o.URL != ts.URL+"/two" {
		t.Fatalf("forward: %v %+v", err, o)
	}
	if _, err := b.Session("eve", id).Forward(ctx); chrome.KindOf(err) != chrome.NotOwner {
		t.Errorf("forward by another identity: %v", err)
	}
	if _, _, err := b.Session("ada", id).Eval(ctx, "1"); chrome.KindOf(err) != chrome.ScriptsOff {
		t.Errorf("a script on a server without AllowScripts: %v", err)
	}

	if o, err := b.Session("ada", id).Navigate(ctx, ts.URL+"/count"); err != nil || !strings.Contains(o.Text, "load number 1") {
		t.Fatalf("count page: %v %+v", err, o)
	}
	if o, err := b.Session("ada", id).Reload(ctx); err != nil || !strings.Contains(o.Text, "load number 2") || o.Status != 200 {
		t.Fatalf("reload: %v %+v", err, o)
	}

	if _, err := b.Session("ada", id).Navigate(ctx, ts.URL+"/hover"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, ref string
		want      string // in the page's text after it; "" for an error
	}{
		{"accessible name", "Save draft", "Tooltip: keeps a draft"},
		{"JavaScript id", "save", "Tooltip: keeps a draft"},
		{"unknown", "No such button", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := b.Session("ada", id).Hover(ctx, tt.ref)
			if tt.want == "" {
				if chrome.KindOf(err) != chrome.ElementNotFound {
					t.Errorf("hover %q: %v, want ElementNotFound", tt.ref, err)
				}
				return
			}
			if err != nil || !strings.Contains(o.Text, tt.want) || o.Page == nil {
				t.Errorf("hover %q: %v %+v", tt.ref, err, o)
			}
		})
	}
}

// TestWaitSession: waits for a text the page adds later, an element
// that appears later (by its accessible name), network idle after a
// slow request, all of them at once, and reports a text that never
// comes and a request still in flight as not met; a wait without a
// condition is refused.
func TestWaitSession(t *testing.T) {
	t.Parallel()
	ts, _ := opsApp(t)
	b, id := opsSession(t, chrome.Config{}, ts.URL+"/one")
	ctx := context.Background()
	tests := []struct {
		name, path string
		w          chrome.Wait
		met        bool
	}{
		{"text", "/wait", chrome.Wait{Text: "Ready now", Timeout: 5 * time.Second}, true},
		{"element", "/wait", chrome.Wait{Ref: "Late button", Timeout: 5 * time.Second}, true},
		{"all", "/wait", chrome.Wait{Text: "Ready now", Ref: "Late button", NetworkIdle: true, Timeout: 5 * time.Second}, true},
		{"absent text", "/wait", chrome.Wait{Text: "never there", Timeout: 300 * time.Millisecond}, false},
		{"absent element", "/wait", chrome.Wait{Ref: "Never button", Timeout: 300 * time.Millisecond}, false},
		{"network idle after a late request", "/idle", chrome.Wait{NetworkIdle: true, Timeout: 8 * time.Second}, true},
		{"request in flight", "/inflight", chrome.Wait{NetworkIdle: true, Timeout: 300 * time.Millisecond}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := b.Session("ada", id).Navigate(ctx, ts.URL+tt.path); err != nil {
				t.Fatal(err)
			}
			o, met, err := b.Session("ada", id).Wait(ctx, tt.w)
			if err != nil || met != tt.met || o.Title != "Wait" {
				t.Errorf("wait %+v: met %v, want %v: %v %+v", tt.w, met, tt.met, err, o)
			}
		})
	}
	if _, _, err := b.Session("ada", id).Wait(ctx, chrome.Wait{}); chrome.KindOf(err) != chrome.BadWait {
		t.Errorf("a wait without a condition: %v", err)
	}
}

// TestUploadSession: files of the upload directory reach the page's file
// inputs (names and sizes as the page sees them, one file and several,
// through a symbolic link inside the directory); absolute names, "..",
// symbolic links out of the directory, directories, missing files, too
// many files and an element that is not a file input are refused with
// an UploadError that names no server path; a server without an upload
// directory refuses every upload.
func TestUploadSession(t *testing.T) {
	t.Parallel()
	ts, _ := opsApp(t)
	base := t.TempDir()
	dir := filepath.Join(base, "uploads")
	for name, body := range map[string]string{"uploads/hello.txt": "hello", "uploads/sub/b.csv": "a,b\n1,2\n", "secret.txt": "top secret"} {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"out": "../secret.txt", "abs": filepath.Join(base, "secret.txt"), "passwd": "/etc/passwd", "in.csv": "sub/b.csv"} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	b, id := opsSession(t, chrome.Config{UploadDir: dir}, ts.URL+"/upload")
	ctx := context.Background()

	good := []struct {
		ref   string
		names []string
		want  string
	}{
		{"Attachment", []string{"hello.txt"}, "got hello.txt:5"},
		{"many", []string{"hello.txt", "sub/b.csv"}, "got hello.txt:5,b.csv:8"},
		{"Attachment", []string{"in.csv"}, "got b.csv:8"},
	}
	for _, tt := range good {
		o, err := b.Session("ada", id).Upload(ctx, tt.ref, tt.names)
		if err != nil || !strings.Contains(o.Text, tt.want) {
			t.Errorf("upload %v to %q: %v %+v", tt.names, tt.ref, err, o)
		}
	}

	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = "hello.txt"
	}
	bad := []struct {
		name  string
		ref   string
		names []string
	}{
		{"parent", "Attachment", []string{"../secret.txt"}},
		{"deep parent", "Attachment", []string{"sub/../../secret.txt"}},
		{"absolute", "Attachment", []string{filepath.Join(base, "secret.txt")}},
		{"absolute system file", "Attachment", []string{"/etc/passwd"}},
		{"link out", "Attachment", []string{"out"}},
		{"absolute link out", "Attachment", []string{"abs"}},
		{"link to a system file", "Attachment", []string{"passwd"}},
		{"one good one bad", "many", []string{"hello.txt", "out"}},
		{"directory", "Attachment", []string{"sub"}},
		{"missing", "Attachment", []string{"nothing.txt"}},
		{"empty name", "Attachment", []string{""}},
		{"no files", "Attachment", nil},
		{"too many", "many", eleven},
		{"not a file input", "Plain", []string{"hello.txt"}},
		{"two files to a single input", "Attachment", []string{"hello.txt", "sub/b.csv"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Session("ada", id).Upload(ctx, tt.ref, tt.names)
			var ue *chrome.Error
			if !(errors.As(err, &ue) && ue.Kind == chrome.UploadRefused) {
				t.Fatalf("upload %v: %v, want an UploadError", tt.names, err)
			}
			if strings.Contains(err.Error(), dir) || (strings.Contains(err.Error(), base) && !strings.Contains(tt.name, "absolute")) {
				t.Errorf("the error names a server path: %v", err)
			}
		})
	}
	if _, o, err := b.Session("ada", id).Read(ctx, 0); err != nil || o.Title != "Upload" {
		t.Errorf("the session after the refusals: %v", err)
	}

	off := chrome.New(chrome.Budgeted(chrome.Config{Path: needChromium(t)}))
	t.Cleanup(func() { _ = off.Close() })
	if _, err := off.Session("ada", id).Upload(ctx, "Attachment", []string{"hello.txt"}); chrome.KindOf(err) != chrome.UploadRefused {
		t.Errorf("an upload on a server without an upload directory: %v", err)
	}
}

// TestScreenshotSession: a PNG of the viewport, within the size bound,
// with the observation of the page (and no PNG in it).
func TestScreenshotSession(t *testing.T) {
	t.Parallel()
	ts, _ := opsApp(t)
	b, id := opsSession(t, chrome.Config{}, ts.URL+"/one")
	shot, o, err := b.Session("ada", id).Screenshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if r := img.Bounds(); r.Dx() < 100 || r.Dy() < 100 || len(shot) > chrome.MaxScreenshotBytes {
		t.Errorf("screenshot %v, %d bytes", r, len(shot))
	}
	if o.Title != "One" || o.PNG != nil {
		t.Errorf("observation: title %q, %d PNG bytes", o.Title, len(o.PNG))
	}
	t.Logf("screenshot %v, %d bytes", img.Bounds(), len(shot))
}

// TestEvalSession: scripts run in the page and return JSON (clipped);
// a script that throws, one that loops forever and one whose promise
// never settles are ScriptErrors within the call's limit, and the
// session's next call works.
func TestEvalSession(t *testing.T) {
	t.Parallel()
	ts, _ := opsApp(t)
	limit := testenv.Budget(6 * time.Second) // the call's limit stretched on a loaded machine: the test is that the call stops, not when
	// Room for the sessions of the endless scripts beside the first.
	b, id := opsSession(t, chrome.Config{AllowScripts: true, MaxLoadTime: limit, MaxSessionsPerIdentity: 4}, ts.URL+"/one")
	ctx := context.Background()
	tests := []struct {
		name, script, want string
		fails              bool
	}{
		{"number", "1 + 2", "3", false},
		{"page state", "document.title + ' ' + location.pathname", `"One /one"`, false},
		{"promise", "Promise.resolve({a: [1, 2]})", `{"a":[1,2]}`, false},
		{"async function", "(async () => (await fetch('/two')).status)()", "200", false},
		{"statements", "let n = 0; for (const a of document.links) n++; n", "1", false},
		{"undefined", "void 0", "undefined", false},
		{"NaN", "0 / 0", "NaN", false},
		{"throws", "throw new Error('boom')", "boom", true},
		{"empty", " ", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got, o, err := b.Session("ada", id).Eval(ctx, tt.script)
			took := time.Since(start)
			if took > limit {
				t.Errorf("took %v, over the call's limit %v", took, limit)
			}
			if tt.fails {
				var se *chrome.Error
				if !(errors.As(err, &se) && se.Kind == chrome.ScriptFailed) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%q: %q %v, want a ScriptError with %q", tt.script, got, err, tt.want)
				}
				return
			}
			if err != nil || got != tt.want || o.Title != "One" {
				t.Errorf("%q: %q %v, want %q", tt.script, got, err, tt.want)
			}
		})
	}
	// Scripts that never end, each in a session of its own (they run at
	// once: each waits for its script's time, half the call's limit),
	// whose next call works.
	t.Run("endless", func(t *testing.T) {
		for _, tt := range []struct{ name, script string }{
			{"loop", "while (true) {}"},
			{"promise", "new Promise(() => {})"},
			// The loop runs in a later task, past V8's timeout of the
			// evaluation: it is terminated.
			{"loop later", "new Promise(() => setTimeout(() => { while (true) {} }, 100))"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				_, id := openSession(t, b, ts.URL+"/one")
				start := time.Now()
				got, _, err := b.Session("ada", id).Eval(ctx, tt.script)
				if took := time.Since(start); took > limit {
					t.Errorf("took %v, over the call's limit %v", took, limit)
				}
				var se *chrome.Error
				if !(errors.As(err, &se) && se.Kind == chrome.ScriptFailed) || !strings.Contains(err.Error(), "did not finish") {
					t.Errorf("%q: %q %v, want a ScriptError that it did not finish", tt.script, got, err)
				}
				if got, _, err := b.Session("ada", id).Eval(ctx, "[...document.querySelectorAll('h1')].map(h => h.textContent)"); err != nil || got != `["Page one"]` {
					t.Errorf("after it: %q %v", got, err)
				}
			})
		}
	})
	long, _, err := b.Session("ada", id).Eval(ctx, "'x'.repeat(100000)")
	if err != nil || len(long) > 4096 || !strings.HasPrefix(long, `"xxx`) {
		t.Errorf("a long result: %d bytes, %v", len(long), err)
	}

	// A script that opens a dialog returns at once with it; the session's
	// other calls wait for its answer.
	got, o, err := b.Session("ada", id).Eval(ctx, "confirm('Really delete?') ? 'yes' : 'no'")
	if err != nil || got != "" || o.Dialog == nil || o.Dialog.Type != "confirm" || o.Dialog.Message != "Really delete?" {
		t.Fatalf("a script's dialog: %q %v %+v", got, err, o)
	}
	if _, _, err := b.Session("ada", id).Screenshot(ctx); chrome.KindOf(err) != chrome.DialogOpen {
		t.Errorf("a screenshot with a dialog open: %v", err)
	}
	if _, err := b.Session("ada", id).CloseTab(ctx, 0); chrome.KindOf(err) != chrome.DialogOpen {
		t.Errorf("closing a tab with a dialog open: %v", err)
	}
	if _, err := b.Session("ada", id).AnswerDialog(ctx, true, ""); err != nil {
		t.Fatal(err)
	}
	if got, _, err := b.Session("ada", id).Eval(ctx, "document.title"); err != nil || got != `"One"` {
		t.Errorf("after the dialog: %q %v", got, err)
	}
}

// TestCloseTabSession: closing a tab that is not current keeps the
// current one; closing the current tab makes the one before it current;
// the only tab and a tab that does not exist are TabErrors.
func TestCloseTabSession(t *testing.T) {
	t.Parallel()
	ts, _ := opsApp(t)
	b, id := opsSession(t, chrome.Config{}, ts.URL+"/one")
	ctx := context.Background()
	for _, p := range []string{"/two", "/hover"} {
		if _, err := b.Session("ada", id).OpenTab(ctx, ts.URL+p); err != nil {
			t.Fatal(err)
		}
	}
	titles := func() (out []string, cur int) {
		tabs, err := b.Session("ada", id).Tabs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tabs {
			out = append(out, tb.Title)
			if tb.Current {
				cur = tb.Index
			}
		}
		return out, cur
	}
	steps := []struct {
		close     int
		title     string // of the current tab after it; "" for an error
		tabs      string
		cur       int
		lastError bool
	}{
		{1, "Hover", "One,Hover", 1, false},
		{5, "", "One,Hover", 1, false},
		{-1, "", "One,Hover", 1, false},
		{1, "One", "One", 0, false},
		{0, "", "One", 0, true},
	}
	for _, st := range steps {
		o, err := b.Session("ada", id).CloseTab(ctx, st.close)
		if st.title == "" {
			var te *chrome.Error
			if !(errors.As(err, &te) && te.Kind == chrome.NoSuchTab) || st.lastError != strings.Contains(err.Error(), "only tab") {
				t.Errorf("close %d: %v, want a TabError", st.close, err)
			}
		} else if err != nil || o.Title != st.title {
			t.Errorf("close %d: %v %+v", st.close, err, o)
		}
		if got, cur := titles(); strings.Join(got, ",") != st.tabs || cur != st.cur {
			t.Errorf("after close %d: tabs %v current %d, want %s current %d", st.close, got, cur, st.tabs, st.cur)
		}
	}
	if o, err := b.Session("ada", id).Navigate(ctx, ts.URL+"/two"); err != nil || o.Title != "Two" {
		t.Errorf("the remaining tab: %v %+v", err, o)
	}
}

// TestSessionDownloadsOff: a link to a file sent as an attachment is
// followed (the server sends it) but nothing is written: not in the
// browser user's home (its Downloads folder), the browser's profiles or
// the working directory; the session goes on.
func TestSessionDownloadsOff(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // the browser starts in the test, with this home
	t.Setenv("XDG_DOWNLOAD_DIR", filepath.Join(home, "Downloads"))
	ts, served := opsApp(t)
	b, id := ownSession(t, needChromium(t), ts.URL+"/download")
	ctx := context.Background()
	o, err := b.Session("ada", id).Act(ctx, &chrome.Act{Kind: "click", ElementID: "dl"})
	if err != nil {
		t.Fatal(err)
	}
	var name string
	select {
	case name = <-served:
	case <-time.After(10 * time.Second):
		t.Fatalf("the link was not followed: %+v", o)
	}
	// A further call on the session: a download would have finished.
	if _, o, err := b.Session("ada", id).Read(ctx, 0); err != nil || o.Title != "Download" {
		t.Fatalf("after the download: %v %+v", err, o)
	}
	cwd, _ := os.Getwd()
	roots := []string{home, cwd}
	if m, err := filepath.Glob(filepath.Join(os.TempDir(), "chromedp-runner*")); err == nil {
		roots = append(roots, m...)
	}
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), strings.TrimSuffix(name, ".bin")) {
				t.Errorf("the download was written: %s", p)
			}
			return nil
		})
	}
}
