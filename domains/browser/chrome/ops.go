package chrome

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// This file holds the session actions beyond navigating, acting on an
// element and reading the page: forward, reload, hover, wait, upload,
// screenshot, page scripts and closing a tab. Each takes the session
// (take), runs one call on its current tab (call; see Session.do) and
// reports the page after it (drive without navigation: settle, then inspect).

// Forward goes forward one entry in the history of the current
// tab of the session and reports the page it comes to (the same
// page when there is no later entry). Errors: those of
// [Session.Act].
func (s *Session) Forward(ctx context.Context) (*Observation, error) {
	b := s.b
	return s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		h, err := chromedp.Call(op, page.GetNavigationHistory, cdp.Empty{})
		if err != nil {
			return err
		}
		if i := h.CurrentIndex; i >= 0 && i+1 < int64(len(h.Entries)) {
			before := h.Entries[i].URL
			if _, err := chromedp.Call(op, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[i+1].ID}); err != nil {
				return err
			}
			if h.Entries[i+1].URL != before {
				if err := awaitLocation(op, before); err != nil {
					return err
				}
			}
		}
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
}

// awaitLocation waits, at most historyWait, until the tab's location is
// no longer before (a history navigation committed).
func awaitLocation(op context.Context, before string) error {
	limit := time.NewTimer(historyWait)
	defer limit.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		now, err := chromedp.Run(op, chromedp.Evaluate[string](`location.href`))
		if err != nil || now != before {
			return nil // an error: the old document is going away
		}
		select {
		case <-op.Done():
			return op.Err()
		case <-limit.C:
			return nil
		case <-tick.C:
		}
	}
}

// historyWait bounds the wait for a history navigation to commit.
const historyWait = 2 * time.Second

// Reload reloads the current page of the session (as the
// browser's reload button does, keeping the session's cookies and
// storage) and reports it. A page that does not finish loading in time
// is reported as far as it got (Observation.Incomplete). Errors: those
// of [Session.Act].
func (s *Session) Reload(ctx context.Context) (*Observation, error) {
	b := s.b
	return s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		limit := b.cfg.MaxLoadTime * 11 / 20
		nctx, done := context.WithTimeout(op, limit)
		err := chromedp.Do(nctx, chromedp.Reload())
		done()
		switch {
		case err == nil:
		case op.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			obs.Incomplete = fmt.Sprintf("the page did not finish loading within %s", limit.Round(time.Second))
		default:
			return err
		}
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
}

// Hover moves the mouse over the element ref names on the current
// page of the session (to its centre, scrolled into view, as a
// user would: :hover styles apply and mouseover and mouseenter fire) and
// reports the page after it. ref is as for [Session.Act].
// Errors: those of [Session.Act], [ElementNotFound].
func (s *Session) Hover(ctx context.Context, ref string) (*Observation, error) {
	b := s.b
	return s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		defer releaseObjects(op)
		el, err := b.markRef(op, lt, ref)
		if err != nil {
			return err
		}
		if err := hoverAt(el); err != nil {
			return err
		}
		lt.col.touch()
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
}

// Wait is what [Session.Wait] waits for. Every condition set must
// hold at the same time; at least one must be set.
type Wait struct {
	// Text is a text the page's visible text contains (at most 500
	// bytes).
	Text string
	// Ref names an element that is on the page: a [PageElement.Ref] (an
	// accessible name such as "Sign in"), a [PageElement.ID] or an
	// [Element.ID], as for [Session.Act].
	Ref string
	// NetworkIdle waits until no request of the page has been in flight
	// for 500 ms.
	NetworkIdle bool
	// Timeout bounds the wait: 0 is [DefaultWaitTimeout]; it is at most
	// half of [Config.MaxLoadTime] (the rest of the call reads the page).
	Timeout time.Duration
}

// DefaultWaitTimeout is the wait of a [Wait] without Timeout.
const DefaultWaitTimeout = 5 * time.Second

// maxWaitText bounds Wait.Text and Wait.Ref.
const maxWaitText = 500

// Wait waits until the current page of the session meets
// w (see [Wait]), at most w.Timeout, and reports the page; met says
// whether every condition held before the time was up. Errors: those of
// [Session.Act], [BadWait].
func (s *Session) Wait(ctx context.Context, w Wait) (obs *Observation, met bool, err error) {
	b := s.b
	switch {
	case w.Text == "" && w.Ref == "" && !w.NetworkIdle:
		return nil, false, newError(BadWait, "a wait needs a text, an element or network idle to wait for")
	case len(w.Text) > maxWaitText, len(w.Ref) > maxWaitText:
		return nil, false, errorf(BadWait, "the text or element to wait for is longer than %d bytes", maxWaitText)
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	timeout = min(timeout, b.cfg.MaxLoadTime/2)
	textJS := fmt.Sprintf(`(document.body ? document.body.innerText : '').includes(%s)`, strconv.Quote(w.Text))
	obs, err = s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		wctx, done := context.WithTimeout(op, timeout)
		defer done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		idle := idleWatch{col: lt.col, since: time.Now(), requests: -1}
	poll:
		for {
			ok := true
			if w.NetworkIdle {
				ok = idle.check()
			}
			if ok && w.Text != "" {
				found, err := chromedp.Run(wctx, chromedp.Evaluate[bool](textJS))
				ok = err == nil && found
			}
			if ok && w.Ref != "" {
				_, err := b.markRef(wctx, lt, w.Ref)
				releaseObjects(wctx)
				if err != nil && KindOf(err) != ElementNotFound && wctx.Err() == nil {
					return err
				}
				ok = err == nil
			}
			if ok {
				met = true
				break
			}
			select {
			case <-op.Done():
				return op.Err()
			case <-wctx.Done():
				break poll
			case <-tick.C:
			}
		}
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	return obs, met, err
}

// idleWatch tells when no request of a tab has been in flight for the
// quiet period, from the tab's collector: also none of those in flight
// since before the call.
type idleWatch struct {
	col      *collector
	since    time.Time // quiet since
	requests int       // the collector's request count when last seen
}

// check reports whether the tab's network is idle now.
func (w *idleWatch) check() bool {
	w.col.mu.Lock()
	n, flying := w.col.nRequests, len(w.col.inflight)+len(w.col.earlier)
	w.col.mu.Unlock()
	if flying > 0 || n != w.requests {
		w.requests, w.since = n, time.Now()
		return false
	}
	return time.Since(w.since) >= quiet
}

// maxUploadFiles bounds the files of one upload.
const maxUploadFiles = 10

// uploadTargetJS checks that the marked element is a file input that
// takes n files; it returns "" or why not.
const uploadTargetJS = `function(n) {
  const el = this;
  if (el.tagName !== 'INPUT' || el.type !== 'file') return 'the element is not a file input';
  if (el.disabled) return 'the file input is disabled';
  if (n > 1 && !el.multiple) return 'the file input takes one file';
  return '';
}`

// Upload sets the files of the file input ref names (as for
// [Session.Act]) on the current page of the session to
// names, at most 10 files given relative to [Config.UploadDir], as if
// the user picked them (the page gets input and change events), and
// reports the page after it. The files are opened through an [os.Root]
// of the upload directory: absolute names, ".." and symbolic links that
// lead out of it are refused. Errors: those of [Session.Act],
// [ElementNotFound], [UploadRefused].
func (s *Session) Upload(ctx context.Context, ref string, names []string) (*Observation, error) {
	b := s.b
	paths, err := b.uploadPaths(names)
	if err != nil {
		return nil, err
	}
	return s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		defer releaseObjects(op)
		el, err := b.markRef(op, lt, ref)
		if err != nil {
			return err
		}
		why, err := callOn[string](el, uploadTargetJS, len(paths))
		if err != nil {
			return err
		}
		if why != "" {
			return errorf(UploadRefused, "cannot upload to %q: %s", clip(ref, 60), why)
		}
		// DOM.setFileInputFiles works without the DOM domain enabled.
		if _, err := chromedp.Call(el.op, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: paths, ObjectID: el.obj}); err != nil {
			return err
		}
		lt.col.touch()
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
}

// uploadPaths checks names against the upload directory and returns the
// files' absolute paths, with symbolic links inside the directory
// resolved (Chromium opens them by path). Each file is first opened
// through an os.Root of the directory, which refuses every name that
// leads out of it; the path given to Chromium is checked to be that same
// file.
func (b *Browser) uploadPaths(names []string) ([]string, error) {
	if b.cfg.UploadDir == "" {
		return nil, newError(UploadRefused, "uploads are turned off in the server configuration (no upload directory)")
	}
	if len(names) == 0 || len(names) > maxUploadFiles {
		return nil, errorf(UploadRefused, "an upload takes 1 to %d files, not %d", maxUploadFiles, len(names))
	}
	unusable := newError(UploadRefused, "the server's upload directory is not usable; the server log says why")
	dir, err := filepath.Abs(b.cfg.UploadDir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		b.log.Warn("browser upload directory not usable", "upload_dir", b.cfg.UploadDir, "error", err.Error())
		return nil, unusable
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.log.Warn("browser upload directory not usable", "upload_dir", b.cfg.UploadDir, "error", err.Error())
		return nil, unusable
	}
	defer root.Close()
	paths := make([]string, 0, len(names))
	for _, name := range names {
		p, ok := uploadPath(root, dir, name)
		if !ok {
			return nil, errorf(UploadRefused, "%q is not a file in the upload directory (names are relative to it and stay inside it)", clip(name, 80))
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// uploadPath opens name through root (the directory dir) and returns the
// path of the regular file it names, inside dir.
func uploadPath(root *os.Root, dir, name string) (string, bool) {
	if name == "" || strings.ContainsRune(name, 0) || !filepath.IsLocal(name) {
		return "", false
	}
	fi, err := regularFile(root, name)
	if err != nil {
		return "", false
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, name))
	if err != nil {
		return "", false
	}
	if rel, err := filepath.Rel(dir, real); err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	ri, err := os.Stat(real)
	if err != nil || !os.SameFile(fi, ri) {
		return "", false
	}
	return real, true
}

// MaxScreenshotBytes bounds the PNG of [Session.Screenshot]: a
// larger one is taken again at half the scale.
const MaxScreenshotBytes = 2 << 20

// Screenshot takes a PNG of the viewport of the current tab of
// the session (what a user sees, at most [MaxScreenshotBytes];
// a page too detailed for that is taken at half the scale) and reports
// the page. A page that does not answer in time gives a [PageFailed] error
// with the observation; with a JavaScript dialog open after the call
// there is no PNG and Observation.Dialog is set. Errors: those of
// [Session.Act].
func (s *Session) Screenshot(ctx context.Context) ([]byte, *Observation, error) {
	b := s.b
	var png []byte
	obs, err := s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		if err := b.drive(op, lt.t, lt.col, Task{Screenshot: true}, obs, false); err != nil {
			return err
		}
		png, obs.PNG = obs.PNG, nil
		if len(png) <= MaxScreenshotBytes {
			return nil
		}
		png = nil
		sctx, done := context.WithTimeout(op, b.inspectTime())
		defer done()
		m, err := chromedp.Call(sctx, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil || m.CSSVisualViewport == nil {
			return nil
		}
		v := m.CSSVisualViewport
		yes := true
		r, err := chromedp.Call(sctx, page.CaptureScreenshot, page.CaptureScreenshotParams{FromSurface: &yes,
			Clip: &page.Viewport{X: v.PageX, Y: v.PageY, Width: v.ClientWidth, Height: v.ClientHeight, Scale: 0.5}})
		if err == nil && len(r.Data) <= MaxScreenshotBytes {
			png = r.Data
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if png == nil && obs.Dialog == nil {
		why := "the page was too detailed for a screenshot within the server's size limit"
		if obs.Incomplete != "" {
			why = "the page did not answer in time; no screenshot was taken"
		}
		return nil, obs, newError(PageFailed, why)
	}
	return png, obs, nil
}

// Bounds of [Session.Eval].
const (
	maxScript       = 64 << 10
	maxScriptResult = 4 << 10
)

// Eval runs script (a JavaScript expression or statements, whose
// value is that of the last one; at most 64 KiB; for await, an async
// function called at once) in the current page of the session,
// awaiting the promise it returns, and returns its value as JSON clipped to 4 KiB ("undefined"
// when it has none; NaN, Infinity and bigints as JavaScript writes
// them), with the page after it. The script may run at most half of
// [Config.MaxLoadTime]; one still running then is terminated
// (Runtime.terminateExecution), so the page stays usable, and the answer
// is a [ScriptFailed] error. A script that throws is a [ScriptFailed] error too; with
// either the observation is returned as well. Refused with a
// [ScriptsOff] error unless [Config.AllowScripts]. A script that opens a
// JavaScript dialog returns no value: Observation.Dialog is set (answer
// it with [Session.AnswerDialog]). Errors: those of
// [Session.Act].
func (s *Session) Eval(ctx context.Context, script string) (string, *Observation, error) {
	b := s.b
	if !b.cfg.AllowScripts {
		return "", nil, newError(ScriptsOff, "running scripts in browser pages is turned off in the server configuration")
	}
	if strings.TrimSpace(script) == "" || len(script) > maxScript {
		return "", nil, errorf(ScriptFailed, "a script is 1 to %d bytes, not %d", maxScript, len(script))
	}
	var out string
	var serr error
	obs, err := s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		res, err := b.evaluate(op, script, b.cfg.MaxLoadTime/2)
		if op.Err() != nil {
			return op.Err() // also: a dialog the script opened
		}
		out, serr = res, err
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	switch {
	case err != nil:
		return "", nil, err
	case obs.Dialog != nil:
		return "", obs, nil
	case serr != nil:
		return "", obs, serr
	}
	return out, obs, nil
}

// evaluate runs script in the tab for at most budget and returns its
// value as JSON, or the script's failure as a ScriptFailed error. A script
// still running after budget is terminated.
func (b *Browser) evaluate(op context.Context, script string, budget time.Duration) (string, error) {
	late := errorf(ScriptFailed, "the script did not finish within %s and was stopped", budget.Round(time.Millisecond))
	ectx, done := context.WithTimeout(op, budget+250*time.Millisecond)
	defer done()
	yes := true
	start := time.Now()
	r, err := chromedp.Call(ectx, runtime.Evaluate, runtime.EvaluateParams{Expression: script,
		ReturnByValue: &yes, AwaitPromise: &yes,
		// V8 terminates a script still running after Timeout; ectx ends
		// the wait for a promise that never settles.
		Timeout: runtime.TimeDelta(budget.Milliseconds())})
	if err != nil {
		if op.Err() != nil {
			return "", op.Err()
		}
		// V8's timeout answers with an internal error.
		if ectx.Err() != nil || time.Since(start) >= budget {
			b.stopScript(op)
			return "", late
		}
		return "", newError(ScriptFailed, "the script could not be run in the page")
	}
	if d := r.ExceptionDetails; d != nil {
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			desc, _, _ := strings.Cut(d.Exception.Description, "\n")
			msg = desc
		}
		if strings.Contains(msg, "terminated") || (d.Exception == nil && msg == "Uncaught") {
			return "", late
		}
		return "", newError(ScriptFailed, "the script threw: "+clip(strings.TrimSpace(msg), maxMessage))
	}
	v := r.Result
	switch {
	case v == nil || v.Type == runtime.RemoteObjectTypeUndefined:
		return "undefined", nil
	case v.UnserializableValue != "":
		return string(v.UnserializableValue), nil
	case len(v.Value) > 0:
		return clip(string(v.Value), maxScriptResult-len("…")), nil
	}
	return "null", nil
}

// stopScript terminates the script running in the tab's page, if one
// is: a page that answers a trivial evaluation at once runs none (it
// only waits for a promise), and terminating then would stop the next
// script instead. "At once" and the wait for the termination are
// stretched by MaxLoadTime ([Browser.stretch]).
func (b *Browser) stopScript(op context.Context) {
	probe := func(wait time.Duration) bool {
		pctx, done := context.WithTimeout(op, wait)
		defer done()
		_, err := chromedp.Run(pctx, chromedp.Evaluate[int](`1`))
		return err == nil
	}
	if probe(b.stretch(300 * time.Millisecond)) {
		return
	}
	tctx, done := context.WithTimeout(op, b.inspectTime())
	defer done()
	_, _ = chromedp.Call(tctx, runtime.TerminateExecution, cdp.Empty{})
	probe(b.inspectTime())
}

// CloseTab closes tab index (see [Session.Tabs]) of
// the session and reports the current tab's page: closing the
// current tab makes the tab before it current (the next one when it was
// the first). The session's only tab is not closed (end the session
// instead). Errors: those of [Session.Act], [NoSuchTab] (also for
// the only tab), [DialogOpen] while the current tab has a dialog
// open (nothing is closed).
func (s *Session) CloseTab(ctx context.Context, index int) (*Observation, error) {
	b := s.b
	ls, err := b.take(ctx, s.owner, s.id)
	if err != nil {
		return nil, err
	}
	n := len(ls.tabs)
	if n > 0 {
		if d := ls.tabs[ls.cur].t.openDialog(); d != nil {
			b.release(ls)
			return nil, dialogOpen(d)
		}
	}
	if index < 0 || index >= n || n == 1 {
		b.release(ls)
		if n == 1 && index == 0 {
			return nil, &lastTabError{noSuchTab(index, n)}
		}
		return nil, noSuchTab(index, n)
	}
	lt := ls.tabs[index]
	ls.tabs = slices.Delete(ls.tabs, index, index+1)
	if index < ls.cur || (index == ls.cur && index > 0) {
		ls.cur--
	}
	lt.t.close()
	obs, err := b.call(ctx, ls, func(op context.Context, lt *liveTab, obs *Observation) error {
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	b.after(ls, err)
	return obs, err
}
