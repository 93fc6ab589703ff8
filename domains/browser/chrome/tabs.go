package chrome

import (
	"context"
	"fmt"

	"github.com/chromedp/cdproto/input"

	"github.com/chromedp/chromedp"
)

// Field is one field of [Session.FillForm]: the element (its
// ref, see [PageElement.Ref], or an id [Session.Act] takes) and
// its value: the text to type, the option to choose when the element has
// options, "true" or "false" when it is a checkbox, radio button or
// switch, a date as "2026-11-30" (time "14:30", month "2026-11", week
// "2026-W48", colour "#aabbcc"), a number for a slider. Values are the
// options of a multiple select or list box (Value is then not used).
type Field struct {
	ElementID, Value string
	Values           []string
}

// maxFormFields bounds the fields of one Session.FillForm call.
const maxFormFields = 50

// FillForm fills several fields of the current page of the
// session in one call, in order, each as its kind takes a value (see
// [Field]), and reads each back from the page. Then, when every field
// holds its value and submit names an element (a ref, usually the form's
// button), it clicks it and waits for the page to settle (also for the
// page it leads to): one call fills and submits a form.
// Observation.Action reports the click. A field that cannot be set or
// does not hold its value does not stop the others; the form is then not
// submitted and the error is a [FieldErrors], returned with the
// observation of the page as it is.
func (s *Session) FillForm(ctx context.Context, fields []Field, submit string) (*Observation, error) {
	b := s.b
	if len(fields) == 0 || len(fields) > maxFormFields {
		return nil, fmt.Errorf("a form fill takes 1 to %d fields, not %d", maxFormFields, len(fields))
	}
	var bad []error
	obs, err := s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		defer releaseObjects(op)
		for _, f := range fields {
			err := b.setOne(op, lt, f)
			if err != nil && !fieldError(err) {
				return err
			}
			if err != nil {
				bad = append(bad, err)
			}
		}
		lt.col.touch()
		var click *Act
		if submit != "" && len(bad) == 0 {
			click = &Act{Kind: "click", ElementID: submit}
		}
		if click == nil {
			return b.drive(op, lt.t, lt.col, Task{}, obs, false)
		}
		return b.drive(op, lt.t, lt.col, Task{Act: click}, obs, false)
	})
	if err == nil && len(bad) > 0 {
		return obs, &FieldErrors{Errs: bad}
	}
	return obs, err
}

// setOne sets one field of lt's page.
func (b *Browser) setOne(op context.Context, lt *liveTab, f Field) error {
	el, err := b.markRef(op, lt, f.ElementID)
	if err != nil {
		return err
	}
	want := f.Values
	if len(want) == 0 {
		want = []string{f.Value}
	}
	return setField(el, "fill", want, lt.col)
}

// Interaction is what [Session.Interact] does with one element of
// a live page: type Text into it (when set), choose Options (when set:
// by their text, as a select, list box, combobox or radio group takes
// them), then press Key on it (when set). At least one is set.
type Interaction struct {
	Ref, Text, Key string
	Options        []string
	// TextSet says Text is set (an empty Text clears the element).
	TextSet bool
}

// Interact acts on any element of the current page of the
// session that the page's facts named (its ref, see [PageElement.Ref]),
// for the widget no form rule foresaw: it types text into it (focused by
// a click, its text replaced, read back when the element has a value),
// chooses options, and presses a key on it, then waits for the page to
// settle and reports it. Errors: those of [Session.Act],
// [UnknownKey], [FieldErrors] (with the observation) for a value the page
// does not hold.
func (s *Session) Interact(ctx context.Context, in Interaction) (*Observation, error) {
	b := s.b
	if in.Key != "" {
		if _, ok := keys[in.Key]; !ok {
			return nil, unknownKey(in.Key)
		}
	}
	var bad error
	obs, err := s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		defer releaseObjects(op)
		el, err := b.markRef(op, lt, in.Ref)
		if err != nil {
			return err
		}
		textsBefore := pageTexts(op)
		before, err := readPage(op)
		if err != nil {
			return err
		}
		switch {
		case len(in.Options) > 0:
			err = setField(el, "select", in.Options, lt.col)
		case in.TextSet:
			err = typeText(el, in.Text, lt.col)
		default:
			_, err = callOn[bool](el, `function() { this.focus(); return true; }`)
		}
		if err != nil && !fieldError(err) {
			return err
		}
		bad = err
		if bad == nil && in.Key != "" {
			if err := pressKey(op, in.Key); err != nil {
				return err
			}
		}
		lt.col.touch()
		if err := b.settleAction(op, lt.col); err != nil {
			return err
		}
		after, err := readPage(op)
		if err != nil {
			return err
		}
		obs.Action = &ActResult{Kind: "interact", ElementID: in.Ref, URLBefore: before.URL,
			Changed:  before.URL != after.URL || before.Title != after.Title || before.Text != after.Text,
			Appeared: appeared(textsBefore, pageTexts(op))}
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	if err == nil && bad != nil {
		return obs, &FieldErrors{Errs: []error{bad}}
	}
	return obs, err
}

// typeText types text into any element: a field is set as its kind takes
// text (and read back); anything else is clicked (to focus it, as a user
// would) and gets the text typed, read back from its text when it is
// editable.
func typeText(el *elem, text string, col *collector) error {
	kind, err := callOn[string](el, kindJS)
	if err != nil {
		return err
	}
	switch kind {
	case "text", "number", "editable":
		if err := click(el); err != nil {
			return err
		}
		if err := typeInto(el, text); err != nil {
			return err
		}
		return readBack(el, kind, []string{text}, "")
	case "combobox":
		field, err := objOn(el, typingTargetJS)
		if err != nil {
			return err
		}
		if field == nil {
			field = el
		}
		if err := click(field); err != nil {
			return err
		}
		return typeInto(field, text)
	case "other":
		if err := click(el); err != nil {
			return err
		}
		_, err := chromedp.Call(el.tab, input.InsertText, input.InsertTextParams{Text: text})
		return err
	}
	return setField(el, "fill", []string{text}, col)
}

// TabInfo is one tab of a session: its index, URL and title, and
// whether it is the current tab.
type TabInfo struct {
	Index      int
	URL, Title string
	Current    bool
	// Dialog is the JavaScript dialog open on the tab (its URL and title
	// are then not read), or nil.
	Dialog *Dialog
}

// Tabs lists the tabs of the session.
func (s *Session) Tabs(ctx context.Context) ([]TabInfo, error) {
	b := s.b
	ls, err := b.take(ctx, s.owner, s.id)
	if err != nil {
		return nil, err
	}
	defer b.release(ls)
	out := make([]TabInfo, 0, len(ls.tabs))
	for i, lt := range ls.tabs {
		ti := TabInfo{Index: i, Current: i == ls.cur, Dialog: lt.t.openDialog()}
		if ti.Dialog != nil {
			out = append(out, ti)
			continue
		}
		rctx, done := context.WithTimeout(lt.t.op, b.inspectTime())
		if w, err := chromedp.Run(rctx, chromedp.Evaluate[[2]string](`[location.href, document.title]`)); err == nil {
			ti.URL, ti.Title = clip(w[0], maxURL), clip(w[1], 200)
		}
		done()
		out = append(out, ti)
	}
	return out, nil
}

// SwitchTab makes tab index the current tab of the session
// and reports its page (or the dialog open on it: Observation.Dialog).
func (s *Session) SwitchTab(ctx context.Context, index int) (*Observation, error) {
	b := s.b
	ls, err := b.take(ctx, s.owner, s.id)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(ls.tabs) {
		n := len(ls.tabs)
		b.release(ls)
		return nil, noSuchTab(index, n)
	}
	ls.cur = index
	if d := ls.tabs[index].t.openDialog(); d != nil {
		b.release(ls)
		return &Observation{Session: ls.id, Dialog: d}, nil
	}
	obs, err := b.call(ctx, ls, func(op context.Context, lt *liveTab, obs *Observation) error {
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	b.after(ls, err)
	return obs, err
}
