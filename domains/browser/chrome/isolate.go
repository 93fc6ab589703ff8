package chrome

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/inspector"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// closeWait bounds how long closing a tab waits for the browser to
// detach it (stretched by MaxLoadTime, see [Browser.stretch]).
const closeWait = 5 * time.Second

// consoleGuardJS wraps the console methods that print so that only the
// first %d calls (and uncaught errors) print; the function named %q returns how many calls it
// dropped. Same-origin frames (also a fresh iframe a page makes to get an
// unwrapped console) share the top frame's count. A page can still get
// around it; the collector's own flood limit and the run's time budget
// hold then.
const consoleGuardJS = `(() => {
  const max = %d, name = %q;
  if (Object.prototype.hasOwnProperty.call(globalThis, name)) return;
  let st = null;
  try { if (window.top !== window) st = window.top[name + '_state'] || null; } catch (e) {}
  st = st || {n: 0};
  for (const m of ['log', 'info', 'warn', 'error', 'debug', 'trace', 'dir', 'dirxml', 'table', 'count', 'timeLog', 'timeEnd', 'group', 'groupCollapsed', 'assert']) {
    const orig = console[m];
    if (typeof orig !== 'function') continue;
    console[m] = {[m](...args) {
      if (m === 'assert' && args[0]) return;
      if (++st.n <= max) return orig.apply(console, args);
    }}[m];
  }
  // Uncaught errors and unhandled rejections count too; past the limit
  // their report is suppressed.
  const uncaught = e => { if ((e.type === 'unhandledrejection' || e instanceof ErrorEvent) && ++st.n > max) e.preventDefault(); };
  globalThis.addEventListener('error', uncaught, true);
  globalThis.addEventListener('unhandledrejection', uncaught, true);
  Object.defineProperty(globalThis, name + '_state', {value: st});
  Object.defineProperty(globalThis, name, {value: () => Math.max(0, st.n - max)});
})()`

// isolated is a browser context held to the allow-list: every target of
// it (tabs, their frames, popups, workers, service workers) reaches the
// network only through the context's gate, and downloads are denied. It
// is the reusable unit of isolation: today each [Browser.Run] makes one
// with one tab; a context that lives longer (a browser session with
// several tabs) is made the same way and gets its tabs from
// [isolated.openTab]. Pages of the context that none of its tabs is
// (popups) are closed, except that a session's context keeps them for
// the session while it has room (keep; see Session.adopt).
type isolated struct {
	b    *Browser
	root context.Context // the browser's chromedp context
	gate *gate
	id   cdp.BrowserContextID

	mu   sync.Mutex
	tabs map[target.ID]bool // the context's own tabs
	// keep is the number of tabs the context holds at most, counting
	// the pages its pages opened that it keeps for its session (kept);
	// 0 in a run: such pages are closed. seen lists the pages of the
	// context that are not its tabs already handled (each tab of the
	// context sees each new page); popups counts those closed (or being
	// decided).
	keep   int
	kept   []target.ID
	seen   map[target.ID]bool
	popups atomic.Int64
	// opening is held (write) while a tab of the context is created and
	// not yet in tabs: the popup check waits for it (read), so a new tab
	// of a session is not taken for a popup.
	opening sync.RWMutex
}

// newIsolated creates an isolated browser context under root, the
// browser's chromedp context. ctx bounds the creation.
func (b *Browser) newIsolated(ctx, root context.Context) (*isolated, error) {
	g, err := openGate(b.allow, b.log)
	if err != nil {
		return nil, err
	}
	cctx, done := context.WithCancel(root)
	defer done()
	stop := context.AfterFunc(ctx, done)
	defer stop()
	res, err := chromedp.CallBrowser(cctx, target.CreateBrowserContext, target.CreateBrowserContextParams{
		// Every target of the context connects through the gate, loopback
		// included (Chromium bypasses proxies for loopback unless told).
		ProxyServer:     g.URL(),
		ProxyBypassList: "<-loopback>",
	})
	if err != nil {
		g.Close()
		return nil, err
	}
	c := &isolated{b: b, root: root, gate: g, id: res.BrowserContextID, tabs: map[target.ID]bool{}}
	if _, err := chromedp.CallBrowser(cctx, browser.SetDownloadBehavior,
		browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: c.id}); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// own reports whether id is one of the context's tabs.
func (c *isolated) own(id target.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tabs[id]
}

// close disposes of the browser context (closing what is left in it) and
// stops its gate. Close its tabs first (tab.close).
func (c *isolated) close() {
	ctx, done := context.WithTimeout(c.root, c.b.stretch(closeWait))
	defer done()
	_, _ = chromedp.CallBrowser(ctx, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: c.id})
	c.gate.Close()
}

// tab is one page of an isolated context, with dialogs dismissed (a
// session's tab keeps them open, see dialog.go), other pages of the
// context (popups) closed or kept (see isolated.popup), and the tab's own requests to
// hosts not allowed failed before they are sent (the gate holds anyway).
// Its events go to a collector. End it with [tab.close], which never
// leaves the browser's event routing blocked, however many events the
// page still sends.
type tab struct {
	b  *Browser
	in *isolated
	// ctx is the chromedp context of the tab: its event loop runs until
	// close, so events keep being consumed. cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	// op bounds the actions on the tab: it ends with the run's context,
	// when the page goes over its byte budget, or when its renderer ends.
	op       context.Context
	stopOp   context.CancelFunc
	stopWith func() bool

	targetID target.ID
	// live is the session tab this tab is (nil in a run): its actions
	// find elements by ref.
	live *liveTab
	// holdDialogs keeps JavaScript dialogs open (a session's tab, see
	// dialog.go); a run's tab dismisses them.
	holdDialogs atomic.Bool
	dlgMu       sync.Mutex
	dlg         *Dialog // open, or nil
	dlgSeq      uint64  // dialogs opened so far
	dlgWatch    func()  // the call under way's, woken when one opens

	helpers   sync.WaitGroup // goroutines answering paused requests, dialogs, popups
	helpersMu sync.Mutex
	closing   bool
	answers   *sync.Cond  // signals the answer workers (under helpersMu)
	pending   []func()    // answers to paused requests, in order
	quiet     atomic.Bool // the listener drops every event
	crashed   atomic.Bool
	paused    atomic.Int64 // requests paused and not answered yet
	unpaused  atomic.Bool  // interception turned off (maxPaused)
}

// maxPaused bounds the tab's requests waiting for an answer to their
// interception.
const maxPaused = 256

// openTab creates a tab in the context, or with id set attaches to that
// page of the context (a page a page opened, see [isolated.popup]);
// events go to col. ctx bounds the creation and the tab's actions
// (tab.op).
func (c *isolated) openTab(ctx context.Context, col *collector, id ...target.ID) (*tab, error) {
	b := c.b
	c.opening.Lock()
	registered := false
	defer func() {
		if !registered {
			c.opening.Unlock()
		}
	}()
	opt := chromedp.WithExistingBrowserContext(c.id)
	if len(id) > 0 {
		opt = chromedp.WithTargetID(id[0])
		c.mu.Lock()
		c.tabs[id[0]] = true
		c.mu.Unlock()
		defer func() {
			if !registered {
				c.mu.Lock()
				delete(c.tabs, id[0])
				c.mu.Unlock()
			}
		}()
	}
	tctx, cancel := chromedp.NewContext(c.root, opt)
	t := &tab{b: b, in: c, ctx: tctx, cancel: cancel}
	// The first Run attaches the target; its event loop lives on tctx, so
	// tctx (not ctx) is what it runs with.
	created := make(chan error, 1)
	go func() { created <- chromedp.Do(tctx) }()
	var err error
	select {
	case err = <-created:
	case <-ctx.Done():
		err = ctx.Err()
		cancel()
		<-created
		return nil, err
	}
	if err != nil {
		cancel()
		return nil, err
	}
	t.targetID = chromedp.FromContext(tctx).Target.TargetID
	c.mu.Lock()
	c.tabs[t.targetID] = true
	c.mu.Unlock()
	registered = true
	c.opening.Unlock()
	t.op, t.stopOp = context.WithCancel(tctx)
	t.stopWith = context.AfterFunc(ctx, t.stopOp)
	col.onFlood = func() {
		t.async(func() {
			_, _ = chromedp.Call(t.op, runtime.Disable, cdp.Empty{})
			_, _ = chromedp.Call(t.op, cdplog.Disable, cdp.Empty{})
		})
	}
	fail := func(err error) (*tab, error) {
		t.close()
		return nil, err
	}
	if err := chromedp.Listen(tctx, func(ev any) { t.event(ev, col) }); err != nil {
		return fail(err)
	}
	// chromedp answers DOM.documentUpdated by asking for the document
	// from its event loop; behind a flood of console events that loop's
	// queue fills and the tab (then the browser's event routing) dead-
	// locks. The tab does without the DOM domain (elements are read and
	// acted on with JavaScript and Input events).
	if _, err := chromedp.Call(t.op, css.Disable, cdp.Empty{}); err != nil {
		return fail(err)
	}
	if _, err := chromedp.Call(t.op, dom.Disable, cdp.Empty{}); err != nil {
		return fail(err)
	}
	// Console calls past the flood limit are counted in the page and not
	// sent: with DevTools attached each message costs the renderer a
	// stack trace and the connection an event, and a page looping over
	// console.error would otherwise spend its whole time budget there.
	col.guard = fmt.Sprintf("__manglecp_console_%x", rand.Uint64())
	if _, err := chromedp.Call(t.op, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: fmt.Sprintf(consoleGuardJS, floodFactor*b.cfg.MaxConsole, col.guard)}); err != nil {
		return fail(err)
	}
	if _, err := chromedp.Call(t.op, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		return fail(err)
	}
	if len(id) > 0 {
		// The page's document was there before the tab attached: it gets
		// the console guard now.
		if _, err := chromedp.Run(t.op, chromedp.Evaluate[chromedp.Void](
			fmt.Sprintf(consoleGuardJS, floodFactor*b.cfg.MaxConsole, col.guard))); err != nil {
			return fail(err)
		}
	}
	return t, nil
}

// see reports whether id, a page of the context that is not one of its
// tabs, is seen for the first time; it then counts as a closed popup
// until [isolated.popup] decides otherwise.
func (c *isolated) see(id target.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tabs[id] || c.seen[id] {
		return false
	}
	if c.seen == nil || len(c.seen) > 10000 {
		c.seen = map[target.ID]bool{}
	}
	c.seen[id] = true
	c.popups.Add(1)
	return true
}

// popup decides what becomes of id, a page of the context that is not
// one of its tabs: "own" when it became one of its tabs meanwhile,
// "keep" when the context keeps it for its session (fewer than keep tabs
// and pages kept: [isolated.takeKept] hands it over), "close" otherwise.
func (c *isolated) popup(id target.ID) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tabs[id] {
		return "own"
	}
	if len(c.tabs)+len(c.kept) < c.keep {
		c.kept = append(c.kept, id)
		return "keep"
	}
	return "close"
}

// sawPopups reports whether a page of the context opened another.
func (c *isolated) sawPopups() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen) > 0
}

// takeKept hands over the pages kept for the session (see
// [isolated.popup]).
func (c *isolated) takeKept() []target.ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.kept
	c.kept = nil
	return k
}

// async runs fn in a helper goroutine unless the tab is closing.
func (t *tab) async(fn func()) {
	t.helpersMu.Lock()
	defer t.helpersMu.Unlock()
	if t.closing {
		return
	}
	t.helpers.Add(1)
	go func() { defer t.helpers.Done(); fn() }()
}

// answerWorkers is the number of goroutines that answer a tab's paused
// requests.
const answerWorkers = 8

// answer queues fn (the answer to a paused request) for the tab's answer
// workers, started on first use: however fast a page starts requests, it
// holds answerWorkers goroutines and a queue entry per request waiting.
func (t *tab) answer(fn func()) {
	t.helpersMu.Lock()
	defer t.helpersMu.Unlock()
	if t.closing {
		return
	}
	if t.answers == nil {
		t.answers = sync.NewCond(&t.helpersMu)
		for range answerWorkers {
			t.helpers.Add(1)
			go t.answerLoop()
		}
	}
	t.pending = append(t.pending, fn)
	t.answers.Signal()
}

// answerLoop runs queued answers until the tab closes (the answers
// queued by then run too: they fail fast once the tab's actions ended).
func (t *tab) answerLoop() {
	defer t.helpers.Done()
	t.helpersMu.Lock()
	for {
		for len(t.pending) == 0 && !t.closing {
			t.answers.Wait()
		}
		if len(t.pending) == 0 {
			t.helpersMu.Unlock()
			return
		}
		fn := t.pending[0]
		t.pending[0] = nil
		t.pending = t.pending[1:]
		t.helpersMu.Unlock()
		fn()
		t.helpersMu.Lock()
	}
}

// event handles one event of the tab. It runs on chromedp's event loop:
// it must not block or run commands itself.
func (t *tab) event(ev any, col *collector) {
	if t.quiet.Load() {
		return
	}
	switch e := ev.(type) {
	case *fetch.EventRequestPaused:
		// Each paused request waits for an answer from the tab's answer
		// workers. Past maxPaused waiting the tab's interception is turned
		// off (the gate still refuses what is not allowed), so a request
		// flood does not queue without bound either.
		if t.paused.Add(1) > maxPaused && t.unpaused.CompareAndSwap(false, true) {
			t.async(func() { _, _ = chromedp.Call(t.op, fetch.Disable, cdp.Empty{}) })
		}
		id, raw := e.RequestID, e.Request.URL
		if u, net := networkURL(raw); net && (u == nil || !t.b.allow.urlAllows(u)) {
			col.block(raw)
			t.answer(func() {
				defer t.paused.Add(-1)
				_, _ = chromedp.Call(t.op, fetch.FailRequest, fetch.FailRequestParams{RequestID: id, ErrorReason: network.ErrorReasonBlockedByClient})
			})
			return
		}
		t.answer(func() {
			defer t.paused.Add(-1)
			_, _ = chromedp.Call(t.op, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id})
		})
	case *page.EventJavascriptDialogOpening:
		if t.holdDialogs.Load() {
			t.dialogOpened(e)
			return
		}
		t.async(func() {
			_, _ = chromedp.Call(t.op, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		})
	case *page.EventJavascriptDialogClosed:
		t.dialogClosed()
	case *target.EventTargetCreated:
		// Another page of this browser context (a popup, or a page a popup
		// opened): kept for a session that has room for another tab (see
		// Session.adopt), else closed. Its connections go through the gate
		// either way.
		if i := e.TargetInfo; i != nil && i.Type == "page" && i.BrowserContextID == t.in.id && !t.in.own(i.TargetID) {
			id := i.TargetID
			if !t.in.see(id) {
				return
			}
			t.async(func() {
				t.in.opening.RLock() // a tab of the context being created is not a popup
				t.in.opening.RUnlock()
				if t.in.popup(id) != "close" {
					t.in.popups.Add(-1)
					return
				}
				_, _ = chromedp.CallBrowser(t.op, target.CloseTarget, target.CloseTargetParams{TargetID: id})
			})
		}
	case *inspector.EventTargetCrashed:
		t.crashed.Store(true)
		t.stopOp()
	default:
		if col.event(ev) {
			t.stopOp() // the page is over its byte budget
		}
	}
}

// gone reports whether the tab's target is gone (its page closed itself,
// or it was closed).
func (t *tab) gone() bool {
	ch, err := chromedp.Detached(t.ctx)
	if err != nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// close ends the tab. While the tab's event loop still consumes events, it
// closes the target from the browser's side and waits until the browser
// detached its session; only then does it end the chromedp context (which
// disposes of the browser context). Ending the context first would leave
// chromedp routing the page's remaining events to a loop that is gone,
// which blocks the routing of every tab of the browser (a page that logs
// 100,000 console messages did that).
func (t *tab) close() {
	t.stopWith()
	t.helpersMu.Lock()
	t.closing = true
	if t.answers != nil {
		t.answers.Broadcast()
	}
	t.helpersMu.Unlock()
	t.quiet.Store(true)
	t.stopOp()
	t.helpers.Wait()
	t.dismissOpen()
	cctx, done := context.WithTimeout(t.ctx, t.b.stretch(closeWait))
	detached := t.gone() // the page closed itself
	if gone, err := chromedp.Detached(t.ctx); err == nil && !detached {
		if _, err := chromedp.CallBrowser(cctx, target.CloseTarget, target.CloseTargetParams{TargetID: t.targetID}); err == nil {
			select {
			case <-gone:
				detached = true
			case <-cctx.Done():
			}
		}
	}
	done()
	if !detached && t.ctx.Err() == nil {
		t.b.log.Warn("a browser tab did not close in time; checking the browser's health")
		t.b.checkSoon()
	}
	t.cancel()
	t.in.mu.Lock()
	delete(t.in.tabs, t.targetID)
	t.in.mu.Unlock()
}
