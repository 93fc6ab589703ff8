package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

func floodApp(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<title>fine</title><p>fine</p>`))
	})
	mux.HandleFunc("/flood", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<title>flood</title><script>for (let i = 0; i < 100000; i++) console.error('flood ' + i);</script>`))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<title>slow</title>`))
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func (e *env) openPage(t *testing.T, url string) (*protocol.InvokeResponse, error) {
	t.Helper()
	resp := e.evaluate(t, "observe", []protocol.Fact{protocol.NewFact("current_url", url)})
	open := find(resp, "open_page")
	if open == nil {
		t.Fatalf("observe offers %v, no open_page", names(resp))
	}
	return e.sess.Invoke(context.Background(), &protocol.InvokeRequest{MacroID: open.MacroID, Args: map[string]any{"url": url}})
}

// TestOpenPageFloodIsCapped: open_page of a page logging 100,000 console
// errors answers with (at most) the first 100 as facts and says so; open_page of
// another page then answers quickly (before: execution_failed after 26 s,
// and every later open_page failed).
func TestOpenPageFloodIsCapped(t *testing.T) {
	t.Parallel()
	needChromium(t)
	app := floodApp(t)
	e := newEnv(t, browser.Config{})
	start := time.Now()
	res, err := e.openPage(t, app.URL+"/flood")
	if err != nil {
		t.Fatalf("flood: %v after %v", err, time.Since(start))
	}
	console, _ := res.Result["console"].(map[string]any)
	events := 0
	for _, f := range res.StateDelta.Assert {
		if f.Pred == "console_event" {
			events++
		}
	}
	kept, _ := res.Result["kept"].(string)
	if events < 90 || events > 100 || toInt(console["total"]) < 100000 || !strings.Contains(kept, "first 100 of at least 100000 console messages") {
		t.Errorf("flood: %d console facts, result %v", events, res.Result)
	}
	took := time.Since(start)
	start = time.Now()
	if res, err := e.openPage(t, app.URL+"/"); err != nil || res.Result["ok"] != true || time.Since(start) > testenv.Budget(8*time.Second) {
		t.Errorf("open_page after the flood: %v %v after %v", err, res, time.Since(start))
	}
	t.Logf("flood answered in %v (%s); next page in %v", took.Round(time.Millisecond), kept, time.Since(start).Round(time.Millisecond))
}

// TestBrowserRestartIsReported: when the browser's process is killed the
// manifest's x-browser says it is unavailable and the server is degraded
// (so /readyz answers 503) until it is back; then open_page works.
func TestBrowserRestartIsReported(t *testing.T) {
	needChromium(t)
	app := floodApp(t)
	e := newEnv(t, browser.Config{Config: chrome.Config{HealthInterval: 500 * time.Millisecond}})
	if _, err := e.openPage(t, app.URL+"/"); err != nil {
		t.Fatal(err)
	}
	var pid int
	for _, p := range testenv.ChildPIDs(t) {
		cmd, _ := os.ReadFile("/proc/" + p + "/cmdline")
		if strings.Contains(string(cmd), "remote-debugging") {
			pid, _ = strconv.Atoi(p)
		}
	}
	if pid == 0 {
		t.Fatal("no browser process")
	}
	var mu sync.Mutex
	var seen []string
	unsub := e.srv.OnManifestChange(func() {
		m := e.srv.Manifest()
		x, _ := m.Extensions["x-browser"].(map[string]any)
		mu.Lock()
		seen = append(seen, string(m.Status)+" "+strconv.FormatBool(x["available"] == true))
		mu.Unlock()
	})
	defer unsub()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		if !testenv.Poll(30*time.Second, ok) {
			t.Fatalf("%s: not within %v (status %s, x-browser %v)", what, testenv.Budget(30*time.Second), e.srv.Status(), e.srv.Manifest().Extensions["x-browser"])
		}
	}
	waitFor("degraded", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			if s == "degraded false" {
				return true
			}
		}
		return false
	})
	waitFor("ready again", func() bool {
		x, _ := e.srv.Manifest().Extensions["x-browser"].(map[string]any)
		return e.srv.Status() == protocol.StatusReady && x["available"] == true && toInt(x["restarts"]) == 1
	})
	if res, err := e.openPage(t, app.URL+"/"); err != nil || res.Result["ok"] != true {
		t.Errorf("open_page after the restart: %v %v", err, res)
	}
	mu.Lock()
	t.Logf("manifest states: %v; reason while down: degraded", seen)
	mu.Unlock()
}

// TestOpenPageBusyIsRateLimited: beyond the page and queue bounds,
// open_page is refused with x-browser_busy (429, recoverable) and
// retry_after_ms.
func TestOpenPageBusyIsRateLimited(t *testing.T) {
	t.Parallel()
	needChromium(t)
	app := floodApp(t)
	e := newEnv(t, browser.Config{Config: chrome.Config{MaxPages: 1, MaxQueued: -1}})
	if _, err := e.openPage(t, app.URL+"/"); err != nil { // start the browser
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := e.openPage(t, app.URL+"/slow")
			errs <- err
		}()
	}
	busy := 0
	for range 4 {
		err := <-errs
		if err == nil {
			continue
		}
		pe, ok := protocol.AsError(err)
		if !ok || pe.Code != browser.CodeBrowserBusy || !pe.Recoverable || pe.RetryAfterMS == nil || *pe.RetryAfterMS <= 0 {
			t.Errorf("refused with %v", err)
			continue
		}
		busy++
	}
	if busy == 0 {
		t.Error("no open_page was refused")
	}
}
