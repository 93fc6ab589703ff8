package chrome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Limits on what one observation reports (the caps on the number of
// console messages, requests and elements are in [Config]).
const (
	maxBlocked = 20
	// floodFactor times MaxConsole console messages stop the reading of
	// a page's console.
	floodFactor  = 10
	maxMessage   = 300
	maxURL       = 500
	maxLabel     = 80
	maxTextBytes = 600
	// quiet is how long the network and console must be silent after
	// the load event before the page counts as settled; settleMax bounds
	// that wait (stretched, see [Browser.stretch]).
	quiet     = 250 * time.Millisecond
	settleMax = 5 * time.Second
	// inspectMax bounds reading the page (location, text, elements) and
	// taking the screenshot: a page whose main thread does not answer is
	// reported as it was seen so far (stretched: [Browser.inspectTime]).
	inspectMax = 3 * time.Second
)

// stretch is d, a bound on waiting for the browser written for the
// default MaxLoadTime (20 s), for this browser's MaxLoadTime: d itself up
// to the default, the same share of a longer one (settleMax 5 s is a
// quarter of it). MaxLoadTime is the configured measure of how slow this
// machine's pages are; what makes page loads slow (a loaded machine; a
// test stretches MaxLoadTime by its measured speed, chrome.Budgeted)
// makes settling, inspecting, closing a tab, stopping a script and the
// health check's answer slow too. The bounds stretched so: settleMax,
// inspectMax, closeWait, stopScript's waits, stallReserve and the health
// check's wait.
func (b *Browser) stretch(d time.Duration) time.Duration {
	if b.cfg.MaxLoadTime <= DefaultMaxLoadTime {
		return d
	}
	return time.Duration(float64(d) * float64(b.cfg.MaxLoadTime) / float64(DefaultMaxLoadTime))
}

// inspectTime bounds reading a live page and attaching a tab: inspectMax
// stretched by MaxLoadTime ([Browser.stretch]): under load 30 a popup
// took more than 3 s to attach and was closed as if a dialog held it.
func (b *Browser) inspectTime() time.Duration { return b.stretch(inspectMax) }

// Task is one run: open URL in a fresh browser context, optionally act on
// an element, optionally take a screenshot.
type Task struct {
	URL string
	// Act, when set, clicks or fills an element after the page settled.
	Act *Act
	// Screenshot captures the viewport as PNG at the end.
	Screenshot bool
}

// Act is an action on an element found by its element id (see
// [Element.ID]).
type Act struct {
	// Kind is "click", "fill", "select" (Value: the option's label or
	// value) or "check" (Value: "true" or "false"; the checkbox, radio
	// button or switch is clicked only when its state differs).
	Kind string
	// ElementID names the element: in a live session its
	// [PageElement.Ref] (or its [PageElement.ID]); in a run (and, as a
	// fallback, in a session) its [Element.ID].
	ElementID string
	// Value is the text to type (fill), the option (select) or the state
	// (check).
	Value string
	// Values, when set, are the options of a multiple select or list box
	// (Value is then not used).
	Values []string
}

// Observation is what a run saw. Times are Unix milliseconds.
type Observation struct {
	// Session identifies this run's page in facts: tabN for a run, the
	// session's id for a live session.
	Session string
	// Live is set when the session stays open after the call (see
	// [Browser.OpenSession]).
	Live bool
	// URL is the final URL (after redirects and the action); Title the
	// document title; Status the HTTP status of the main document (0 when
	// the page did not load).
	URL, Title string
	Status     int64
	// LoadError is Chromium's error when the navigation failed, e.g.
	// net::ERR_CONNECTION_REFUSED; the rest is then mostly empty.
	LoadError string
	Console   []Console
	Requests  []Request
	Elements  []Element
	// Blocked lists request URLs failed because their host is not allowed.
	Blocked []string
	// Text is the start of the page's visible text.
	Text string
	// Action reports the Act, if any.
	Action *ActResult
	// PNG is the screenshot, if asked for.
	PNG []byte
	// Truncated is set when a limit cut a list; ConsoleTotal,
	// RequestsTotal and ElementsTotal then say how many there were (the
	// lists hold the first ones). ElementsTotal is a lower bound when the
	// page has more elements than the inspection looks at.
	Truncated                                  bool
	ConsoleTotal, RequestsTotal, ElementsTotal int
	// ConsoleFlooded is set when the page logged so much that its console
	// was no longer read: ConsoleTotal is then a lower bound.
	ConsoleFlooded bool
	// BlockedTotal counts the requests and connections refused because
	// their host or port is not allowed, from any target of the page
	// (Blocked lists the first ones).
	BlockedTotal int
	// PopupsClosed counts the pages the page opened, which were closed.
	PopupsClosed int
	// Incomplete says why the observation stopped early (the page did not
	// finish loading, or did not answer in time); "" when it did not.
	Incomplete string
	// Page is the accessibility tree of a live session's page after the
	// call, bounded (at most [DefaultMaxPageElements] elements, and a
	// bounded read on huge pages; see [Page]); its refs are what the
	// next actions take. Nil in a run, when the page is incomplete or did
	// not load, when it could not be read in time, and while a
	// JavaScript dialog is open (see Dialog).
	Page *Page
	// Dialog is the JavaScript dialog open on a live session's page
	// after the call (it opened during the call, which then stopped):
	// answer it with [Session.AnswerDialog]. Nil when none is.
	Dialog *Dialog
	// Announced are the texts the page's live regions (role status,
	// alert or log, aria-live: toasts, errors) showed during a call on a
	// live session, also those it removed before the call ended.
	Announced []string
	// TabOpened is the index of the tab the page opened during the call
	// (a target=_blank link, window.open), which the session keeps (see
	// [Session.SwitchTab]); the last one when it opened several.
	// 0 when it opened none (tab 0 is the session's first tab).
	TabOpened int
	// TabsClosed counts the tabs of a live session whose page closed
	// itself (window.close()) during the call or since the call before;
	// they are no longer tabs of the session. When the current tab was
	// one, the tab before it is current now, and Page, URL and Title are
	// its.
	TabsClosed int
}

// Console is a console message (console API call, uncaught exception or
// browser log entry).
type Console struct {
	Level, Message string
	Time           int64
}

// Request is a network request and, when it got one, its response.
type Request struct {
	ID, Method, URL string
	Time            int64
	// Status is the HTTP status; 0 with Failed set when no response came.
	Status       int64
	ResponseTime int64
	Failed       string
	Done         bool
}

// Element is an interactive element. ID is the element's id attribute when
// that is unique on the page, else KIND-N (the Nth such element without a
// unique id, in document order), so the same page yields the same ids.
type Element struct {
	ID, Kind, Label string
}

// ActResult is what an action did.
type ActResult struct {
	Kind, ElementID string
	// Changed reports whether the URL, title or visible text changed.
	Changed   bool
	URLBefore string
	// Requests and Console count what the action caused.
	Requests, Console int
	// Appeared are the texts the page shows after the action that it did
	// not before (at most 5, in page order), e.g. "Saved order for 1".
	Appeared []string
}

// collector gathers a tab's events. Its methods run on chromedp's event
// loop and must not block or run commands.
type collector struct {
	cfg      *Config
	mu       sync.Mutex
	offset   float64 // wall seconds minus monotonic seconds
	haveOff  bool
	console  []Console
	requests []*Request
	byCDP    map[network.RequestID]*Request
	inflight map[network.RequestID]bool
	// earlier are the requests still in flight when the call began
	// (rebase): settle does not wait for them (a worker's script never
	// finishes as its tab sees it), a wait for a quiet network does.
	earlier   map[network.RequestID]bool
	bytes     int64
	last      time.Time
	docStatus int64
	truncated bool
	blocked   []string
	nBlocked  int
	nConsole  int
	// onFlood is called once, under mu, when the page has logged twice
	// floodFactor times MaxConsole messages (past its console guard): it stops reading the
	// console (flooded), so one page cannot keep the browser's
	// connection busy for every other.
	onFlood func()
	flooded bool
	// guard names the page function that counts the console calls the
	// page's console guard dropped (consoleGuardJS); dropped is its
	// answer.
	guard     string
	dropped   int
	nRequests int
	seq       int // numbers the requests kept, r1, r2, ...: never reset
	// prevStatus is the main document's status before the last rebase.
	prevStatus int64
	tooLarge   bool
	// ignored are URLs the browser fetched for itself (the favicon), not
	// the page: DevTools does not list them either.
	ignored map[string]bool
	// loading are the frames of the tab that started loading (or were
	// asked to navigate) and did not stop yet: the page is not settled
	// while one is.
	loading map[cdp.FrameID]bool
}

func newCollector(cfg *Config) *collector {
	return &collector{cfg: cfg, byCDP: map[network.RequestID]*Request{}, inflight: map[network.RequestID]bool{}, ignored: map[string]bool{},
		loading: map[cdp.FrameID]bool{}, last: time.Now()}
}

func (c *collector) wall(mono cdp.MonotonicTime) int64 {
	if !c.haveOff {
		return time.Now().UnixMilli()
	}
	return int64((float64(mono) + c.offset) * 1000)
}

// addConsole keeps a console message while there are fewer than
// MaxConsole, and counts it either way. msg is only called for kept
// messages.
func (c *collector) addConsole(level string, msg func() string, ms int64) {
	c.nConsole++
	if c.nConsole == 2*floodFactor*c.cfg.MaxConsole && c.onFlood != nil {
		c.flooded = true
		c.onFlood()
	}
	if len(c.console) >= c.cfg.MaxConsole {
		c.truncated = true
		return
	}
	c.console = append(c.console, Console{Level: level, Message: clip(strings.TrimSpace(msg()), maxMessage), Time: ms})
}

// block records a request failed because its host is not allowed.
func (c *collector) block(raw string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nBlocked++
	if len(c.blocked) < maxBlocked {
		c.blocked = append(c.blocked, clip(raw, maxURL))
	}
}

// event records one CDP event; it reports whether the page exceeded its
// byte budget.
func (c *collector) event(ev any) (overBudget bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = time.Now()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if !c.haveOff {
			c.offset, c.haveOff = float64(e.WallTime)-float64(e.Timestamp), true
		}
		if old, ok := c.byCDP[e.RequestID]; ok && e.RedirectResponse != nil {
			old.Status, old.ResponseTime, old.Done = e.RedirectResponse.Status, c.wall(e.Timestamp), true
			delete(c.byCDP, e.RequestID)
		}
		if browserOwn(e) {
			c.ignored[e.Request.URL] = true
			return false
		}
		c.nRequests++
		if len(c.requests) >= c.cfg.MaxRequests {
			c.truncated = true
			return false
		}
		c.seq++
		r := &Request{ID: fmt.Sprintf("r%d", c.seq), Method: e.Request.Method,
			URL: clip(e.Request.URL, maxURL), Time: c.wall(e.Timestamp)}
		c.requests = append(c.requests, r)
		c.byCDP[e.RequestID] = r
		c.inflight[e.RequestID] = true
	case *network.EventResponseReceived:
		if r, ok := c.byCDP[e.RequestID]; ok {
			r.Status, r.ResponseTime = e.Response.Status, c.wall(e.Timestamp)
		}
		if e.Type == network.ResourceTypeDocument && c.docStatus == 0 {
			c.docStatus = e.Response.Status
		}
	case *network.EventLoadingFinished:
		delete(c.inflight, e.RequestID)
		delete(c.earlier, e.RequestID)
		if r, ok := c.byCDP[e.RequestID]; ok {
			r.Done = true
		}
	case *network.EventLoadingFailed:
		delete(c.inflight, e.RequestID)
		delete(c.earlier, e.RequestID)
		if r, ok := c.byCDP[e.RequestID]; ok {
			r.Done = true
			if r.Status == 0 {
				r.Failed, r.ResponseTime = clip(e.ErrorText, 100), c.wall(e.Timestamp)
			}
		}
	case *page.EventFrameRequestedNavigation:
		c.loading[e.FrameID] = true
	case *page.EventFrameStartedLoading:
		c.loading[e.FrameID] = true
	case *page.EventFrameStoppedLoading:
		delete(c.loading, e.FrameID)
	case *page.EventFrameDetached:
		delete(c.loading, e.FrameID)
	case *network.EventDataReceived:
		c.bytes += max(e.EncodedDataLength, e.DataLength)
		if c.bytes > c.cfg.MaxPageBytes && !c.tooLarge {
			c.tooLarge = true
			return true
		}
	case *runtime.EventConsoleAPICalled:
		level := string(e.Type)
		switch e.Type {
		case runtime.ConsoleAPICalledTypeWarning:
			level = "warning"
		case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeAssert:
			level = "error"
		case runtime.ConsoleAPICalledTypeLog, runtime.ConsoleAPICalledTypeInfo, runtime.ConsoleAPICalledTypeDebug:
		default:
			level = "log"
		}
		c.addConsole(level, func() string { return argsText(e.Args) }, int64(e.Timestamp))
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		c.addConsole("error", func() string {
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				desc, _, _ := strings.Cut(d.Exception.Description, "\n")
				msg = strings.TrimSpace(msg + " " + desc)
			}
			return msg
		}, int64(e.Timestamp))
	case *cdplog.EventEntryAdded:
		if c.ignored[e.Entry.URL] {
			return false
		}
		level := string(e.Entry.Level)
		if e.Entry.Level == cdplog.EntryLevelVerbose {
			level = "debug"
		}
		c.addConsole(level, func() string { return e.Entry.Text }, int64(e.Entry.Timestamp))
	}
	return false
}

// rebase starts a new observation on a tab that lives on (a session's):
// what earlier calls saw is dropped and the caps and the byte budget start
// again; request ids go on counting, so facts of different calls never
// share an id. Requests still in flight are no longer waited for: the
// call that saw them start waited (up to settleMax), and some never end
// for the tab (a worker's script finishes in the worker's target), which
// made every later call wait settleMax again. They are kept apart
// (earlier) for a wait for a quiet network, until they end.
func (c *collector) rebase() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.console, c.requests, c.blocked = nil, nil, nil
	c.byCDP = map[network.RequestID]*Request{}
	c.earlier, c.inflight = c.inflight, map[network.RequestID]bool{}
	c.bytes, c.nBlocked, c.nConsole, c.nRequests, c.dropped = 0, 0, 0, 0, 0
	c.truncated, c.tooLarge = false, false
	clear(c.loading)
	// last stays: a page quiet since the previous call is settled at
	// once (an action does not wait 500 ms before it acts); the action
	// itself is waited for after it (touch).
	if c.docStatus != 0 {
		c.prevStatus = c.docStatus
	}
	c.docStatus = 0
}

// browserOwn reports whether a request is the browser's own (the
// favicon), not made by the page.
func browserOwn(e *network.EventRequestWillBeSent) bool {
	if !strings.HasSuffix(e.Request.URL, "/favicon.ico") || e.Type == network.ResourceTypeDocument {
		return false
	}
	return e.Initiator == nil || e.Initiator.Type == network.InitiatorTypeOther
}

// settled reports whether no request is in flight and nothing happened
// for the quiet period.
// touch marks now as the page's latest event: what an action (a click,
// typing) makes the page do is waited for as after a load.
func (c *collector) touch() {
	c.mu.Lock()
	c.last = time.Now()
	c.mu.Unlock()
}

func (c *collector) settled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight) == 0 && len(c.loading) == 0 && time.Since(c.last) >= quiet
}

func (c *collector) counts() (requests, console int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nRequests, c.nConsole
}

// argsText renders console API arguments roughly as DevTools does.
func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		var s string
		switch {
		case a.Type == runtime.RemoteObjectTypeString && json.Unmarshal([]byte(a.Value), &s) == nil:
		case a.Description != "":
			s = a.Description
		case len(a.Value) > 0:
			s = string(a.Value)
		case a.UnserializableValue != "":
			s = string(a.UnserializableValue)
		default:
			s = string(a.Type)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// Run performs a task in a fresh, isolated browser context (see isolated) and
// returns what it saw. It waits for a page slot first (a [Busy] error when
// none frees in time). It returns when the task is done, ctx ends or
// MaxLoadTime passes; the tab and its browser context are closed before
// it returns. A navigation that fails (connection refused, DNS) is an
// Observation with LoadError, not an error; a page that does not finish
// loading or stops answering in time is an Observation with Incomplete.
func (b *Browser) Run(ctx context.Context, t Task) (*Observation, error) {
	if _, err := b.CheckURL(t.URL); err != nil {
		return nil, err
	}
	if b.reason != "" {
		return nil, errors.New(b.reason)
	}
	release, err := b.takeSlot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	root, gen, err := b.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer b.runs.Done()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.MaxLoadTime)
	defer cancel()

	col := newCollector(&b.cfg)
	obs := &Observation{Session: fmt.Sprintf("tab%d", b.tabs.Add(1))}
	ic, err := b.newIsolated(ctx, root)
	if err != nil {
		return nil, b.runError(ctx, gen, err)
	}
	defer ic.close()
	tb, err := ic.openTab(ctx, col)
	if err != nil {
		return nil, b.runError(ctx, gen, err)
	}
	defer tb.close()
	if err := b.drive(tb.op, tb, col, t, obs, true); err != nil {
		return nil, b.pageError(ctx, gen, tb, col, err)
	}
	b.collect(obs, tb, col, ic.gate, 0)
	return obs, nil
}

// collect copies what the collector gathered into obs. The gate's refusals
// past skip (those earlier calls of a session reported) are added.
func (b *Browser) collect(obs *Observation, tb *tab, col *collector, g *gate, skip int) (gateRefused int) {
	col.mu.Lock()
	defer col.mu.Unlock()
	obs.Console = append([]Console(nil), col.console...)
	for _, r := range col.requests {
		obs.Requests = append(obs.Requests, *r)
	}
	obs.Blocked = append([]string(nil), col.blocked...)
	gateBlocked, gateRefused := g.Blocked()
	for i, u := range gateBlocked {
		if i >= skip && len(obs.Blocked) < maxBlocked {
			obs.Blocked = append(obs.Blocked, u)
		}
	}
	obs.BlockedTotal = col.nBlocked + gateRefused - min(skip, gateRefused)
	obs.Status = col.docStatus
	if obs.Status == 0 && obs.LoadError == "" {
		obs.Status = col.prevStatus
	}
	obs.Truncated = obs.Truncated || col.truncated
	obs.ConsoleTotal, obs.RequestsTotal = col.nConsole+col.dropped, col.nRequests
	obs.ConsoleFlooded = col.flooded || col.dropped > 0
	obs.Truncated = obs.Truncated || obs.ConsoleFlooded
	obs.PopupsClosed = int(tb.in.popups.Load())
	return gateRefused
}

// drive navigates (when navigate is set), settles, acts, inspects and
// takes the screenshot, with op, the tab's context for this call. Each
// step has a budget inside the run's: a page that does not load or answer
// in time is observed as far as it got (obs.Incomplete).
func (b *Browser) drive(op context.Context, tb *tab, col *collector, t Task, obs *Observation, navigate bool) error {
	if navigate {
		navCtx, navDone := context.WithTimeout(op, b.cfg.MaxLoadTime*11/20)
		err := chromedp.Do(navCtx, chromedp.Navigate(t.URL))
		navDone()
		var le *chromedp.LoadError
		switch {
		case err == nil:
		case errors.As(err, &le):
			obs.LoadError = clip(le.ErrorText, 100)
			return nil
		case op.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			obs.Incomplete = fmt.Sprintf("the page did not finish loading within %s", (b.cfg.MaxLoadTime * 11 / 20).Round(time.Second))
		default:
			return err
		}
	}
	if obs.Incomplete == "" {
		// A session's page settled at the end of the call before: an
		// action on it does not wait for quiet first (settle waits at
		// least the quiet period).
		switch {
		case tb.live != nil && !navigate && t.Act == nil:
			// A call on a live page after it did something (a key, a
			// hover, an upload, a dialog's answer): what it started is
			// waited for like an action's.
			if err := b.settleAction(op, col); err != nil {
				return err
			}
		case navigate || t.Act == nil || tb.live == nil:
			if err := b.settle(op, col); err != nil {
				return err
			}
		}
		if t.Act != nil {
			if err := b.act(op, tb, col, t.Act, obs); err != nil {
				return err
			}
		}
	}
	step := func(fn func(context.Context) error) error {
		sctx, done := context.WithTimeout(op, b.inspectTime())
		defer done()
		err := fn(sctx)
		if err != nil && op.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			if obs.Incomplete != "" {
				obs.Incomplete += "; "
			}
			obs.Incomplete += unansweredNote
			return nil
		}
		return err
	}
	if err := step(func(c context.Context) error { return b.inspect(c, obs) }); err != nil {
		return err
	}
	if tb.live != nil && obs.Incomplete == "" {
		obs.Announced = append(obs.Announced, announced(op, col)...)
	}
	if obs.Incomplete == "" {
		dropped, err := chromedp.Run(op, chromedp.Evaluate[int](fmt.Sprintf(
			"(typeof globalThis[%q] === 'function' ? globalThis[%q]() : 0)", col.guard, col.guard)))
		if err == nil && dropped > 0 {
			col.mu.Lock()
			col.dropped = dropped
			col.mu.Unlock()
		}
	}
	if t.Screenshot && obs.Incomplete == "" {
		return step(func(c context.Context) error {
			png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
			obs.PNG = png
			return err
		})
	}
	return nil
}

// settle waits until the page is quiet or settleMax (stretched) passed.
func (b *Browser) settle(tab context.Context, col *collector) error {
	deadline := time.NewTimer(b.stretch(settleMax))
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tab.Done():
			return tab.Err()
		case <-deadline.C:
			return nil
		case <-tick.C:
			if col.settled() {
				return nil
			}
		}
	}
}

// watchJS watches the page's document (a MutationObserver installed on
// the first call, under the name %q): it counts the mutations, and keeps
// the texts that live regions (role status, alert or log, aria-live) show
// while it watches, also a toast the page removes soon after. It answers
// the count after a turn of the page's event loop, so that what the page
// was about to do when it was asked (a handler's script, a navigation it
// starts) is done first.
const watchJS = `new Promise(r => {
  const k = %q;
  let st = window[k];
  if (!st) {
    st = {n: 0, live: []};
    const live = '[aria-live]:not([aria-live=off]),[role=status],[role=alert],[role=log]';
    const keep = el => {
      const t = (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 200);
      if (t && !st.live.includes(t) && st.live.length < 10) st.live.push(t);
    };
    try {
      new MutationObserver(ms => {
        st.n += ms.length;
        const seen = new Set();
        for (const m of ms) {
          const n = m.target.nodeType === 1 ? m.target : m.target.parentElement;
          const reg = n && n.closest && n.closest(live);
          if (reg) seen.add(reg);
          for (const a of m.addedNodes) if (a.nodeType === 1 && a.matches(live)) seen.add(a);
        }
        for (const reg of seen) keep(reg);
      }).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
    } catch (e) {}
    Object.defineProperty(window, k, {value: st});
  }
  setTimeout(() => r(st.n), 0);
})`

// announcedJS returns (and forgets) the live regions' texts the watch
// kept.
const announcedJS = `(() => { const st = window[%q]; return st ? st.live.splice(0) : []; })()`

// watch starts watching the page (watchJS) before a call acts on it.
func watch(tab context.Context, col *collector) {
	wctx, done := context.WithTimeout(tab, inspectMax)
	defer done()
	_, _ = chromedp.Run(wctx, chromedp.Evaluate[int](fmt.Sprintf(watchJS, col.guard+"_watch"), func(p *runtime.EvaluateParams) { yes := true; p.AwaitPromise = &yes }))
}

// announced returns the texts live regions showed since the watch began
// (or since the last call), at most 10.
func announced(tab context.Context, col *collector) []string {
	actx, done := context.WithTimeout(tab, inspectMax)
	defer done()
	texts, err := chromedp.Run(actx, chromedp.Evaluate[[]string](fmt.Sprintf(announcedJS, col.guard+"_watch")))
	if err != nil {
		return nil
	}
	for i := range texts {
		texts[i] = clip(texts[i], 200)
	}
	return texts
}

// settleAction waits, at most settleMax (stretched), until what an action started is
// over: the page's network is quiet, no frame is loading or asked to
// navigate, and a turn of the page's event loop saw no change of its
// document since the turn before. Each wait comes from the page's own
// events (requests, frame loading, DOM mutations, its event loop), so a
// busy machine makes it longer, never shorter than what the page does: a
// submit whose handler navigates after a request answers with the page
// it leads to.
func (b *Browser) settleAction(tab context.Context, col *collector) error {
	deadline := time.Now().Add(b.stretch(settleMax))
	prev := -2
	probe := fmt.Sprintf(watchJS, col.guard+"_watch")
	for {
		waitQuiet(tab, col, deadline)
		if tab.Err() != nil {
			return tab.Err()
		}
		if time.Now().After(deadline) {
			return nil
		}
		pctx, done := context.WithTimeout(tab, b.inspectTime())
		n, err := chromedp.Run(pctx, chromedp.Evaluate[int](probe, func(p *runtime.EvaluateParams) { yes := true; p.AwaitPromise = &yes }))
		done()
		if tab.Err() != nil {
			return tab.Err()
		}
		if err != nil {
			n = -1 // the document is going away
		}
		if n == prev && n >= 0 && col.settled() {
			return nil
		}
		if n != prev {
			col.touch()
		}
		prev = n
	}
}

// runError maps a failure before the page loaded.
func (b *Browser) runError(ctx context.Context, gen uint64, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if b.restarted(gen) {
		return restarting()
	}
	return err
}

// restarted reports whether the browser of generation gen is gone or
// being replaced.
func (b *Browser) restarted(gen uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gen != gen || b.root == nil || b.down != ""
}

// pageError maps a failure while the page ran: the byte budget, a
// renderer that ended, the caller's context, or the browser.
func (b *Browser) pageError(ctx context.Context, gen uint64, tb *tab, col *collector, err error) error {
	col.mu.Lock()
	large := col.tooLarge
	col.mu.Unlock()
	switch {
	case large:
		return errorf(PageFailed, "the page received more than %d bytes and was stopped", b.cfg.MaxPageBytes)
	case tb.gone() && ctx.Err() == nil:
		return newError(PageFailed, "the page closed its tab (window.close())")
	case tb.crashed.Load():
		return errorf(PageFailed, "the page's renderer ended (it crashed, or used more than the server's limit of %d MiB, counting the Blobs and other data it made the browser hold, and was stopped)", b.cfg.PageMemoryMB)
	case ctx.Err() != nil:
		return ctx.Err()
	case b.restarted(gen):
		return restarting()
	}
	return err
}
