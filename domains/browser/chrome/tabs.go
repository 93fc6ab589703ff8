package chrome

import (
	"context"
	"fmt"

	"github.com/chromedp/chromedp"
)

// Field is one field of [Browser.FillFormSession]: the element id (as in
// [Element]) and the text to type, or the option to choose when the
// element is a select.
type Field struct{ ElementID, Value string }

// maxFormFields bounds the fields of one FillFormSession call.
const maxFormFields = 50

// FillFormSession fills several fields of the current page of owner's
// session id in one call, in order (typing into inputs and text areas,
// choosing the option of a select), then reports the page. It stops at
// the first field it cannot fill ([ElementNotFound], [OptionError]).
func (b *Browser) FillFormSession(ctx context.Context, owner, id string, fields []Field) (*Observation, error) {
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
			isSelect, err := chromedp.Run(op, chromedp.Evaluate[bool](
				`(document.querySelector('[data-manglecp-target="1"]') || {}).tagName === 'SELECT'`))
			if err != nil {
				return err
			}
			if isSelect {
				err = selectOption(op, f.ElementID, f.Value)
			} else {
				err = fill(op, f.Value)
			}
			if err != nil {
				return err
			}
		}
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
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
		ti := TabInfo{Index: i, Current: i == s.cur}
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
// and reports its page.
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
	obs, err := b.call(ctx, s, func(op context.Context, lt *liveTab, obs *Observation) error {
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	b.after(s, err)
	return obs, err
}
