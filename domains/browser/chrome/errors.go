package chrome

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Errors.
//
// A call that the browser refuses, or cannot complete, for a reason the
// caller can act on answers an [Error] (about the call: its URL, its
// session, the browser's load, the page, its arguments) or an
// [ElementError] (about one element of the page, which is otherwise
// fine); a form fill gathers its fields' ElementErrors in a
// [FieldErrors]. Their messages are safe to show to clients: they hold
// no server path, and the client's input in them is clipped. [KindOf]
// tells them apart. Any other error (a DevTools failure, a context that
// ended) is internal: it is logged, never shown.

// Kind says what an [Error] or an [ElementError] is about.
type Kind uint8

// The kinds of [Error].
const (
	// URLRefused: the URL is not http or https on an allowed host and
	// port, or does not parse.
	URLRefused Kind = iota + 1
	// Busy: the page slots and their queue, or the session limits, are
	// full; retry after Error.RetryAfter.
	Busy
	// Restarting: the browser stopped answering (or its process ended)
	// and is being restarted; retry after Error.RetryAfter.
	Restarting
	// SessionGone: the session is not open on this server (it ended, was
	// idle too long, or was opened on another replica).
	SessionGone
	// NotOwner: the session belongs to another identity.
	NotOwner
	// DialogOpen: a JavaScript dialog (Error.Dialog) is open on the
	// session's page; answer it first ([Session.AnswerDialog]).
	DialogOpen
	// NoDialog: [Session.AnswerDialog] on a page with no dialog open.
	NoDialog
	// NoSuchTab: a tab index the session does not have (also closing the
	// session's only tab).
	NoSuchTab
	// UnknownKey: a key the browser does not press.
	UnknownKey
	// BadWait: a [Wait] that cannot be waited for (no condition, a text
	// or ref too long).
	BadWait
	// UploadRefused: uploads are off ([Config.UploadDir] is empty), a
	// name is not a regular file inside the upload directory, too many
	// files, or the element is not a file input. The message names the
	// client's file name, never a server path.
	UploadRefused
	// ScriptsOff: page scripts are not allowed ([Config.AllowScripts]).
	ScriptsOff
	// ScriptFailed: a page script threw, did not finish in time (it was
	// stopped), or was too long; the message holds the exception's text.
	ScriptFailed
	// PageFailed: the call was stopped because of what the page did (over
	// its byte budget, its renderer ended, a script that does not end, no
	// answer within the time limit) or the page closed its tab.
	PageFailed
)

// The kinds of [ElementError].
const (
	// ElementNotFound: the element is not on the page.
	ElementNotFound Kind = iota + 32
	// NotVisible: the element takes no room on the page (hidden).
	NotVisible
	// NoSuchOption: a select, list box or combobox without the option
	// asked for (ElementError.Offered lists some it has).
	NoSuchOption
	// CannotCheck: a check of an element that has no checked state, with
	// a value other than "true" or "false", or whose state did not change
	// (a checked radio button cannot be unchecked).
	CannotCheck
	// NotHeld: a field that does not hold the value it was set to, read
	// back after the set (ElementError.Holds is what it holds).
	NotHeld
	// TakesNoValue: a value for an element that takes none (a button, a
	// heading, a read-only stepper) or that another tool sets (a file
	// input).
	TakesNoValue
)

var kindNames = map[Kind]string{
	URLRefused: "URLRefused", Busy: "Busy", Restarting: "Restarting", SessionGone: "SessionGone",
	NotOwner: "NotOwner", DialogOpen: "DialogOpen", NoDialog: "NoDialog", NoSuchTab: "NoSuchTab",
	UnknownKey: "UnknownKey", BadWait: "BadWait", UploadRefused: "UploadRefused", ScriptsOff: "ScriptsOff",
	ScriptFailed: "ScriptFailed", PageFailed: "PageFailed", ElementNotFound: "ElementNotFound",
	NotVisible: "NotVisible", NoSuchOption: "NoSuchOption", CannotCheck: "CannotCheck", NotHeld: "NotHeld",
	TakesNoValue: "TakesNoValue",
}

// String is the kind's name ("SessionGone"), "Kind(n)" for another n.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is a call the browser refused or could not complete (see the
// kinds of Error under [Kind]). Its message is safe to show to clients.
type Error struct {
	Kind Kind
	// RetryAfter is a suggested wait before trying again ([Busy],
	// [Restarting]).
	RetryAfter time.Duration
	// Dialog is the dialog open on the page ([DialogOpen]).
	Dialog *Dialog
	msg    string
}

// Error is the message.
func (e *Error) Error() string { return e.msg }

// ElementError is an action or a value one element of the page refused
// (see the kinds of ElementError under [Kind]); the page itself is fine.
// Its message, which names the element, is safe to show to clients.
type ElementError struct {
	Kind Kind
	// Element is the element as the call named it (a ref or an id).
	Element string
	// Holds is what the field holds after it was set ([NotHeld]).
	Holds string
	// Offered is (some of) the options the element offers
	// ([NoSuchOption]).
	Offered []string
	msg     string
}

// Error is the message.
func (e *ElementError) Error() string { return e.msg }

// KindOf is the Kind of the first [Error] or [ElementError] in err's
// tree (see [errors.As]), 0 when there is none.
func KindOf(err error) Kind {
	var k interface{ kind() Kind }
	if errors.As(err, &k) {
		return k.kind()
	}
	return 0
}

func (e *Error) kind() Kind        { return e.Kind }
func (e *ElementError) kind() Kind { return e.Kind }

// FieldErrors are the fields of a [Session.FillForm] (or the element of
// a [Session.Interact]) that could not be set, or that do not hold their
// value when read back: each an [ElementError]. The form was not
// submitted. Its message is safe to show to clients.
type FieldErrors struct{ Errs []error }

// Error joins the fields' messages.
func (e *FieldErrors) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the fields' errors.
func (e *FieldErrors) Unwrap() []error { return e.Errs }

// errorf is an [Error] of kind k with the message format makes.
func errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, msg: fmt.Sprintf(format, args...)}
}

// newError is an [Error] of kind k saying msg.
func newError(k Kind, msg string) *Error { return &Error{Kind: k, msg: msg} }

// busy is a [Busy] error: retry after wait.
func busy(wait time.Duration, format string, args ...any) *Error {
	e := errorf(Busy, format, args...)
	e.RetryAfter = wait
	return e
}

// restarting is a [Restarting] error.
func restarting() *Error {
	return &Error{Kind: Restarting, RetryAfter: 2 * time.Second,
		msg: "the server's browser stopped answering and is being restarted; retry in a moment"}
}

// sessionGone is a [SessionGone] error naming session id.
func sessionGone(id string) *Error {
	return errorf(SessionGone, "the browser session %q is not open on this server (it ended, was idle too long, or was opened on another replica); open the page again", clip(id, 40))
}

// dialogOpen is a [DialogOpen] error naming d and saying to answer it.
func dialogOpen(d *Dialog) *Error {
	article := "a"
	if d.Type == "alert" {
		article = "an"
	}
	e := errorf(DialogOpen, "%s %s dialog is open (%q); answer it first", article, d.Type, clip(d.Message, 100))
	e.Dialog = d
	return e
}

// unknownKey is an [UnknownKey] error naming key and the keys there are.
func unknownKey(key string) *Error {
	return newError(UnknownKey, "unknown key "+strconv.Quote(clip(key, 20))+" (Enter, Tab, Escape, Backspace, Delete, Space, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown)")
}

// noSuchTab is a [NoSuchTab] error: index of a session with tabs tabs.
func noSuchTab(index, tabs int) *Error {
	return errorf(NoSuchTab, "the browser session has no tab %d (it has %d)", index, tabs)
}

// lastTabError is a [Session.CloseTab] on a session's only tab; it
// unwraps to the [NoSuchTab] error, whose message is the one a client
// sees.
type lastTabError struct{ tab *Error }

func (e *lastTabError) Error() string {
	return "the tab is the browser session's only tab; end the session to close it"
}

func (e *lastTabError) Unwrap() error { return e.tab }

// elementError is an [ElementError] of kind k about element id, saying
// the message format makes.
func elementError(k Kind, id, format string, args ...any) *ElementError {
	return &ElementError{Kind: k, Element: id, msg: fmt.Sprintf(format, args...)}
}

// notFound is an [ElementNotFound] error error naming id.
func notFound(id string) *ElementError {
	return elementError(ElementNotFound, id, "element %q is not on the page", clip(id, maxLabel))
}

// cannotCheck is a [CannotCheck] error: id cannot be set to value, why.
func cannotCheck(id, value, why string) *ElementError {
	return elementError(CannotCheck, id, "cannot set %q to %q: %s", clip(id, 60), clip(value, 20), why)
}

// takesNoValue is a [TakesNoValue] error: id cannot be set, why.
func takesNoValue(id, why string) *ElementError {
	return elementError(TakesNoValue, id, "cannot set %q: %s", clip(id, 60), why)
}

// noSuchOption is a [NoSuchOption] error: id has no option, and offers
// offered.
func noSuchOption(id, option string, offered []string) *ElementError {
	msg := fmt.Sprintf("%q has no option %q", clip(id, 60), clip(option, 60))
	if len(offered) > 0 {
		q := make([]string, len(offered))
		for i, o := range offered {
			q[i] = strconv.Quote(clip(o, 60))
		}
		msg += "; it offers " + strings.Join(q, ", ")
	}
	e := elementError(NoSuchOption, id, "%s", msg)
	e.Offered = offered
	return e
}

// notHeld is a [NotHeld] error: id holds holds, not want (hint says
// more when set).
func notHeld(id, want, holds, hint string) *ElementError {
	msg := fmt.Sprintf("%q holds %q, not %q", clip(id, 60), clip(holds, 100), clip(want, 100))
	if hint != "" {
		msg += " (" + hint + ")"
	}
	e := elementError(NotHeld, id, "%s", msg)
	e.Holds = holds
	return e
}

// fieldError reports whether err is about one field (the page is fine).
func fieldError(err error) bool {
	return errors.As(err, new(*ElementError))
}
