package chrome

import (
	"context"
	"fmt"

	"github.com/chromedp/chromedp"
)

// Field is one field of [Browser.FillFormSession]: the element (its
// ref, see [PageElement.Ref], or an id [Browser.ActSession] takes) and
// its value: the text to type, the option to choose when the element is
// a select, "true" or "false" when it is a checkbox, radio button or
// switch.
type Field struct{ ElementID, Value string }

// maxFormFields bounds the fields of one FillFormSession call.
const maxFormFields = 50

// fieldKindJS says how the marked element is filled: "select",
// "check" (a checkbox, radio button or switch), "fill", or "" when no
// element is marked.
const fieldKindJS = `(() => {
  const el = document.querySelector('[data-manglecp-target="1"]');
  if (!el) return '';
  if (el.tagName === 'SELECT') return 'select';
  if (el.tagName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) return 'check';
  const r = el.getAttribute('role');
  if (r === 'checkbox' || r === 'radio' || r === 'switch' || r === 'menuitemcheckbox' || el.hasAttribute('aria-checked')) return 'check';
  return 'fill';
})()`

// FillFormSession fills several fields of the current page of owner's
// session id in one call, in order (typing into text fields, choosing
// the option of a select, setting a checkbox, radio button or switch),
// then, when submit names an element (a ref, usually the form's
// button), clicks it and waits for the page to settle: one call fills
// and submits a form. Observation.Action reports the click. It stops at
// the first field it cannot fill ([ElementNotFound], [OptionError],
// [CheckError]).
func (b *Browser) FillFormSession(ctx context.Context, owner, id string, fields []Field, submit string) (*Observation, error) {
	if len(fields) == 0 || len(fields) > maxFormFields {
		return nil, fmt.Errorf("a form fill takes 1 to %d fields, not %d", maxFormFields, len(fields))
	}
	s, err := b.take(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	obs, err := b.call(ctx, s, func(op context.Context, lt *liveTab, obs *Observation) error {
		for _, f := range fields {
			if err := b.markRef(op, lt, f.ElementID); err != nil {
				return err
			}
			kind, err := chromedp.Run(op, chromedp.Evaluate[string](fieldKindJS))
			if err != nil {
				return err
			}
			switch kind {
			case "select":
				err = selectOption(op, f.ElementID, f.Value)
			case "check":
				err = check(op, f.ElementID, f.Value)
			case "fill":
				err = fill(op, f.Value)
			default:
				err = &ElementNotFound{f.ElementID}
			}
			if err != nil {
				return err
			}
		}
		var click *Act
		if submit != "" {
			click = &Act{Kind: "click", ElementID: submit}
		}
		return b.drive(op, lt.t, lt.col, Task{Act: click}, obs, false)
	})
	b.after(s, err)
	return obs, err
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

// TabsSession lists the tabs of owner's session id.
func (b *Browser) TabsSession(ctx context.Context, owner, id string) ([]TabInfo, error) {
	s, err := b.take(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	defer b.release(s)
	out := make([]TabInfo, 0, len(s.tabs))
	for i, lt := range s.tabs {
		ti := TabInfo{Index: i, Current: i == s.cur, Dialog: lt.t.openDialog()}
		if ti.Dialog != nil {
			out = append(out, ti)
			continue
		}
		rctx, done := context.WithTimeout(lt.t.op, inspectMax)
		if w, err := chromedp.Run(rctx, chromedp.Evaluate[[2]string](`[location.href, document.title]`)); err == nil {
			ti.URL, ti.Title = clip(w[0], maxURL), clip(w[1], 200)
		}
		done()
		out = append(out, ti)
	}
	return out, nil
}

// TabError is a tab index a session does not have. Its message is safe
// to show to clients.
type TabError struct{ Index, Tabs int }

func (e *TabError) Error() string {
	return fmt.Sprintf("the browser session has no tab %d (it has %d)", e.Index, e.Tabs)
}

// SwitchTabSession makes tab index the current tab of owner's session id
// and reports its page (or the dialog open on it: Observation.Dialog).
func (b *Browser) SwitchTabSession(ctx context.Context, owner, id string, index int) (*Observation, error) {
	s, err := b.take(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(s.tabs) {
		n := len(s.tabs)
		b.release(s)
		return nil, &TabError{Index: index, Tabs: n}
	}
	s.cur = index
	if d := s.tabs[index].t.openDialog(); d != nil {
		b.release(s)
		return &Observation{Session: s.id, Dialog: d}, nil
	}
	obs, err := b.call(ctx, s, func(op context.Context, lt *liveTab, obs *Observation) error {
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	b.after(s, err)
	return obs, err
}
