package chrome_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp/domains/browser/chrome"
)

// countingServer is a server the browser must never reach: it counts the
// connections made to it (so WebSocket, preconnects and requests that
// never send a full request count too) and answers every request with a
// secret, readable from any origin.
type countingServer struct {
	*httptest.Server
	conns atomic.Int64
	mu    sync.Mutex
	paths []string
}

const secret = "SECRET-OF-THE-BLOCKED-HOST"

func newCountingServer(t *testing.T, addr string) *countingServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	cs := &countingServer{}
	cs.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		cs.paths = append(cs.paths, r.URL.Path)
		cs.mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Content-Type", "text/html")
		_, _ = fmt.Fprintf(w, "<title>%s</title>%s", secret, secret)
	}))
	cs.Listener.Close()
	cs.Listener = ln
	cs.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			cs.conns.Add(1)
		}
	}
	cs.Start()
	t.Cleanup(cs.Close)
	return cs
}

// channelsApp serves a page that tries every channel a page has to reach
// other: the tab's own requests, a popup, dedicated, shared and service
// workers, a same-site and a cross-site (out-of-process) frame, WebSocket
// from the page and from a worker, EventSource, beacons and prefetches.
// Whatever a channel reads it writes to the console. The page then keeps
// a request open for a while so that the workers have time to act.
func channelsApp(t *testing.T, other string) *httptest.Server {
	t.Helper()
	wsOther := "ws" + strings.TrimPrefix(other, "http")
	tryAll := fmt.Sprintf(`
const other = %q, wsOther = %q;
const report = (what, p) => p.then(r => r.text ? r.text() : r).then(t => console.log(what + ': ' + t), e => console.log(what + ' failed'));
report('fetch', fetch(other + '/fetch'));
try { const ws = new WebSocket(wsOther + '/ws'); ws.onmessage = e => console.log('ws: ' + e.data); } catch (e) {}
try { new EventSource(other + '/sse'); } catch (e) {}
try { navigator.sendBeacon(other + '/beacon', 'x'); } catch (e) {}
`, other, wsOther)
	page := `<!doctype html><title>channels</title>
<link rel="prefetch" href="OTHER/prefetch"><link rel="preconnect" href="OTHER">
<img src="OTHER/img">
<iframe src="OTHER/frame"></iframe>
<iframe src="CROSS/inner"></iframe>
<script>
TRYALL
window.open(other + '/popup');
window.open('/popup-local');
const w = new Worker('/worker.js'); w.onmessage = e => console.log('dedicated: ' + e.data);
try { const s = new SharedWorker('/shared.js'); s.port.onmessage = e => console.log('shared: ' + e.data); s.port.start(); } catch (e) { console.log('no shared worker'); }
if (navigator.serviceWorker) navigator.serviceWorker.register('/sw.js').then(() => navigator.serviceWorker.ready).then(r => console.log('sw ready'), e => console.log('sw failed ' + e));
navigator.serviceWorker && navigator.serviceWorker.addEventListener('message', e => console.log('sw: ' + e.data));
fetch('/hold');
</script>`
	var mux http.ServeMux
	serve := func(path, ctype, body string) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			_, _ = w.Write([]byte(body))
		})
	}
	js := "text/javascript"
	workerJS := strings.ReplaceAll(tryAll, "console.log(what", "postMessage(what")
	var cross string
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		p := strings.ReplaceAll(page, "TRYALL", tryAll)
		p = strings.ReplaceAll(p, "OTHER", other)
		_, _ = w.Write([]byte(strings.ReplaceAll(p, "CROSS", cross)))
	})
	serve("/inner", "text/html", `<img src="`+other+`/inner-img"><script>`+tryAll+`</script>`)
	serve("/popup-local", "text/html", `<script>`+tryAll+`</script>`)
	serve("/worker.js", js, workerJS)
	serve("/shared.js", js, `onconnect = ev => { const port = ev.ports[0]; const postMessage = m => port.postMessage(m); `+workerJS+` };`)
	serve("/sw.js", js, `
self.addEventListener('install', e => { self.skipWaiting(); e.waitUntil(fetch(`+fmt.Sprintf("%q", other+"/sw-install")+`).catch(() => {})); });
self.addEventListener('activate', e => e.waitUntil(self.clients.claim()));
const postMessage = m => self.clients.matchAll({includeUncontrolled: true}).then(cs => cs.forEach(c => c.postMessage(m)));
`+workerJS)
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	})
	ts := httptest.NewServer(&mux)
	t.Cleanup(ts.Close)
	// The cross-site frame: the same server under the name localhost, a
	// different site than 127.0.0.1, so an out-of-process frame.
	cross = strings.Replace(ts.URL, "127.0.0.1", "localhost", 1)
	return ts
}

// elsewhere are the servers a page must not reach: another loopback
// address (the default allow-list), and the allowed address on a port
// that is not allowed (an allow-list of the app's host:port).
var elsewhere = []struct {
	name  string
	other string // listen address of the server that must not be reached
	hosts func(app string) []string
}{
	{"other host", "127.0.0.2:0", func(string) []string { return nil }},
	{"other port", "127.0.0.1:0", func(app string) []string {
		_, port, _ := net.SplitHostPort(app)
		return []string{"127.0.0.1:" + port, "localhost:" + port}
	}},
}

// TestEveryTargetIsHeldToTheAllowList: a page on an allowed host tries
// every channel to a host that is not allowed (another loopback address,
// and the same address on a port that is not allowed); the other server
// sees no connection at all and nothing it would answer reaches the
// observation.
func TestEveryTargetIsHeldToTheAllowList(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	for _, tc := range elsewhere {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			other := newCountingServer(t, tc.other)
			ts := channelsApp(t, other.URL)
			b := chrome.New(chrome.Budgeted(chrome.Config{Path: path, AllowedHosts: tc.hosts(ts.Listener.Addr().String())}))
			defer b.Close()
			obs, err := b.Run(context.Background(), chrome.Task{URL: ts.URL + "/"})
			if err != nil {
				t.Fatal(err)
			}
			// Late requests of closing targets: once the browser is
			// closed (its processes gone), none can come.
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			other.mu.Lock()
			paths := append([]string(nil), other.paths...)
			other.mu.Unlock()
			if n := other.conns.Load(); n != 0 {
				t.Errorf("the host that is not allowed got %d connections (requests %v)", n, paths)
			}
			for _, c := range obs.Console {
				if strings.Contains(c.Message, secret) {
					t.Errorf("console fact carries the blocked host's answer: %q", c.Message)
				}
			}
			if strings.Contains(obs.Title+obs.Text, secret) {
				t.Errorf("page carries the blocked host's answer: %q %q", obs.Title, obs.Text)
			}
			// The channels ran (the test cannot pass because a worker never
			// started) and failed.
			var all strings.Builder
			for _, c := range obs.Console {
				all.WriteString(c.Message + "\n")
			}
			for _, ran := range []string{"dedicated: fetch failed", "shared: fetch failed", "sw: fetch failed", "WebSocket connection to"} {
				if !strings.Contains(all.String(), ran) {
					t.Errorf("no %q in the console: %s", ran, all.String())
				}
			}
			// The refusals are reported: the tab's own requests and the
			// connections of its other targets that the gate refused.
			if obs.BlockedTotal < 5 || len(obs.Blocked) == 0 {
				t.Errorf("blocked %d: %v", obs.BlockedTotal, obs.Blocked)
			}
			t.Logf("blocked %d (%d popups closed); console: %+v", obs.BlockedTotal, obs.PopupsClosed, obs.Console)
		})
	}
}
