package chrome_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/testenv"
)

// hostile serves the pages of the hardening tests.
func hostile(t *testing.T) *httptest.Server {
	ts, _ := hostileServed(t)
	return ts
}

// hostileServed is [hostile] with served: served(path) is closed once
// the browser fetched path's page.
func hostileServed(t *testing.T) (ts *httptest.Server, served func(path string) <-chan struct{}) {
	t.Helper()
	mux := http.NewServeMux()
	fetched := map[string]chan struct{}{}
	var once sync.Map
	page := func(path, body string) {
		fetched[path] = make(chan struct{})
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(body))
			if _, done := once.LoadOrStore(path, true); !done {
				close(fetched[path])
			}
		})
	}
	page("/", `<title>fine</title><p>fine</p><button id="b">b</button>`)
	page("/console-flood", `<title>flood</title><script>for (let i = 0; i < 100000; i++) console.error('flood ' + i);</script><p>after</p>`)
	page("/console-flood-frame", `<title>flood</title><body><script>
const f = document.createElement('iframe'); document.body.appendChild(f);
const c = f.contentWindow.console; for (let i = 0; i < 100000; i++) c.error('flood ' + i);</script>`)
	page("/rejection-flood", `<title>flood</title><script>for (let i = 0; i < 100000; i++) Promise.reject(new Error('rejected ' + i));</script>`)
	page("/request-flood", `<title>requests</title><script>for (let i = 0; i < 20000; i++) fetch('/x?' + i).catch(() => {});</script>`)
	page("/x", `x`)
	page("/dom-flood", `<title>dom</title><body><script>
document.body.innerHTML = '<a href="#x">link text</a> '.repeat(20000) + '<p>' + 'word '.repeat(200000) + '</p>';
</script>`)
	page("/memory", `<title>memory</title><script>
const keep = [];
for (;;) { const b = new Uint8Array(32 << 20); b.fill(7); keep.push(b); }
</script>`)
	page("/heap", `<title>heap</title><script>
const keep = [];
for (let i = 0; ; i++) keep.push({i, s: 'x' + i, a: [i, i + 1, i + 2]});
</script>`)
	page("/slow", `<title>slow</title><script>fetch('/hold')</script>`)
	page("/hang", `<title>hang</title><script>console.log('before the loop'); while (true) {}</script>`)
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(1500 * time.Millisecond):
		case <-r.Context().Done():
		}
	})
	ts = httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts, func(path string) <-chan struct{} { return fetched[path] }
}

// TestConsoleFloodIsCappedAndIsolated: a page logging 100,000 console
// errors gets a capped, counted answer fast, a page opened while it runs
// and one opened after it load normally (before: the flood run failed
// after 26 s and every later run of the browser failed).
func TestConsoleFloodIsCappedAndIsolated(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts, served := hostileServed(t)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path}))
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/"}); err != nil { // start the browser
		t.Fatal(err)
	}
	var during atomic.Value
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select { // the flood page is loading (or its run failed: the test says so below)
		case <-served("/console-flood"):
		case <-time.After(testenv.Budget(10 * time.Second)):
		}
		start := time.Now()
		_, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/"})
		during.Store(fmt.Sprintf("%v in %v", err, time.Since(start).Round(time.Millisecond)))
		if err != nil || time.Since(start) > testenv.Budget(8*time.Second) {
			t.Errorf("a page opened during the flood: %v after %v", err, time.Since(start))
		}
	}()
	start := time.Now()
	obs, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/console-flood"})
	took := time.Since(start)
	wg.Wait()
	if err != nil {
		t.Fatalf("flood: %v after %v", err, took)
	}
	if took > testenv.Budget(10*time.Second) {
		t.Errorf("the flood took %v", took)
	}
	if len(obs.Console) != chrome.DefaultMaxConsole || obs.ConsoleTotal < 100000 || !obs.Truncated || !obs.ConsoleFlooded {
		t.Errorf("console kept %d of %d (truncated %v flooded %v)", len(obs.Console), obs.ConsoleTotal, obs.Truncated, obs.ConsoleFlooded)
	}
	if obs.Title != "flood" || obs.Incomplete != "" {
		t.Errorf("title %q incomplete %q", obs.Title, obs.Incomplete)
	}
	for i := range 3 {
		s := time.Now()
		if _, err := b.Run(ctx, chrome.Task{URL: ts.URL + "/"}); err != nil || time.Since(s) > testenv.Budget(8*time.Second) {
			t.Errorf("run %d after the flood: %v after %v", i, err, time.Since(s))
		}
	}
	t.Logf("flood %v: kept %d of %d; during: %v", took.Round(time.Millisecond), len(obs.Console), obs.ConsoleTotal, during.Load())
	// The same through a fresh frame's console, and as unhandled
	// rejections.
	for _, p := range []string{"/console-flood-frame", "/rejection-flood"} {
		start := time.Now()
		obs, err := b.Run(ctx, chrome.Task{URL: ts.URL + p})
		took := time.Since(start)
		if err != nil || took > testenv.Budget(10*time.Second) || len(obs.Console) != chrome.DefaultMaxConsole || obs.ConsoleTotal < 100000 || obs.Incomplete != "" {
			t.Errorf("%s: %v after %v: %+v", p, err, took, obs)
			continue
		}
		t.Logf("%s %v: kept %d of %d", p, took.Round(time.Millisecond), len(obs.Console), obs.ConsoleTotal)
	}
}

// TestDOMFloodIsCapped: a page with 20,000 links and 200,000 words is
// inspected with bounded work: a capped answer fast.
func TestDOMFloodIsCapped(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := hostile(t)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path}))
	defer b.Close()
	start := time.Now()
	obs, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/dom-flood"})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%v after %v", err, took)
	}
	if took > testenv.Budget(15*time.Second) || len(obs.Elements) != chrome.DefaultMaxElements || !obs.Truncated || obs.ElementsTotal < chrome.DefaultMaxElements {
		t.Errorf("took %v, %d of %d elements, truncated %v, text %d bytes, incomplete %q", took, len(obs.Elements), obs.ElementsTotal, obs.Truncated, len(obs.Text), obs.Incomplete)
	}
	t.Logf("DOM flood: %v, %d of at least %d elements, incomplete %q", took.Round(time.Millisecond), len(obs.Elements), obs.ElementsTotal, obs.Incomplete)
}

// TestHungPageAnswersIncomplete: a page whose script never ends gets an
// answer with what was seen and why it is incomplete, within the page's
// time, not a failure; the next page works and the browser is not
// restarted for it.
func TestHungPageAnswersIncomplete(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := hostile(t)
	// The page's time is what the test checks: its own, short and
	// stretched on a loaded machine (with the default, Chromium's start
	// was given 30 s, too little beside two CPU hogs).
	limit := testenv.Budget(8 * time.Second)
	b := chrome.New(chrome.Config{Path: path, MaxLoadTime: limit})
	defer b.Close()
	if _, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil { // start the browser
		t.Fatal(err)
	}
	start := time.Now()
	obs, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/hang"})
	took := time.Since(start)
	if err != nil || !strings.Contains(obs.Incomplete, "did not finish loading") || took > limit+testenv.Budget(5*time.Second) {
		t.Fatalf("hung page: %v %+v after %v", err, obs, took)
	}
	if len(obs.Console) != 1 || obs.Console[0].Message != "before the loop" {
		t.Errorf("console %+v", obs.Console)
	}
	if _, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil {
		t.Errorf("next page: %v", err)
	}
	if h := b.Health(); !h.OK || h.Restarts != 0 {
		t.Errorf("health %+v", h)
	}
	t.Logf("hung page answered in %v: %s", took.Round(time.Millisecond), obs.Incomplete)
}

// TestRequestFloodIsBounded: a page starting 20,000 requests is answered
// (as far as it got, or stopped at its memory limit), the helpers answering its paused requests stay
// bounded, and the next page works.
func TestRequestFloodIsBounded(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := hostile(t)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path}))
	defer b.Close()
	if _, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	// Goroutines of the tests running beside this one come and go: the
	// bound is on the growth over what ran before the flood.
	base := int64(runtime.NumGoroutine())
	var most atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if n := int64(runtime.NumGoroutine()); n > most.Load() {
				most.Store(n)
			}
		}
	}()
	start := time.Now()
	obs, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/request-flood"})
	close(stop)
	<-done
	// 20,000 pending requests can take the renderer over its memory
	// limit: then the answer is that it was stopped.
	var pe *chrome.Error
	if err != nil && !(errors.As(err, &pe) && pe.Kind == chrome.PageFailed) {
		t.Fatalf("request flood: %v after %v", err, time.Since(start))
	}
	if obs == nil {
		obs = &chrome.Observation{Incomplete: err.Error()}
	}
	if most.Load()-base > 300 { // one goroutine per paused request: 546 to 1,104
		t.Errorf("up to %d goroutines, %d before the flood", most.Load(), base)
	}
	if _, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil {
		t.Errorf("next page: %v", err)
	}
	t.Logf("request flood: %v, %d of %d requests, up to %d goroutines, incomplete %q", time.Since(start).Round(time.Millisecond),
		len(obs.Requests), obs.RequestsTotal, most.Load(), obs.Incomplete)
}

// TestHungOrKilledBrowserIsRestarted: a browser that stops answering
// (SIGSTOP) or whose process is killed is detected, reported through
// OnHealth, restarted, reported back, and serves runs again.
func TestHungOrKilledBrowserIsRestarted(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := hostile(t)
	for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			health := make(chan chrome.Health, 10)
			b := chrome.New(chrome.Config{Path: path, HealthInterval: 500 * time.Millisecond,
				OnHealth: func(h chrome.Health) { health <- h }})
			defer b.Close()
			if _, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil {
				t.Fatal(err)
			}
			pid := chrome.BrowserPID(b)
			if pid == 0 {
				t.Fatal("no browser process after a run")
			}
			if err := syscall.Kill(pid, sig); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			select {
			case h := <-health:
				if h.OK || !strings.Contains(h.Reason, "restarted") {
					t.Errorf("first report %+v", h)
				}
				if ok, reason := b.Available(); ok && !strings.Contains(reason, "restart") {
					t.Logf("available again already: %v %q", ok, reason)
				}
			case <-time.After(testenv.Budget(20 * time.Second)):
				t.Fatalf("the failure was not reported within %v", testenv.Budget(20*time.Second))
			}
			detected := time.Since(start)
			select {
			case h := <-health:
				if !h.OK || h.Restarts != 1 {
					t.Errorf("second report %+v", h)
				}
			case <-time.After(testenv.Budget(40 * time.Second)):
				t.Fatalf("the restart was not reported within %v", testenv.Budget(40*time.Second))
			}
			if _, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil {
				t.Errorf("run after the restart: %v", err)
			}
			if now := chrome.BrowserPID(b); now == 0 || now == pid {
				t.Errorf("browser process after the restart %d (before %d)", now, pid)
			}
			t.Logf("%v detected after %v, back after %v", sig, detected.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestPageMemoryIsBounded: a page that keeps allocating is stopped at
// its memory limit with a clear error, and the browser serves the next
// run.
func TestPageMemoryIsBounded(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := hostile(t)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path, PageMemoryMB: 300}))
	defer b.Close()
	// /memory allocates array buffers (outside V8's heap: the renderer's
	// resident memory is watched); /heap allocates objects (V8's heap
	// limit).
	for _, p := range []string{"/memory", "/heap"} {
		start := time.Now()
		_, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + p})
		var pe *chrome.Error
		if !(errors.As(err, &pe) && pe.Kind == chrome.PageFailed) || !strings.Contains(pe.Error(), "300 MiB") {
			t.Errorf("%s: %v after %v", p, err, time.Since(start))
		}
		if _, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil {
			t.Errorf("run after %s: %v", p, err)
		}
		t.Logf("%s stopped after %v: %v", p, time.Since(start).Round(time.Millisecond), err)
	}
}

// TestParallelRunsAreBounded: 24 parallel runs of a page that takes a
// while: at most MaxPages run at a time, the ones beyond the queue get a
// BusyError with a retry time, the browser's processes stay bounded.
func TestParallelRunsAreBounded(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := hostile(t)
	b := chrome.New(chrome.Budgeted(chrome.Config{Path: path, MaxPages: 3, MaxQueued: 3, QueueWait: 4 * time.Second}))
	defer b.Close()
	if _, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	var maxProcs, maxRSS atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			n, rss := processTree([]int{chrome.BrowserPID(b)})
			if int64(n) > maxProcs.Load() {
				maxProcs.Store(int64(n))
			}
			if rss > maxRSS.Load() {
				maxRSS.Store(rss)
			}
		}
	}()
	var ok, busy, other atomic.Int64
	var wg sync.WaitGroup
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/slow"})
			var be *chrome.Error
			switch {
			case err == nil:
				ok.Add(1)
			case (errors.As(err, &be) && be.Kind == chrome.Busy) && be.RetryAfter > 0:
				busy.Add(1)
			default:
				other.Add(1)
				t.Errorf("run: %v", err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	if ok.Load() < 3 || busy.Load() == 0 || other.Load() != 0 {
		t.Errorf("ok %d busy %d other %d", ok.Load(), busy.Load(), other.Load())
	}
	// The browser, its helpers (zygotes, GPU, network, storage), and one
	// renderer per page.
	if maxProcs.Load() > 20 { // measured 14 to 17; before the bound: 84 with 24 runs
		t.Errorf("up to %d browser processes", maxProcs.Load())
	}
	t.Logf("24 parallel runs: %d ok, %d refused busy; at most %d processes, %d MiB", ok.Load(), busy.Load(), maxProcs.Load(), maxRSS.Load()>>20)
}

// processTree counts the processes under roots (and themselves) and sums
// their resident memory.
func processTree(roots []int) (int, int64) {
	n, rss := 0, int64(0)
	var walk func(pid int)
	walk = func(pid int) {
		n++
		if out, err := exec.Command("ps", "-o", "rss=", "-p", strconv.Itoa(pid)).Output(); err == nil {
			kb, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
			rss += kb << 10
		}
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		for _, f := range strings.Fields(string(raw)) {
			if c, err := strconv.Atoi(f); err == nil {
				walk(c)
			}
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return n, rss
}
