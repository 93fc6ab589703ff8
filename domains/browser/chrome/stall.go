package chrome

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// A page's script that never ends (a click handler running `while
// (true) {}`) holds the renderer's main thread: every later command of
// the tab (reading the page, dispatching input) waits behind it, so
// without help each later call of the session would wait out its whole
// time limit and fail. A session call therefore keeps the end of its
// time for a check: when its work did not finish in time, or the page
// did not answer, the page is asked for a trivial evaluation; when that
// gets no answer, the script is stopped (Runtime.terminateExecution,
// which V8 handles as an interrupt, between any two instructions) and
// the page asked again. A page that answers then goes on (a later call
// works); one that still does not (its timers start the loop again) has
// its tab ended, which ends the session.
//
// Every session call runs its work under [Browser.stallGuard] (session.go,
// callOn); TestIsolatedSessionEndlessScripts checks it.

// stallReserve is the part of a session call's time kept back for the
// check (stretched by MaxLoadTime, see [Browser.stretch]; at most a
// quarter of the call's time).
const stallReserve = 3 * time.Second

// stalledNote is added to Observation.Incomplete when the check stopped
// the page's script.
const stalledNote = "the page's script did not end and was stopped"

// stallGuard runs fn, the work of one session call on lt (see [Browser.call]),
// and checks afterwards that the page still answers. ctx is the call's
// context (bounded by MaxLoadTime), op the call's context for the tab.
// fn gets op shortened by the reserve (stallReserve, at most a quarter
// of the call's time), so the check runs within the call's time. When the
// check had to stop the page's script, stallGuard returns a [PageFailed] error (or,
// when fn returned an observation, notes it in obs.Incomplete); when the
// script could not be stopped, it ends the tab (the session then ends
// with the call, see [Browser.after]) and says so.
//
// The check ends a quarter of the reserve before the call's deadline, so
// that its verdict, not the deadline, ends the call. When fn finished in
// time but the page did not answer its inspection (a page busy with a
// heavy layout is as deaf as one running an endless script), the check
// may take the rest of the call's time: a page that is merely slow
// answers within it and keeps its session; it is then inspected and read
// again (see [Browser.readAnswering]) if time is left. A call that runs
// past its limit anyway gets a [PageFailed] error, never a bare context error
// (see [Browser.overLimit]).
func (b *Browser) stallGuard(ctx, op context.Context, lt *liveTab, obs *Observation, fn func(op context.Context, lt *liveTab, obs *Observation) error) error {
	dl, ok := ctx.Deadline()
	if !ok { // a call always has one (MaxLoadTime)
		return fn(op, lt, obs)
	}
	reserve := min(b.stretch(stallReserve), time.Until(dl)/4)
	work, done := context.WithDeadline(op, dl.Add(-reserve))
	err := fn(work, lt, obs)
	timedOut := work.Err() != nil
	done()
	if op.Err() != nil || (!timedOut && obs.Incomplete == "") {
		// The caller ended the call, the tab ended, a JavaScript dialog
		// opened (the page waits for its answer, see dialog.go), or the
		// page answered: nothing to check.
		return err
	}
	end := dl.Add(-reserve / 4)
	st := b.unstall(op, lt.t, end, timedOut)
	if st != stallEnded && !timedOut && err == nil && obs.Page == nil && obs.LoadError == "" {
		b.readAnswering(op, lt, obs, end)
	}
	switch st {
	case stallNone:
		return err
	case stallStopped:
		if err == nil {
			if obs.Incomplete != "" {
				obs.Incomplete += "; "
			}
			obs.Incomplete += stalledNote
			return nil
		}
		return errorf(PageFailed, "the page's script ran past the call's time limit (%s) and was stopped; the session goes on",
			b.cfg.MaxLoadTime.Round(time.Second))
	default:
		return newError(PageFailed, "the page's script does not end (stopping it did not help); its browser session was ended: open the page again")
	}
}

// unansweredNote ends Observation.Incomplete when the page did not answer
// its inspection (see [Browser.drive]).
var unansweredNote = fmt.Sprintf("the page did not answer within %s", inspectMax)

// readAnswering completes the observation of lt after the check found
// that its page answers again: when the inspection had got no answer
// (obs.Incomplete ends with unansweredNote), it inspects the page again
// and, when that works, drops the note; then it reads the page into
// obs.Page, with its cross-site frames like the read after any call
// ([Browser.readLive]). Each step is bounded by inspectTime and by end.
func (b *Browser) readAnswering(op context.Context, lt *liveTab, obs *Observation, end time.Time) {
	step := func(fn func(ctx context.Context) error) error {
		wait := min(time.Until(end), b.inspectTime())
		if wait < b.inspectTime()/6 {
			return context.DeadlineExceeded
		}
		sctx, done := context.WithTimeout(op, wait)
		defer done()
		return fn(sctx)
	}
	if strings.HasSuffix(obs.Incomplete, unansweredNote) {
		if err := step(func(ctx context.Context) error { return b.inspect(ctx, obs) }); err != nil {
			b.log.Debug("inspecting a session's page after it answered again", "err", err)
			return
		}
		obs.Incomplete = strings.TrimSuffix(strings.TrimSuffix(obs.Incomplete, unansweredNote), "; ")
	}
	if err := step(func(ctx context.Context) error {
		p, err := b.readPageOf(ctx, lt, DefaultMaxPageElements) // with its cross-site frames, as readLive
		if err == nil {
			obs.Page, lt.refs = p, p.refs
		}
		return err
	}); err != nil {
		b.log.Debug("reading a session's page after it answered again", "err", err)
	}
}

// stallState is what [Browser.unstall] found and did.
type stallState int

const (
	stallNone    stallState = iota // the page answers
	stallStopped                   // its script was stopped; it answers now
	stallEnded                     // it still did not answer; the tab was ended
)

// unstall checks that tab t answers, stopping its script when it does
// not, and ends the tab when even that does not help. ctx is a context of
// the tab; the check ends by end. After a call whose work ran out of time
// (timedOut) it asks the page for a fifth of the time, takes up to a fifth
// to stop the script and the rest to ask again (the page first works
// through what queued up behind the script, which takes longer on a busy
// machine); after a call whose page did not answer its inspection, it
// asks for a third of the time first (a page busy with a heavy layout
// answers once that is done, and stopping scripts does not help it). The
// page is asked again even when the request to stop the script got no
// answer in time.
func (b *Browser) unstall(ctx context.Context, t *tab, end time.Time, timedOut bool) stallState {
	budget := time.Until(end)
	first := budget / 3
	if timedOut {
		first = budget / 5
	}
	if pageAnswers(ctx, first) {
		return stallNone
	}
	if ctx.Err() != nil {
		return stallNone // the call ended; the next one checks again
	}
	tctx, done := context.WithTimeout(ctx, min(budget/5, time.Until(end)/2))
	_, _ = chromedp.Call(tctx, runtime.TerminateExecution, cdp.Empty{})
	done()
	if pageAnswers(ctx, time.Until(end)) {
		b.log.Info("browser session: a page's script did not end and was stopped")
		return stallStopped
	}
	if ctx.Err() != nil {
		return stallNone
	}
	b.log.Warn("browser session: a page's script did not end and could not be stopped; its session ends")
	t.stopOp()
	return stallEnded
}

// pageAnswers reports whether the page of ctx (a tab's context) evaluates a
// trivial expression within wait. An evaluation that fails at once (the
// termination asked for the script caught the evaluation instead, when
// the script had just ended) is tried again while wait lasts.
func pageAnswers(ctx context.Context, wait time.Duration) bool {
	pctx, done := context.WithTimeout(ctx, wait)
	defer done()
	for {
		v, err := chromedp.Run(pctx, chromedp.Evaluate[int]("1"))
		if err == nil && v == 1 {
			return true
		}
		select {
		case <-pctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// overLimit is the error of a session call that failed with err, which
// [Browser.pageError] or [Browser.runError] mapped to mapped: when that is
// the end of the call's own time limit (MaxLoadTime; caller, the
// caller's context, goes on), a [PageFailed] error saying so (err itself when
// it is one, such as the check's verdict) instead of a bare context
// error.
func (b *Browser) overLimit(caller context.Context, err, mapped error) error {
	if caller.Err() != nil || !errors.Is(mapped, context.DeadlineExceeded) {
		return mapped
	}
	if pe := (*Error)(nil); errors.As(err, &pe) && pe.Kind == PageFailed {
		return pe
	}
	return errorf(PageFailed, "the page did not answer within the call's time limit (%s)", b.cfg.MaxLoadTime.Round(time.Second))
}
