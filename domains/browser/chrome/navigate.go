package chrome

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// Navigate loads url in the current tab of the session,
// keeping the session's cookies and storage. The URL is held to the
// allow-list first (http and https on an allowed host and port only:
// file:, data:, chrome:, view-source: and javascript: URLs are refused
// with a [URLRefused] error before the browser sees them). Errors: those of
// [Session.Act] and [URLRefused].
func (s *Session) Navigate(ctx context.Context, url string) (*Observation, error) {
	b := s.b
	if _, err := b.CheckURL(url); err != nil {
		return nil, err
	}
	return s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		return b.drive(op, lt.t, lt.col, Task{URL: url}, obs, true)
	})
}

// Back goes back one entry in the history of the current tab of
// the session and reports the page it comes to (the same page
// when there is no earlier entry).
func (s *Session) Back(ctx context.Context) (*Observation, error) {
	b := s.b
	return s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
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
}

// keys are the keys [Session.PressKey] presses: the DOM key name,
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

// PressKey presses and releases key on the focused element of the
// current page of the session, as a user would, and reports the
// page after it.
func (s *Session) PressKey(ctx context.Context, key string) (*Observation, error) {
	b := s.b
	k, ok := keys[key]
	if !ok {
		return nil, unknownKey(key)
	}
	return s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
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
}
