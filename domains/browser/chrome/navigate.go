package chrome

import (
	"context"
	"strconv"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// NavigateSession loads url in the current tab of owner's session id,
// keeping the session's cookies and storage. The URL is held to the
// allow-list first (http and https on an allowed host and port only:
// file:, data:, chrome:, view-source: and javascript: URLs are refused
// with a [URLError] before the browser sees them). Errors: those of
// [Browser.ActSession] and [URLError].
func (b *Browser) NavigateSession(ctx context.Context, owner, id, url string) (*Observation, error) {
	if _, err := b.CheckURL(url); err != nil {
		return nil, err
	}
	s, err := b.take(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	obs, err := b.call(ctx, s, func(op context.Context, lt *liveTab, obs *Observation) error {
		return b.drive(op, lt.t, lt.col, Task{URL: url}, obs, true)
	})
	b.after(s, err)
	return obs, err
}

// BackSession goes back one entry in the history of the current tab of
// owner's session id and reports the page it comes to (the same page
// when there is no earlier entry).
func (b *Browser) BackSession(ctx context.Context, owner, id string) (*Observation, error) {
	s, err := b.take(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	obs, err := b.call(ctx, s, func(op context.Context, lt *liveTab, obs *Observation) error {
		before, err := chromedp.Run(op, chromedp.Evaluate[string](`location.href`))
		if err != nil {
			return err
		}
		if _, err := chromedp.Run(op, chromedp.Evaluate[bool](`(history.back(), true)`)); err != nil {
			return err
		}
		// Wait (bounded) for the location to change before settling.
		for range 40 {
			now, err := chromedp.Run(op, chromedp.Evaluate[string](`location.href`))
			if err != nil || now != before {
				break
			}
			select {
			case <-op.Done():
				return op.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	b.after(s, err)
	return obs, err
}

// keys are the keys [Browser.PressKeySession] presses: the DOM key name,
// its code and Windows virtual key code, and the text it types.
var keys = map[string]struct {
	code string
	vk   int64
	text string
}{
	"Enter": {"Enter", 13, "\r"}, "Tab": {"Tab", 9, ""}, "Escape": {"Escape", 27, ""},
	"Backspace": {"Backspace", 8, ""}, "Delete": {"Delete", 46, ""}, "Space": {"Space", 32, " "},
	"ArrowUp": {"ArrowUp", 38, ""}, "ArrowDown": {"ArrowDown", 40, ""},
	"ArrowLeft": {"ArrowLeft", 37, ""}, "ArrowRight": {"ArrowRight", 39, ""},
	"Home": {"Home", 36, ""}, "End": {"End", 35, ""}, "PageUp": {"PageUp", 33, ""}, "PageDown": {"PageDown", 34, ""},
}

// KeyError is a key [Browser.PressKeySession] does not know. Its message
// is safe to show to clients.
type KeyError struct{ Key string }

func (e *KeyError) Error() string {
	return "unknown key " + strconv.Quote(clip(e.Key, 20)) + " (Enter, Tab, Escape, Backspace, Delete, Space, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown)"
}

// PressKeySession presses and releases key on the focused element of the
// current page of owner's session id, as a user would, and reports the
// page after it.
func (b *Browser) PressKeySession(ctx context.Context, owner, id, key string) (*Observation, error) {
	k, ok := keys[key]
	if !ok {
		return nil, &KeyError{Key: key}
	}
	s, err := b.take(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	obs, err := b.call(ctx, s, func(op context.Context, lt *liveTab, obs *Observation) error {
		name := key
		if key == "Space" {
			name = " "
		}
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: name, Code: k.code,
			WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Text: k.text}
		if k.text == "" {
			down.Type = input.DispatchKeyEventTypeRawKeyDown
		}
		if _, err := chromedp.Call(op, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: name, Code: k.code,
			WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk}
		if _, err := chromedp.Call(op, input.DispatchKeyEvent, up); err != nil {
			return err
		}
		return b.drive(op, lt.t, lt.col, Task{}, obs, false)
	})
	b.after(s, err)
	return obs, err
}

// WaitTextSession waits until the visible text of the current page of
// owner's session id contains text, at most wait (bounded as
// [Browser.WaitSession] bounds it), and reports the page; found says
// whether it appeared. It is [Browser.WaitSession] with a text only.
func (b *Browser) WaitTextSession(ctx context.Context, owner, id, text string, wait time.Duration) (obs *Observation, found bool, err error) {
	return b.WaitSession(ctx, owner, id, Wait{Text: text, Timeout: wait})
}
