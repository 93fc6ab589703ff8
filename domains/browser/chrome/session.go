package chrome

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// sessions is the registry of a Browser's live sessions.
type sessions struct {
	mu     sync.Mutex
	m      map[string]*liveSession
	closed bool
	reaps  sync.WaitGroup // idle timers running endSession
}

// Session is a handle on one live browser session: the session id
// [Browser.OpenSession] returned (Observation.Session) of the identity
// that opened it. [Browser.Session] makes one; its methods are the calls
// on the session, each acting on the session's current tab and returning
// what the browser saw ([Observation], with the page after the call in
// Observation.Page).
//
// A handle is a name, not a lock: every call looks the session up,
// checks that it belongs to the handle's identity (else an [Error] of
// kind [NotOwner]) and is still open (else [SessionGone]: it ended, was
// idle too long, or lives on another replica), waits for a call under
// way on it, and takes one of the browser's page slots (fairly between
// identities) for the time of the call. Calls on one session run one at
// a time. A handle is cheap, safe for concurrent use, and stays valid
// after the session ended (its calls then answer [SessionGone]).
type Session struct {
	b         *Browser
	owner, id string
}

// Session returns the handle on owner's live session id (see [Session]).
// It does not look the session up: each call does, since a session can
// end between two calls.
func (b *Browser) Session(owner, id string) *Session {
	return &Session{b: b, owner: owner, id: id}
}

// ID is the session's id (Observation.Session of [Browser.OpenSession]).
func (s *Session) ID() string { return s.id }

// callFunc is what one call on a session does on its current tab lt,
// within the call's context op, filling obs.
type callFunc func(op context.Context, lt *liveTab, obs *Observation) error

// do runs fn as one call on the session's current tab: it takes the
// session ([Browser.take]: lookup, owner and gone checks, the wait for a
// call under way), runs the call ([Browser.call]: the page slot, the time
// limit, the dialog check, the page after it) and gives the session back
// ([Browser.after]).
func (s *Session) do(ctx context.Context, fn callFunc) (*Observation, error) {
	ls, err := s.b.take(ctx, s.owner, s.id)
	if err != nil {
		return nil, err
	}
	obs, err := s.b.call(ctx, ls, fn)
	s.b.after(ls, err)
	return obs, err
}

// liveSession is the state of a live browser session in the registry:
// an isolated browser context (see isolated) and its tabs, kept between
// calls so that the page, its cookies and storage last. It belongs to
// the identity that opened it. Its busy channel holds it for one call at
// a time.
type liveSession struct {
	id, owner string
	b         *Browser
	gen       uint64 // the browser process it lives in
	busy      chan struct{}

	// Under busy:
	in   *isolated
	end  context.CancelFunc // ends the contexts its tabs live in
	tabs []*liveTab
	cur  int
	skip int // gate refusals already reported
	// tabsClosed counts the tabs whose page closed itself that no call
	// reported yet.
	tabsClosed int
	closed     bool
	timer      *time.Timer
	lastUse    time.Time // under b.sess.mu
}

// liveTab is one tab of a session and the collector of its events.
type liveTab struct {
	t   *tab
	col *collector
	// refs maps the element refs of the tab's latest accessibility read
	// to their backend DOM node ids (see [Browser.markRef]); used under
	// the session's lock.
	refs map[string]pageNode
	// frames are the cross-site frames of the tab's page it attached
	// to (frames.go), by frame id.
	frames map[string]*frameTarget
}

// SessionCount is the number of live sessions (for tests and health).
func (b *Browser) SessionCount() int {
	b.sess.mu.Lock()
	defer b.sess.mu.Unlock()
	return len(b.sess.m)
}

func newSessionID() string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return "bs-" + hex.EncodeToString(r[:])
}

// lock takes the session for one call, waiting for a call under way
// (bounded by that call's own time limit) or until ctx ends.
func (s *liveSession) lock(ctx context.Context) error {
	select {
	case s.busy <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *liveSession) unlock() { <-s.busy }

// reserve adds a new session of owner to the registry, taken (locked) by
// the caller. At the owner's limit the owner's least recently used idle
// session is returned to be ended (evict); at the browser's limit the
// answer is a [Busy] error.
func (b *Browser) reserve(owner string) (s, evict *liveSession, err error) {
	r := &b.sess
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, ErrClosed
	}
	if r.m == nil {
		r.m = map[string]*liveSession{}
	}
	mine := 0
	for _, o := range r.m {
		if o.owner != owner {
			continue
		}
		mine++
		if evict == nil || o.lastUse.Before(evict.lastUse) {
			select { // only an idle one
			case o.busy <- struct{}{}:
				<-o.busy
				evict = o
			default:
			}
		}
	}
	if mine < b.cfg.MaxSessionsPerIdentity {
		evict = nil
	} else if evict == nil {
		return nil, nil, busy(b.cfg.MaxLoadTime,
			"this identity has %d browser sessions in use (the server's limit); retry when one is done", mine)
	}
	if evict == nil && len(r.m) >= b.cfg.MaxSessions {
		return nil, nil, busy(b.cfg.SessionIdle,
			"the server's browser holds %d live sessions (its limit); retry later", len(r.m))
	}
	if evict != nil {
		delete(r.m, evict.id)
	}
	s = &liveSession{id: newSessionID(), owner: owner, b: b, busy: make(chan struct{}, 1), lastUse: time.Now()}
	s.busy <- struct{}{}
	r.m[s.id] = s
	return s, evict, nil
}

// find returns the session.
func (b *Browser) find(owner, id string) (*liveSession, error) {
	b.sess.mu.Lock()
	defer b.sess.mu.Unlock()
	s := b.sess.m[id]
	switch {
	case s == nil:
		return nil, sessionGone(id)
	case s.owner != owner:
		return nil, newError(NotOwner, "the browser session belongs to another identity")
	}
	return s, nil
}

// forget removes s from the registry (if it is still there).
func (b *Browser) forget(s *liveSession) {
	b.sess.mu.Lock()
	defer b.sess.mu.Unlock()
	if b.sess.m[s.id] == s {
		delete(b.sess.m, s.id)
	}
}

// OpenSession opens url in a new live session of owner (the caller's
// identity) and returns what the browser saw; Observation.Session is the
// session's id, which [Browser.Session] takes to make the handle that
// the session's calls are made on. A page that did not load, did not
// answer in time or flooded its console is not kept: its session ends
// before OpenSession returns (Observation.Live is then false). Errors are those of [Browser.Run],
// and a [Busy] error at the session limits.
func (b *Browser) OpenSession(ctx context.Context, owner, url string) (*Observation, error) {
	if _, err := b.CheckURL(url); err != nil {
		return nil, err
	}
	if b.reason != "" {
		return nil, errors.New(b.reason)
	}
	s, evict, err := b.reserve(owner)
	if err != nil {
		return nil, err
	}
	if evict != nil {
		b.endSession(evict)
	}
	obs, err := b.openIn(ctx, s, url)
	if err != nil || obs.LoadError != "" || obs.Incomplete != "" || obs.ConsoleFlooded {
		b.forget(s)
		s.close()
		s.unlock()
		return obs, err
	}
	b.release(s)
	obs.Live = true
	return obs, nil
}

// OpenTab opens url in a new tab of the session, which becomes its
// current tab (at most [Config.MaxSessionTabs]; one more is a
// [Busy] error). Errors: those of [Session.Navigate].
func (s *Session) OpenTab(ctx context.Context, url string) (*Observation, error) {
	b := s.b
	if _, err := b.CheckURL(url); err != nil {
		return nil, err
	}
	ls, err := b.take(ctx, s.owner, s.id)
	if err != nil {
		return nil, err
	}
	if len(ls.tabs) >= b.cfg.MaxSessionTabs {
		b.release(ls)
		return nil, busy(time.Second, "the browser session has %d tabs open (the server's limit)", len(ls.tabs))
	}
	obs, err := b.openIn(ctx, ls, url)
	b.after(ls, err)
	return obs, err
}

// take finds the session and takes it for a call.
func (b *Browser) take(ctx context.Context, owner, id string) (*liveSession, error) {
	s, err := b.find(owner, id)
	if err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	if s.closed {
		s.unlock()
		return nil, sessionGone(id)
	}
	if b.restarted(s.gen) {
		b.forget(s)
		s.close()
		s.unlock()
		return nil, sessionGone(id)
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.adopt(ctx)                                   // pages opened between calls
	if n := s.prune(); n > 0 && len(s.tabs) == 0 { // pages closed between calls
		b.forget(s)
		s.close()
		s.unlock()
		return nil, sessionGone(id)
	} else {
		s.tabsClosed += n
	}
	return s, nil
}

// after ends a call on s: a session whose current tab can no longer act
// (its renderer ended, it went over its byte budget) ends too.
func (b *Browser) after(s *liveSession, err error) {
	if err != nil && len(s.tabs) > 0 && (s.tabs[s.cur].t.op.Err() != nil || s.tabs[s.cur].t.gone()) {
		b.forget(s)
		s.close()
		s.unlock()
		return
	}
	b.release(s)
}

// release arms s's idle timer and gives the session back.
func (b *Browser) release(s *liveSession) {
	b.sess.mu.Lock()
	s.lastUse = time.Now()
	listed := b.sess.m[s.id] == s
	b.sess.mu.Unlock()
	if !listed { // ended (Session.End, Close) during the call
		s.close()
		s.unlock()
		return
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(b.cfg.SessionIdle, func() { b.reap(s) })
	} else {
		s.timer.Reset(b.cfg.SessionIdle)
	}
	s.unlock()
}

// reap ends s after it was idle (its timer fired).
func (b *Browser) reap(s *liveSession) {
	r := &b.sess
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.reaps.Add(1)
	r.mu.Unlock()
	defer r.reaps.Done()
	b.endSession(s)
}

// Act acts on the current page of the session (a click, a fill, a
// choice, a check), without loading it again, and returns what the
// browser saw during the call (console messages and requests of this
// call, the page as it is now, Observation.Page). a.ElementID is a ref
// of the page ([PageElement.Ref], e.g. "Sign in"), an [PageElement.ID]
// or an [Element.ID]. Every session call returns the page after it the
// same way, or Observation.Dialog when a JavaScript dialog opened (see
// [Session.AnswerDialog]). Errors, by [Kind]: [SessionGone], [NotOwner],
// [DialogOpen], [ElementNotFound], [NoSuchOption], [CannotCheck], and
// those of [Browser.Run].
func (s *Session) Act(ctx context.Context, a *Act) (*Observation, error) {
	return s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		return s.b.drive(op, lt.t, lt.col, Task{Act: a}, obs, false)
	})
}

// End ends the session and closes its tabs and browser context. A call
// under way on it finishes first (bounded by ctx: when ctx ends first,
// that call ends the session as it returns). Errors, by [Kind]:
// [SessionGone], [NotOwner].
func (s *Session) End(ctx context.Context) error {
	ls, err := s.b.find(s.owner, s.id)
	if err != nil {
		return err
	}
	s.b.forget(ls)
	if err := ls.lock(ctx); err != nil {
		return err // the call under way closes it when it sees it forgotten (release)
	}
	ls.close()
	ls.unlock()
	return nil
}

// endSession ends s (the registry no longer lists it), waiting for a
// call under way.
func (b *Browser) endSession(s *liveSession) {
	b.forget(s)
	s.busy <- struct{}{}
	s.close()
	<-s.busy
}

// endSessions ends every session (Close); later ones are refused.
func (b *Browser) endSessions() {
	r := &b.sess
	r.mu.Lock()
	r.closed = true
	all := make([]*liveSession, 0, len(r.m))
	for _, s := range r.m {
		all = append(all, s)
	}
	r.m = nil
	r.mu.Unlock()
	for _, s := range all {
		s.busy <- struct{}{}
		s.close()
		<-s.busy
	}
	r.reaps.Wait()
}

// close closes s's tabs and browser context; s is taken.
func (s *liveSession) close() {
	if s.closed {
		return
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	for _, lt := range s.tabs {
		lt.closeFrames()
		lt.t.close()
	}
	s.tabs = nil
	if s.in != nil {
		s.in.close()
	}
	if s.end != nil {
		s.end()
	}
}

// openIn opens url in a new tab of s (creating its browser context on
// first use); s is taken.
func (b *Browser) openIn(ctx context.Context, s *liveSession, url string) (*Observation, error) {
	return b.call(ctx, s, nil, url)
}

// call runs one call on s (taken): it takes a page slot, bounds the call
// by ctx and MaxLoadTime, and runs fn on the current tab; with url set it
// opens url in a new tab first (creating the browser context on first
// use).
//
// While a JavaScript dialog is open on the current tab the answer is a
// [DialogOpen] (see [Session.AnswerDialog]); a dialog that
// opens during the call ends it at once, with Observation.Dialog set.
func (b *Browser) call(ctx context.Context, s *liveSession, fn callFunc, url ...string) (*Observation, error) {
	if len(s.tabs) > 0 {
		if d := s.tabs[s.cur].t.openDialog(); d != nil {
			return nil, dialogOpen(d)
		}
	}
	return b.callOn(ctx, s, fn, url...)
}

// callOn is call without the check for an open dialog.
func (b *Browser) callOn(ctx context.Context, s *liveSession, fn callFunc, url ...string) (*Observation, error) {
	release, err := b.takeSlot(WithIdentity(ctx, s.owner))
	if err != nil {
		return nil, err
	}
	defer release()
	root, gen, err := b.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer b.runs.Done()
	caller := ctx
	ctx, cancel := context.WithTimeout(ctx, b.cfg.MaxLoadTime)
	defer cancel()
	obs := &Observation{Session: s.id}
	if len(url) > 0 {
		if s.in == nil {
			s.gen = gen
			ic, err := b.newIsolated(ctx, root)
			if err != nil {
				return nil, b.overLimit(caller, err, b.runError(ctx, gen, err))
			}
			ic.mu.Lock()
			ic.keep = b.cfg.MaxSessionTabs
			ic.mu.Unlock()
			s.in = ic
		}
		if _, err := s.newTab(ctx); err != nil {
			return nil, b.overLimit(caller, err, b.runError(ctx, gen, err))
		}
		fn = func(op context.Context, lt *liveTab, obs *Observation) error {
			return b.drive(op, lt.t, lt.col, Task{URL: url[0]}, obs, true)
		}
	}
	if len(s.tabs) == 0 {
		return nil, sessionGone(s.id)
	}
	lt := s.tabs[s.cur]
	lt.col.rebase()
	popups0 := s.in.popups.Load() // popups closed before the call
	if len(s.tabs) > 1 || s.in.sawPopups() {
		// A page the session's pages opened took the front: input to a
		// page behind it waits for frames that do not come.
		fctx, done := context.WithTimeout(lt.t.op, b.inspectTime())
		_, _ = chromedp.Call(fctx, page.BringToFront, cdp.Empty{})
		done()
	}
	// The call's context for the tab: it ends with the call, with the
	// tab (its renderer ended, over its byte budget, session ended), or
	// when a JavaScript dialog opens (whatever the call waits on then
	// waits for the dialog's answer).
	op, stop := context.WithCancelCause(lt.t.op)
	defer stop(nil)
	defer context.AfterFunc(ctx, func() { stop(ctx.Err()) })()
	lt.t.watchDialog(func() { stop(errDialog) })
	defer lt.t.watchDialog(nil)
	if len(url) == 0 {
		watch(op, lt.col) // live regions and changes, from before the call acts
	}
	err = b.stallGuard(ctx, op, lt, obs, fn) // stall.go: a script that never ends is stopped
	if err == nil {
		err = b.readLive(op, lt, obs)
	}
	if d := lt.t.openDialog(); d != nil {
		obs.Dialog, obs.Page = d, nil
		obs.TabOpened = s.adopt(ctx)
		s.skip = b.collect(obs, lt.t, lt.col, s.in.gate, s.skip)
		obs.PopupsClosed -= int(popups0)
		return obs, nil
	}
	if err != nil && lt.t.gone() && len(s.tabs) > 1 {
		// The page closed its own tab (window.close()): the session goes
		// on in the tab before it.
		err = nil
		obs.Incomplete, obs.Page, obs.Action = "", nil, nil
	}
	if err != nil {
		return nil, b.overLimit(caller, err, b.pageError(ctx, gen, lt.t, lt.col, err))
	}
	obs.TabOpened = s.adopt(ctx)
	s.skip = b.collect(obs, lt.t, lt.col, s.in.gate, s.skip)
	obs.PopupsClosed -= int(popups0)
	obs.TabsClosed, s.tabsClosed = s.prune()+s.tabsClosed, 0
	if obs.TabsClosed > 0 {
		if len(s.tabs) == 0 {
			return nil, sessionGone(s.id)
		}
		if cur := s.tabs[s.cur]; cur != lt {
			// The current tab closed: what the call shows is the page of
			// the tab that is current now.
			op, stop := context.WithCancel(cur.t.op)
			defer stop()
			defer context.AfterFunc(ctx, stop)()
			obs.Page, obs.Incomplete, obs.LoadError = nil, "", ""
			if d := cur.t.openDialog(); d != nil {
				obs.Dialog = d
			} else if err := b.readLive(op, cur, obs); err == nil && obs.Page != nil {
				obs.URL, obs.Title = obs.Page.URL, obs.Page.Title
			}
		}
	}
	return obs, nil
}

// prune drops the tabs of s whose page closed itself (window.close());
// s is taken. It returns how many it dropped. When the current tab was
// one, the tab before it becomes current.
func (s *liveSession) prune() (closed int) {
	before, curGone := 0, false
	keep := s.tabs[:0]
	for i, lt := range s.tabs {
		if lt.t.gone() {
			lt.t.close()
			closed++
			curGone = curGone || i == s.cur
			continue
		}
		if i < s.cur {
			before++
		}
		keep = append(keep, lt)
	}
	clear(s.tabs[len(keep):])
	s.tabs = keep
	if curGone {
		s.cur = max(before-1, 0)
	} else {
		s.cur = before
	}
	if len(s.tabs) == 0 {
		s.cur = 0
	}
	return closed
}

// readLive reads the page of lt after a call into obs.Page (see
// [Observation.Page]) and keeps its refs for the next actions. A read
// that fails or does not answer within inspectMax leaves Page nil; the
// error is set only when the tab's context ended.
func (b *Browser) readLive(op context.Context, lt *liveTab, obs *Observation) error {
	if obs.Page != nil || obs.Incomplete != "" || obs.LoadError != "" {
		return nil
	}
	rctx, done := context.WithTimeout(op, b.inspectTime())
	defer done()
	p, err := b.readPageOf(rctx, lt, DefaultMaxPageElements)
	if err != nil {
		if op.Err() != nil {
			return op.Err()
		}
		b.log.Debug("reading a session's page", "err", err)
		return nil
	}
	obs.Page = p
	lt.refs = p.refs
	return nil
}

// newTab opens a tab in s's browser context that lives until the session
// ends; ctx bounds its creation. It becomes the current tab. With id set
// it attaches to that page of the context instead (a page the session's
// pages opened, see adopt), which does not become current.
func (s *liveSession) newTab(ctx context.Context, id ...target.ID) (*liveTab, error) {
	life, end := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, end)
	col := newCollector(&s.b.cfg)
	t, err := s.in.openTab(life, col, id...)
	if !stop() && err == nil {
		// ctx ended while the tab was created: it is not kept.
		t.close()
		end()
		return nil, ctx.Err()
	}
	if err != nil {
		end()
		return nil, err
	}
	prev := s.end
	s.end = func() {
		end()
		if prev != nil {
			prev()
		}
	}
	lt := &liveTab{t: t, col: col}
	t.live = lt
	t.holdDialogs.Store(true)
	s.tabs = append(s.tabs, lt)
	if len(id) == 0 {
		s.cur = len(s.tabs) - 1
	}
	return lt, nil
}

// adopt makes the pages that s's pages opened (target=_blank links,
// window.open), which its browser context kept while it had room, tabs
// of s; s is taken. It returns the index of the last one, 0 when there
// is none. ctx bounds it; a page that cannot be attached is closed.
func (s *liveSession) adopt(ctx context.Context) (opened int) {
	if s.in == nil || s.closed {
		return 0
	}
	kept := s.in.takeKept()
	if len(kept) == 0 {
		return 0
	}
	actx, done := context.WithTimeout(ctx, s.b.inspectTime())
	defer done()
	for _, id := range kept {
		if len(s.tabs) < s.b.cfg.MaxSessionTabs && actx.Err() == nil {
			if _, err := s.newTab(actx, id); err == nil {
				opened = len(s.tabs) - 1
				continue
			}
		}
		// Over the limit, or it could not be attached (a dialog it opened
		// as it loaded holds every command): closed, as a run's popup is.
		s.in.popups.Add(1)
		cctx, cdone := context.WithTimeout(s.in.root, closeWait)
		_, _ = chromedp.CallBrowser(cctx, target.CloseTarget, target.CloseTargetParams{TargetID: id})
		cdone()
	}
	return opened
}
