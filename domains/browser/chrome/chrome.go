// Package chrome drives one headless Chromium over the Chrome DevTools
// Protocol (with github.com/chromedp/chromedp) for the browser domain.
//
// A [Browser] owns at most one browser process, started on first use and
// stopped by [Browser.Close]. Every [Browser.Run] gets its own browser
// context (an incognito-like profile: no cookies, storage or cache shared
// with other runs), bounded by the caller's context and by
// [Config.MaxLoadTime], and closed before Run returns. Only http and https
// URLs on the allowed hosts load: the first navigation is checked before
// anything starts, and every connection any target of the browser context
// makes (the tab, frames, popups, workers, WebSocket) goes through a gate
// that refuses hosts and ports not on the allow-list (see gate); the tab's
// own requests are also intercepted and failed early. Downloads are denied.
// In a run JavaScript dialogs are dismissed and popups closed.
//
// A live session keeps its browser context and tabs between calls
// (cookies and storage last), each call acting on the current page and
// returning it ([Observation.Page], the accessibility tree with readable
// refs the next call takes). [Browser.OpenSession] opens one and returns
// its id; [Browser.Session] gives the [Session] handle of an identity's
// session id, whose methods are the calls:
//
//	obs, err := b.OpenSession(ctx, owner, "https://shop.example/")
//	s := b.Session(owner, obs.Session)
//	obs, err = s.Act(ctx, &chrome.Act{Kind: "click", ElementID: "Sign in"})
//	obs, err = s.FillForm(ctx, []chrome.Field{{ElementID: "Email", Value: "ada@example.com"}}, "Continue")
//	err = s.End(ctx)
//
// Every call on a handle looks the session up, checks its owner and that
// it is still open, waits for the call under way on it and takes a page
// slot, in one place (see [Session]). In a session a dialog stays open
// until [Session.AnswerDialog] answers it, and pages the page opens
// become tabs of the session (up to [Config.MaxSessionTabs]). Sessions
// belong to an owner, are bounded per owner and per browser, and end on
// request or when idle ([Config.SessionIdle]).
//
// A Browser bounds its work: at most [Config.MaxPages] runs at a time and
// [Config.MaxQueued] waiting (others get a [Busy] error), at most
// [Config.PageMemoryMB] per renderer, capped observations, and a health
// check that restarts a browser that stops answering (reported through
// [Config.OnHealth]).
//
// A call the browser refuses or cannot complete for a reason the caller
// can act on answers an [Error] (about the call: its URL, its session,
// the browser's load, the page) or an [ElementError] (about one element
// of the page); a form fill gathers its fields' in a [FieldErrors]. Their
// messages are safe to show to clients, and [KindOf] says which [Kind]
// an error is:
//
//	switch chrome.KindOf(err) {
//	case chrome.SessionGone: // open the page again
//	case chrome.Busy, chrome.Restarting: // retry after the Error's RetryAfter
//	}
package chrome

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/chromedp"

	textclip "github.com/manglecp/manglecp/internal/clip"
)

// Health is the browser's state as [Config.OnHealth] reports it.
type Health struct {
	// OK is false while the browser is being restarted (or cannot start).
	OK bool
	// Reason says why it is not OK; safe to show to clients.
	Reason string
	// Restarts counts the restarts after failures so far.
	Restarts int
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("chrome: the browser was closed")

// Browser is one lazily started Chromium process shared by all runs. It is
// safe for concurrent use.
type Browser struct {
	cfg    Config
	path   string
	reason string // why there is no browser; "" when there is one
	allow  *allowList
	log    *slog.Logger

	startMu sync.Mutex // serializes starts; held while Chromium launches

	slots  *fairSlots   // MaxPages slots, shared fairly between identities (slots.go)
	avgRun atomic.Int64 // moving average of a run's duration, ns

	mu         sync.Mutex // guards the fields below; never held while launching
	closed     bool
	root       context.Context // chromedp context holding the browser
	rootCancel context.CancelFunc
	allocStop  context.CancelFunc
	monitor    context.CancelFunc // stops the running browser's monitor
	nowhere    *gate              // the default context's proxy: allows nothing
	gen        uint64             // counts the browser processes started
	failedAt   time.Time          // last failed start; retried after a pause
	failure    string
	down       string // why the browser is being restarted; "" when healthy
	restarts   int
	runs       sync.WaitGroup
	monitors   sync.WaitGroup
	tabs       atomic.Uint64 // numbers the runs' sessions: tab1, tab2, ...

	sess sessions // the live sessions (session.go)

	healthMu sync.Mutex    // orders OnHealth calls
	checkNow chan struct{} // asks the monitor for a health check now
	done     chan struct{} // closed by Close
}

// minStartTimeout is the least time Chromium is given to start.
const minStartTimeout = 30 * time.Second

// startTimeout is how long Chromium may take to start and answer: 30 s, or
// one and a half MaxLoadTime when that is longer, so that a machine slow
// enough to need a longer page load (a loaded CI machine, whose tests
// stretch MaxLoadTime by its measured speed) also gets a longer start.
func (b *Browser) startTimeout() time.Duration {
	return max(minStartTimeout, b.cfg.MaxLoadTime*3/2)
}

// launchRetry is how long a failed start keeps the browser unavailable.
const launchRetry = 30 * time.Second

// New resolves the binary and returns a Browser; nothing starts until the
// first Run.
func New(cfg Config) *Browser {
	cfg = cfg.WithDefaults()
	b := &Browser{cfg: cfg, log: cfg.Logger, slots: newFairSlots(cfg.MaxPages, max(cfg.MaxQueued, 0)),
		checkNow: make(chan struct{}, 1), done: make(chan struct{})}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	allow, problems := newAllowList(cfg.AllowedHosts)
	for _, p := range problems {
		b.log.Warn("browser allowed_hosts entry ignored", "error", p.Error())
	}
	b.allow = allow
	switch {
	case cfg.Path == Disabled:
		b.reason = "the browser is turned off in the server configuration (browser_path \"none\")"
	case cfg.Path != "":
		p, err := exec.LookPath(cfg.Path)
		if err != nil {
			b.reason = "the configured browser_path is not an executable Chromium; the server log names it"
			b.log.Warn("browser_path not usable; browser tools are unavailable", "browser_path", cfg.Path, "error", err.Error())
		}
		b.path = p
	default:
		for _, n := range DefaultNames {
			if p, err := exec.LookPath(n); err == nil {
				b.path = p
				break
			}
		}
		if b.path == "" {
			b.reason = "no Chromium found on the server (looked for " + strings.Join(DefaultNames, ", ") +
				"); install it (scripts/deps/chromium.sh) or set browser_path"
		}
	}
	if b.reason == "" {
		b.log.Info("browser available; it starts on first use", "browser_path", b.path)
	}
	return b
}

// Available reports whether runs can start, and why not. It never starts
// the browser: a browser that failed to start is unavailable for a while,
// then tried again; one being restarted is unavailable until it is back.
func (b *Browser) Available() (bool, string) {
	if b.reason != "" {
		return false, b.reason
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false, "the server is shutting down its browser"
	}
	if b.down != "" {
		return false, b.down
	}
	if !b.failedAt.IsZero() && time.Since(b.failedAt) < launchRetry {
		return false, "Chromium failed to start (" + b.failure + "); retrying in a moment"
	}
	return true, ""
}

// Health reports the browser's state now (see [Config.OnHealth]).
func (b *Browser) Health() Health {
	ok, reason := b.Available()
	b.mu.Lock()
	defer b.mu.Unlock()
	return Health{OK: ok, Reason: reason, Restarts: b.restarts}
}

// HostAllowed reports whether pages may load from some port of host (a
// host name or IP literal, without port).
func (b *Browser) HostAllowed(host string) bool { return b.allow.hostAllowed(host) }

// URLAllowed reports whether u's host and port (explicit, or the
// scheme's default) are on the allow-list.
func (b *Browser) URLAllowed(u *url.URL) bool { return b.allow.urlAllows(u) }

// CheckURL parses raw and checks that the browser may open it: http or
// https, a host and port on the allow-list, no credentials in the URL.
func (b *Browser) CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, newError(URLRefused, "the URL does not parse")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, newError(URLRefused, "only http and https URLs may be opened")
	}
	if u.User != nil {
		return nil, newError(URLRefused, "URLs with credentials are not opened")
	}
	if u.Hostname() == "" {
		return nil, newError(URLRefused, "the URL has no host")
	}
	if !b.HostAllowed(u.Hostname()) {
		return nil, errorf(URLRefused, "the host %q is not on the server's allowed_hosts list", clip(u.Hostname(), 100))
	}
	if !b.URLAllowed(u) {
		return nil, errorf(URLRefused, "the port of %q is not on the server's allowed_hosts list", clip(u.Host, 100))
	}
	return u, nil
}

// launchOptions are Chromium's flags. Every browser context the runs
// create sends its traffic through its own gate; the flags make the rest
// of the browser (its default context) go nowhere, keep WebRTC off
// non-proxied UDP, and limit V8's heap per isolate.
func (b *Browser) launchOptions(nowhere string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(b.path),
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
		// A gate that allows nothing: the default context's own requests
		// never leave. Loopback too.
		chromedp.ProxyServer(nowhere),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("js-flags", fmt.Sprintf("--max-old-space-size=%d", max(64, b.cfg.PageMemoryMB/2))),
		// chromedp's defaults (Translate, BlinkGenPropertyTrees), the
		// omnibox popup's WebUI, which gave every browser context a second
		// renderer of about 145 MiB not held to PageMemoryMB (before: 10.4 GB
		// summed RSS for 32 sessions, after: 5.5 GB; TestLoadManySessions),
		// and autofill's calls home (refused by the gate anyway, but
		// reported in every page's blocked list).
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,AutofillServerCommunication"),
		// Running as root (containers, CI) needs --no-sandbox; chromedp
		// adds it when the uid is 0.
	)
}

// start launches the browser if it is not running and returns its root
// context and generation. b.startMu is held; b.mu is not.
func (b *Browser) start() (context.Context, uint64, error) {
	b.mu.Lock()
	root, closed, gen := b.root, b.closed, b.gen
	b.mu.Unlock()
	if closed {
		return nil, 0, ErrClosed
	}
	if root != nil && root.Err() == nil {
		return root, gen, nil
	}
	b.mu.Lock()
	b.stopLocked() // a crashed browser: reap what is left
	b.mu.Unlock()
	b.mu.Lock()
	if b.nowhere == nil {
		g, err := openGate(&allowList{}, b.log)
		if err != nil {
			b.mu.Unlock()
			return nil, 0, fmt.Errorf("starting Chromium: %w", err)
		}
		b.nowhere = g
	}
	nowhere := b.nowhere.URL()
	b.mu.Unlock()
	allocCtx, allocStop := chromedp.NewExecAllocator(context.Background(), b.launchOptions(nowhere)...)
	root, rootCancel := chromedp.NewContext(allocCtx)
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(root) }()
	wait := b.startTimeout()
	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		err = fmt.Errorf("no answer within %s", wait)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && b.closed {
		err = ErrClosed
	}
	if err != nil {
		rootCancel()
		allocStop()
		if !errors.Is(err, ErrClosed) {
			b.failedAt, b.failure = time.Now(), "see the server log"
			b.log.Error("Chromium failed to start; browser tools are unavailable for a while", "browser_path", b.path, "error", err.Error())
		}
		return nil, 0, fmt.Errorf("starting Chromium: %w", err)
	}
	b.gen++
	mctx, stop := context.WithCancel(context.Background())
	b.root, b.rootCancel, b.allocStop, b.monitor = root, rootCancel, allocStop, stop
	b.failedAt = time.Time{}
	b.monitors.Add(1)
	go b.watch(mctx, root, b.gen)
	b.log.Info("Chromium started", "browser_path", b.path)
	return root, b.gen, nil
}

// stopLocked stops a running browser; b.mu is held.
func (b *Browser) stopLocked() {
	if b.monitor != nil {
		b.monitor()
	}
	if b.rootCancel != nil {
		b.rootCancel() // kills the process and waits for it
		b.allocStop()  // waits for the profile directory to be removed
	}
	b.root, b.rootCancel, b.allocStop, b.monitor = nil, nil, nil, nil
}

// Close stops the browser, ends every run and waits for them. Later runs
// fail with ErrClosed. It is safe to call more than once.
func (b *Browser) Close() error {
	b.mu.Lock()
	if !b.closed {
		close(b.done)
	}
	b.closed = true
	root := b.rootCancel
	if b.monitor != nil {
		b.monitor()
	}
	b.mu.Unlock()
	if root != nil {
		root() // runs see their tabs end
	}
	b.endSessions()
	// A start under way finishes, sees closed and stops its browser.
	b.startMu.Lock()
	b.startMu.Unlock() //nolint:staticcheck // an empty critical section: wait for a start to end
	b.runs.Wait()
	b.monitors.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rootCancel != nil {
		b.stopLocked()
		b.log.Info("Chromium stopped")
	}
	if b.nowhere != nil {
		b.nowhere.Close()
		b.nowhere = nil
	}
	return nil
}

// acquire returns the browser's root context and generation for a new
// run, starting the browser when needed. A caller whose ctx ends while the
// browser starts returns at once; the start goes on for the next caller
// (Close waits for it). On success the caller must call b.runs.Done.
func (b *Browser) acquire(ctx context.Context) (context.Context, uint64, error) {
	if b.reason != "" {
		return nil, 0, errors.New(b.reason)
	}
	type started struct {
		root context.Context
		gen  uint64
		err  error
	}
	done := make(chan started, 1)
	go func() {
		b.startMu.Lock()
		defer b.startMu.Unlock()
		b.mu.Lock()
		recent := !b.failedAt.IsZero() && time.Since(b.failedAt) < launchRetry
		down := b.down != ""
		b.mu.Unlock()
		switch {
		case down:
			done <- started{err: restarting()}
			return
		case recent:
			done <- started{err: errors.New("Chromium failed to start recently")}
			return
		}
		root, gen, err := b.start()
		done <- started{root, gen, err}
	}()
	var r started
	select {
	case r = <-done:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	if r.err != nil {
		return nil, 0, r.err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, 0, ErrClosed
	}
	b.runs.Add(1)
	return r.root, r.gen, nil
}

// generation is the current browser process's generation (0: none).
func (b *Browser) generation() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.root == nil {
		return 0
	}
	return b.gen
}

// takeSlot waits for one of the MaxPages slots: at once when one is free,
// else as one of at most MaxQueued waiters for at most QueueWait, shared
// fairly between the identities of the calls (WithIdentity; see
// fairSlots). The returned function gives the slot back.
func (b *Browser) takeSlot(ctx context.Context) (func(), error) {
	owner := identityOf(ctx)
	why, err := b.slots.take(ctx, owner, b.cfg.QueueWait)
	switch {
	case err != nil:
		return nil, err
	case why == queueFull:
		return nil, busy(b.retryAfter(),
			"the server's browser is busy: %d pages are open and %d wait (its limits); retry later", b.cfg.MaxPages, max(b.cfg.MaxQueued, 0))
	case why == queueTimeout:
		return nil, busy(b.retryAfter(),
			"the server's browser is busy: no page was free within %s; retry later", b.cfg.QueueWait)
	}
	start := time.Now()
	return func() {
		d := int64(time.Since(start))
		old := b.avgRun.Load()
		if old == 0 {
			old = d
		}
		b.avgRun.Store(old + (d-old)/4)
		b.slots.release(owner)
	}, nil
}

// retryAfter suggests when a refused run may find a slot: the average
// run's duration for each round of queued pages, at least half a second,
// at most MaxLoadTime.
func (b *Browser) retryAfter() time.Duration {
	avg := time.Duration(b.avgRun.Load())
	if avg <= 0 {
		avg = 2 * time.Second
	}
	rounds := 1 + int64(b.slots.waiting())/int64(b.cfg.MaxPages)
	return min(max(avg*time.Duration(rounds), 500*time.Millisecond), b.cfg.MaxLoadTime)
}

// clip is clip.N, the project's one clipping function.
func clip(s string, n int) string { return textclip.N(s, n) }

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

// networkURL reports whether a request URL reaches the network (http,
// https, ws, wss and anything unknown) rather than the browser itself
// (data:, blob:, about:).
func networkURL(raw string) (*url.URL, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, true
	}
	switch u.Scheme {
	case "data", "blob", "about":
		return u, false
	}
	return u, true
}
