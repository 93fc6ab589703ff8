package chrome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Limits on what one observation reports.
const (
	maxConsole   = 100
	maxRequests  = 150
	maxElements  = 100
	maxMessage   = 300
	maxURL       = 500
	maxLabel     = 80
	maxTextBytes = 600
	// quiet is how long the network and console must be silent after
	// the load event before the page counts as settled; settleMax bounds
	// that wait.
	quiet     = 500 * time.Millisecond
	settleMax = 5 * time.Second
)

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
	// Kind is "click" or "fill".
	Kind      string
	ElementID string
	// Value is the text to type (fill).
	Value string
}

// Observation is what a run saw. Times are Unix milliseconds.
type Observation struct {
	// Session identifies this run's page in facts.
	Session string
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
	// Truncated is set when a limit cut a list.
	Truncated bool
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
}

// collector gathers a tab's events. Its methods run on chromedp's event
// loop and must not block or run commands.
type collector struct {
	mu        sync.Mutex
	offset    float64 // wall seconds minus monotonic seconds
	haveOff   bool
	console   []Console
	requests  []*Request
	byCDP     map[network.RequestID]*Request
	inflight  map[network.RequestID]bool
	bytes     int64
	last      time.Time
	docStatus int64
	truncated bool
	blocked   []string
	tooLarge  bool
	// ignored are URLs the browser fetched for itself (the favicon), not
	// the page: DevTools does not list them either.
	ignored map[string]bool
}

func newCollector() *collector {
	return &collector{byCDP: map[network.RequestID]*Request{}, inflight: map[network.RequestID]bool{}, ignored: map[string]bool{}, last: time.Now()}
}

func (c *collector) wall(mono cdp.MonotonicTime) int64 {
	if !c.haveOff {
		return time.Now().UnixMilli()
	}
	return int64((float64(mono) + c.offset) * 1000)
}

func (c *collector) addConsole(level, msg string, ms int64) {
	if len(c.console) >= maxConsole {
		c.truncated = true
		return
	}
	c.console = append(c.console, Console{Level: level, Message: clip(strings.TrimSpace(msg), maxMessage), Time: ms})
}

// event records one CDP event; it reports whether the page exceeded its
// byte budget.
func (c *collector) event(ev any, maxBytes int64) (overBudget bool) {
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
		if len(c.requests) >= maxRequests {
			c.truncated = true
			return false
		}
		r := &Request{ID: fmt.Sprintf("r%d", len(c.requests)+1), Method: e.Request.Method,
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
		if r, ok := c.byCDP[e.RequestID]; ok {
			r.Done = true
		}
	case *network.EventLoadingFailed:
		delete(c.inflight, e.RequestID)
		if r, ok := c.byCDP[e.RequestID]; ok {
			r.Done = true
			if r.Status == 0 {
				r.Failed, r.ResponseTime = clip(e.ErrorText, 100), c.wall(e.Timestamp)
			}
		}
	case *network.EventDataReceived:
		c.bytes += max(e.EncodedDataLength, e.DataLength)
		if c.bytes > maxBytes && !c.tooLarge {
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
		c.addConsole(level, argsText(e.Args), int64(e.Timestamp))
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			desc, _, _ := strings.Cut(d.Exception.Description, "\n")
			msg = strings.TrimSpace(msg + " " + desc)
		}
		c.addConsole("error", msg, int64(e.Timestamp))
	case *cdplog.EventEntryAdded:
		if c.ignored[e.Entry.URL] {
			return false
		}
		level := string(e.Entry.Level)
		if e.Entry.Level == cdplog.EntryLevelVerbose {
			level = "debug"
		}
		c.addConsole(level, e.Entry.Text, int64(e.Entry.Timestamp))
	}
	return false
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
func (c *collector) settled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight) == 0 && time.Since(c.last) >= quiet
}

func (c *collector) counts() (requests, console int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.requests), len(c.console)
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

// Run performs a task in a fresh browser context and returns what it saw.
// It returns when the task is done, ctx ends or MaxLoadTime passes; the
// tab and its browser context are closed before it returns. A navigation
// that fails (connection refused, DNS) is an Observation with LoadError,
// not an error.
func (b *Browser) Run(ctx context.Context, t Task) (*Observation, error) {
	if _, err := b.CheckURL(t.URL); err != nil {
		return nil, err
	}
	root, err := b.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer b.runs.Done()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.MaxLoadTime)
	defer cancel()

	// tabParent ends the tab without waiting (from callbacks); closeTab
	// ends it and waits until the tab and its browser context are gone.
	tabParent, endTab := context.WithCancel(root)
	defer endTab()
	tab, closeTab := chromedp.NewContext(tabParent, chromedp.WithNewBrowserContext())
	var (
		helpers   sync.WaitGroup // goroutines answering paused requests and dialogs
		helpersMu sync.Mutex
		closing   bool
	)
	async := func(fn func()) {
		helpersMu.Lock()
		defer helpersMu.Unlock()
		if closing {
			return
		}
		helpers.Add(1)
		go func() { defer helpers.Done(); fn() }()
	}
	defer func() {
		closeTab() // closes the tab and disposes of its browser context
		helpersMu.Lock()
		closing = true
		helpersMu.Unlock()
		helpers.Wait()
	}()
	stop := context.AfterFunc(ctx, endTab)
	defer stop()

	col := newCollector()
	obs := &Observation{Session: fmt.Sprintf("tab%d", b.tabs.Add(1))}
	var overOnce sync.Once
	// Create the tab, then listen before anything loads.
	if err := chromedp.Do(tab); err != nil {
		return nil, b.runError(ctx, err)
	}
	if err := chromedp.Listen(tab, func(ev any) {
		switch e := ev.(type) {
		case *fetch.EventRequestPaused:
			id, raw := e.RequestID, e.Request.URL
			host, net := hostOf(raw)
			if net && !b.HostAllowed(host) {
				col.mu.Lock()
				if len(col.blocked) < 20 {
					col.blocked = append(col.blocked, clip(raw, maxURL))
				}
				col.mu.Unlock()
				async(func() {
					_, _ = chromedp.Call(tab, fetch.FailRequest, fetch.FailRequestParams{RequestID: id, ErrorReason: network.ErrorReasonBlockedByClient})
				})
				return
			}
			async(func() { _, _ = chromedp.Call(tab, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id}) })
		case *page.EventJavascriptDialogOpening:
			async(func() {
				_, _ = chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			})
		default:
			if col.event(ev, b.cfg.MaxPageBytes) {
				overOnce.Do(endTab) // the page is over its byte budget
			}
		}
	}); err != nil {
		return nil, b.runError(ctx, err)
	}
	if id := chromedp.FromContext(tab).BrowserContextID; id != "" {
		if _, err := chromedp.CallBrowser(tab, browser.SetDownloadBehavior,
			browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: id}); err != nil {
			return nil, b.runError(ctx, err)
		}
	}
	if _, err := chromedp.Call(tab, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		return nil, b.runError(ctx, err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(t.URL)); err != nil {
		var le *chromedp.LoadError
		if !errors.As(err, &le) {
			return nil, b.pageError(ctx, col, err)
		}
		obs.LoadError = clip(le.ErrorText, 100)
	}
	if obs.LoadError == "" {
		if err := b.settle(tab, col); err != nil {
			return nil, b.pageError(ctx, col, err)
		}
		if t.Act != nil {
			if err := b.act(tab, col, t.Act, obs); err != nil {
				return nil, b.pageError(ctx, col, err)
			}
		}
		if err := b.inspect(tab, obs); err != nil {
			return nil, b.pageError(ctx, col, err)
		}
		if t.Screenshot {
			png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
			if err != nil {
				return nil, b.pageError(ctx, col, err)
			}
			obs.PNG = png
		}
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	obs.Console = append([]Console(nil), col.console...)
	for _, r := range col.requests {
		obs.Requests = append(obs.Requests, *r)
	}
	obs.Blocked = append([]string(nil), col.blocked...)
	obs.Status = col.docStatus
	obs.Truncated = obs.Truncated || col.truncated
	return obs, nil
}

// settle waits until the page is quiet or settleMax passed.
func (b *Browser) settle(tab context.Context, col *collector) error {
	deadline := time.NewTimer(settleMax)
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

// runError maps a failure before the page loaded.
func (b *Browser) runError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// pageError maps a failure while the page ran: the caller's context, the
// byte budget, or the browser.
func (b *Browser) pageError(ctx context.Context, col *collector, err error) error {
	col.mu.Lock()
	large := col.tooLarge
	col.mu.Unlock()
	switch {
	case large:
		return &URLError{fmt.Sprintf("the page received more than %d bytes and was stopped", b.cfg.MaxPageBytes)}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}
