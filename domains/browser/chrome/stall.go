package chrome

import (
	"context"
	"fmt"
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
// check (at most a quarter of the call's time).
const stallReserve = 3 * time.Second

// stalledNote is added to Observation.Incomplete when the check stopped
// the page's script.
const stalledNote = "the page's script did not end and was stopped"

// stallGuard runs fn, the work of one session call on lt (see [Browser.call]),
// and checks afterwards that the page still answers. ctx is the call's
// context (bounded by MaxLoadTime), op the call's context for the tab.
// fn gets op shortened by the reserve (stallReserve, at most a quarter
// of the call's time), so the check runs within the call's time. When the
// check had to stop the page's script, stallGuard returns a [PageError] (or,
// when fn returned an observation, notes it in obs.Incomplete); when the
// script could not be stopped, it ends the tab (the session then ends
// with the call, see [Browser.after]) and says so.
func (b *Browser) stallGuard(ctx, op context.Context, lt *liveTab, obs *Observation, fn func(op context.Context, lt *liveTab, obs *Observation) error) error {
	dl, ok := ctx.Deadline()
	if !ok { // a call always has one (MaxLoadTime)
		return fn(op, lt, obs)
	}
	reserve := min(stallReserve, time.Until(dl)/4)
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
	switch b.unstall(op, lt.t, reserve) {
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
		return &PageError{fmt.Sprintf("the page's script ran past the call's time limit (%s) and was stopped; the session goes on",
			b.cfg.MaxLoadTime.Round(time.Second))}
	default:
		return &PageError{"the page's script does not end (stopping it did not help); its browser session was ended: open the page again"}
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
// the tab; the check takes at most about reserve: a fifth of it to ask,
// a fifth to stop the script, the rest to ask again (the page first works
// through what queued up behind the script, which takes longer on a busy
// machine).
func (b *Browser) unstall(ctx context.Context, t *tab, reserve time.Duration) stallState {
	end := time.Now().Add(reserve)
	if pageAnswers(ctx, reserve/5) {
		return stallNone
	}
	if ctx.Err() != nil {
		return stallNone // the call ended; the next one checks again
	}
	tctx, done := context.WithTimeout(ctx, reserve/5)
	_, err := chromedp.Call(tctx, runtime.TerminateExecution, cdp.Empty{})
	done()
	if err == nil && pageAnswers(ctx, time.Until(end)) {
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
