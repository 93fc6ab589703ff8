package chrome

import (
	"context"
	"errors"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Dialogs in live sessions.
//
// In a run ([Browser.Run]) a JavaScript dialog is dismissed as it opens.
// In a live session it stays open and is recorded on its tab: the call
// under way when it opens returns at once with [Observation.Dialog] (the
// command that caused it, a click, a navigation, a script, blocks while
// the dialog is open, so the call's context is cancelled rather than
// waited on); every later call on the session gets a [DialogOpen] error
// until [Session.AnswerDialog] answers it. A dialog still open
// when the session ends is dismissed with its tab.

// Dialog is a JavaScript dialog open on a session's page.
type Dialog struct {
	// Type is "alert", "confirm", "prompt" or "beforeunload".
	Type string
	// Message is the dialog's text (clipped); DefaultPrompt the default
	// answer of a prompt.
	Message, DefaultPrompt string
}

// errDialog is the cause of a call's context cancelled because a dialog
// opened.
var errDialog = errors.New("a JavaScript dialog opened")

// maxDialogText bounds a dialog's message and default prompt.
const maxDialogText = 500

// openDialog is the dialog open on t, or nil.
func (t *tab) openDialog() *Dialog {
	t.dlgMu.Lock()
	defer t.dlgMu.Unlock()
	if t.dlg == nil {
		return nil
	}
	d := *t.dlg
	return &d
}

// watchDialog arms fn to be called (once, from the event loop: it must
// not block) when a dialog opens on t; nil disarms it.
func (t *tab) watchDialog(fn func()) {
	t.dlgMu.Lock()
	defer t.dlgMu.Unlock()
	t.dlgWatch = fn
}

// dialogOpened records the dialog e on t and wakes the call under way.
// It runs on the event loop.
func (t *tab) dialogOpened(e *page.EventJavascriptDialogOpening) {
	t.dlgMu.Lock()
	t.dlgSeq++
	t.dlg = &Dialog{Type: string(e.Type), Message: clip(e.Message, maxDialogText), DefaultPrompt: clip(e.DefaultPrompt, maxDialogText)}
	w := t.dlgWatch
	t.dlgMu.Unlock()
	if w != nil {
		w()
	}
}

// dialogClosed forgets t's dialog (the page's dialog closed).
func (t *tab) dialogClosed() {
	t.dlgMu.Lock()
	defer t.dlgMu.Unlock()
	t.dlg = nil
}

// dialogSeq numbers the dialogs of t: it changes when one opens.
func (t *tab) dialogSeq() uint64 {
	t.dlgMu.Lock()
	defer t.dlgMu.Unlock()
	return t.dlgSeq
}

// answered forgets t's dialog number seq after it was answered (unless
// another opened since).
func (t *tab) answered(seq uint64) {
	t.dlgMu.Lock()
	defer t.dlgMu.Unlock()
	if t.dlgSeq == seq {
		t.dlg = nil
	}
}

// dismissOpen dismisses a dialog left open on t as it closes (bounded),
// so that closing its target does not wait on it.
func (t *tab) dismissOpen() {
	if t.openDialog() == nil {
		return
	}
	ctx, done := context.WithTimeout(t.ctx, t.b.stretch(closeWait/5))
	defer done()
	_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
}

// AnswerDialog answers the JavaScript dialog open on the current
// page of the session: accept (OK) or dismiss (Cancel), with text
// as the answer of an accepted prompt. It returns the page after the
// answer (or the next dialog, when the page opens another). Errors:
// [NoDialog], and those of [Session.Act].
func (s *Session) AnswerDialog(ctx context.Context, accept bool, text string) (*Observation, error) {
	b := s.b
	ls, err := b.take(ctx, s.owner, s.id)
	if err != nil {
		return nil, err
	}
	if len(ls.tabs) == 0 || ls.tabs[ls.cur].t.openDialog() == nil {
		b.release(ls)
		return nil, newError(NoDialog, "no dialog is open on the page")
	}
	obs, err := b.callOn(ctx, ls, func(op context.Context, lt *liveTab, obs *Observation) error {
		seq := lt.t.dialogSeq()
		if _, err := chromedp.Call(op, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept, PromptText: text}); err != nil {
			return err
		}
		lt.t.answered(seq)
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	b.after(ls, err)
	return obs, err
}
