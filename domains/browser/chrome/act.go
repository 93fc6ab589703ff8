package chrome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// elementsJS lists the interactive elements of the page, in document
// order, with the ids described at [Element]. With a non-empty target it
// marks that element with data-manglecp-target and returns only it. It
// returns at most max elements and looks at no more than scanMax
// candidates, so a huge DOM costs a bounded amount of work; total counts
// the elements it saw (a lower bound when it stopped early, then capped
// is true).
const elementsJS = `((target, max, scanMax) => {
  const sel = 'a[href],button,input,select,textarea,[role=button],[role=link],[contenteditable=""],[contenteditable=true]';
  const out = [], seen = {};
  let total = 0, scanned = 0, capped = false;
  // A live page keeps the mark of an earlier action: only one is marked.
  if (target) for (const m of document.querySelectorAll('[data-manglecp-target]')) m.removeAttribute('data-manglecp-target');
  const kindOf = el => {
    const tag = el.tagName.toLowerCase();
    const type = (el.getAttribute('type') || '').toLowerCase();
    const hint = ((el.getAttribute('autocomplete') || '') + ' ' + (el.name || '') + ' ' + (el.id || '')).toLowerCase();
    if ((tag === 'input') && /(^|\s)cc-|card.?num|cvc|cvv/.test(hint)) return 'payment';
    if (tag === 'a' || el.getAttribute('role') === 'link') return 'link';
    if (tag === 'button' || el.getAttribute('role') === 'button') return 'button';
    if (tag === 'select') return 'select';
    if (tag === 'textarea' || el.isContentEditable) return 'textarea';
    if (tag === 'input') {
      if (type === 'hidden') return '';
      if (['submit', 'button', 'reset', 'image'].includes(type)) return 'button';
      if (['checkbox', 'radio', 'email', 'password', 'search'].includes(type)) return type;
      return 'input';
    }
    return '';
  };
  // The start of an element's text, walking at most 200 nodes.
  const textOf = el => {
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let t = '', n = 0;
    while (t.length < 200 && n++ < 200 && w.nextNode()) t += w.currentNode.data + ' ';
    return t;
  };
  const labelOf = el => {
    let t = el.getAttribute('aria-label') || '';
    if (!t && el.labels && el.labels.length) t = textOf(el.labels[0]);
    if (!t && el.tagName !== 'INPUT' && el.tagName !== 'TEXTAREA' && el.tagName !== 'SELECT') t = textOf(el);
    if (!t) t = el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('name') || el.getAttribute('value') || '';
    return t.replace(/\s+/g, ' ').trim().slice(0, 80);
  };
  for (const el of document.querySelectorAll(sel)) {
    if (++scanned > scanMax) { capped = true; break; }
    const kind = kindOf(el);
    if (!kind) continue;
    total++;
    let id = el.id && document.querySelectorAll('#' + CSS.escape(el.id)).length === 1 ? el.id : '';
    if (!id) { seen[kind] = (seen[kind] || 0) + 1; id = kind + '-' + seen[kind]; }
    if (target) {
      if (id === target) { el.setAttribute('data-manglecp-target', '1'); return {list: [{id, kind, label: labelOf(el)}], total: 1, capped: false}; }
      continue;
    }
    if (out.length < max) out.push({id, kind, label: labelOf(el)});
  }
  return {list: out, total, capped};
})`

// scanMax bounds the candidate elements one inspection looks at.
const scanMax = 5000

// pageJS reads the location, title and the start of the visible text,
// walking at most 20,000 nodes (innerText would lay out the whole page).
const pageJS = `(() => {
  const max = %d, skip = {SCRIPT: 1, STYLE: 1, NOSCRIPT: 1, TEMPLATE: 1};
  let text = '', n = 0;
  if (document.body) {
    const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (text.length < max * 2 && n++ < 20000 && w.nextNode()) {
      const p = w.currentNode.parentElement;
      if (p && skip[p.tagName]) continue;
      text += w.currentNode.data + ' ';
    }
  }
  return {url: location.href, title: String(document.title).slice(0, 1000), text: text.replace(/\s+/g, ' ').trim().slice(0, max)};
})()`

type pageState struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

func readPage(tab context.Context) (pageState, error) {
	return chromedp.Run(tab, chromedp.Evaluate[pageState](fmt.Sprintf(pageJS, maxTextBytes)))
}

// elementList is what elementsJS found.
type elementList struct {
	List   []Element
	Total  int
	Capped bool
}

func listElements(tab context.Context, target string, max int) (elementList, error) {
	t, _ := json.Marshal(target)
	type el struct {
		ID    string `json:"id"`
		Kind  string `json:"kind"`
		Label string `json:"label"`
	}
	type found struct {
		List   []el `json:"list"`
		Total  int  `json:"total"`
		Capped bool `json:"capped"`
	}
	raw, err := chromedp.Run(tab, chromedp.Evaluate[found](fmt.Sprintf("%s(%s, %d, %d)", elementsJS, t, max, scanMax)))
	if err != nil {
		return elementList{}, err
	}
	out := elementList{List: make([]Element, 0, len(raw.List)), Total: raw.Total, Capped: raw.Capped}
	for _, e := range raw.List {
		out.List = append(out.List, Element{ID: clip(e.ID, maxLabel), Kind: e.Kind, Label: clip(e.Label, maxLabel)})
	}
	return out, nil
}

// ElementNotFound is an Act whose element is not on the page. Its message
// is safe to show to clients.
type ElementNotFound struct{ ID string }

// Error names the element, clipped.
func (e *ElementNotFound) Error() string {
	return fmt.Sprintf("element %q is not on the page", clip(e.ID, maxLabel))
}

// act clicks, fills, selects or checks the element, waits for the page
// to settle and records what changed. In a session (tb.live set) the
// element is found by its ref (see [Browser.markRef]), in a run by its
// JavaScript id.
func (b *Browser) act(tab context.Context, tb *tab, col *collector, a *Act, obs *Observation) error {
	before, err := readPage(tab)
	if err != nil {
		return err
	}
	textsBefore := pageTexts(tab)
	if err := b.mark(tab, tb, a.ElementID); err != nil {
		return err
	}
	reqs, cons := col.counts()
	switch a.Kind {
	case "click":
		err = click(tab)
	case "fill":
		err = fill(tab, a.Value)
	case "select":
		err = selectOption(tab, a.ElementID, a.Value)
	case "check":
		err = check(tab, a.ElementID, a.Value)
	default:
		err = fmt.Errorf("unknown action %q", clip(a.Kind, 20))
	}
	if err != nil {
		return err
	}
	col.touch()
	if err := b.settle(tab, col); err != nil {
		return err
	}
	after, err := readPage(tab)
	if err != nil {
		return err
	}
	reqs2, cons2 := col.counts()
	obs.Action = &ActResult{Kind: a.Kind, ElementID: a.ElementID, URLBefore: before.URL,
		Changed:  before.URL != after.URL || before.Title != after.Title || before.Text != after.Text,
		Requests: reqs2 - reqs, Console: cons2 - cons, Appeared: appeared(textsBefore, pageTexts(tab))}
	return nil
}

// mark marks the element named id with data-manglecp-target: by its
// ref in a session's tab, by its JavaScript id in a run.
func (b *Browser) mark(tab context.Context, tb *tab, id string) error {
	if tb.live != nil {
		return b.markRef(tab, tb.live, id)
	}
	found, err := listElements(tab, id, 1)
	if err != nil {
		return err
	}
	if len(found.List) == 0 {
		return &ElementNotFound{id}
	}
	return nil
}

// markRef marks the element ref names on lt's page with
// data-manglecp-target="1" (removing older marks), which click, fill,
// select and check act on. ref is a [PageElement.Ref] of the tab's
// latest accessibility read, an [PageElement.ID] ("ax123"), or a
// JavaScript id of [Element] ("save", "button-2"); a ref the latest read
// does not know (or whose node left the page) is looked up again in a
// fresh read, once. The DOM domain stays disabled: the node is resolved
// with DOM.resolveNode and marked with Runtime.callFunctionOn. The error
// is an [ElementNotFound] when no element matches.
func (b *Browser) markRef(op context.Context, lt *liveTab, ref string) error {
	id, ok := lt.refs[ref]
	if !ok {
		if n, err := strconv.ParseInt(strings.TrimPrefix(ref, "ax"), 10, 64); err == nil && n > 0 && strings.HasPrefix(ref, "ax") {
			id, ok = cdp.BackendNodeID(n), true
		}
	}
	if ok {
		done, err := markNode(op, id)
		if done || err != nil {
			return err
		}
	}
	rctx, cancel := context.WithTimeout(op, inspectMax)
	p, err := readAXPage(rctx, 1)
	cancel()
	if err != nil && op.Err() != nil {
		return op.Err()
	}
	if err == nil {
		lt.refs = p.refs
		if id, ok := p.refs[ref]; ok {
			done, err := markNode(op, id)
			if done || err != nil {
				return err
			}
		}
	}
	found, err := listElements(op, ref, 1)
	if err != nil {
		return err
	}
	if len(found.List) == 0 {
		return &ElementNotFound{ref}
	}
	return nil
}

// markJS marks the node it is called on (this) as the target of the
// next action, removing older marks; false when this is not an element
// of the page's top document.
const markJS = `function() {
  if (!(this instanceof Element) || this.ownerDocument !== window.top.document) return false;
  for (const m of document.querySelectorAll('[data-manglecp-target]')) m.removeAttribute('data-manglecp-target');
  this.setAttribute('data-manglecp-target', '1');
  return true;
}`

// markNode marks the node with backend id; done is false when the node
// is not (or no longer) an element of the page. err is set only when the
// tab's context ended.
func markNode(op context.Context, id cdp.BackendNodeID) (done bool, err error) {
	const group = "manglecp-mark"
	defer func() {
		if op.Err() == nil {
			_, _ = chromedp.Call(op, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: group})
		}
	}()
	res, err := chromedp.Call(op, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id, ObjectGroup: group})
	if err != nil || res.Object == nil || res.Object.ObjectID == "" {
		return false, op.Err()
	}
	yes := true
	ret, err := chromedp.Call(op, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: markJS, ObjectID: res.Object.ObjectID, ReturnByValue: &yes, Silent: &yes})
	if err != nil || ret.ExceptionDetails != nil || ret.Result == nil {
		return false, op.Err()
	}
	return string(ret.Result.Value) == "true", nil
}

// targetJS scrolls the marked element into view and returns its centre
// in viewport coordinates; with focus set it also focuses it and clears
// its value (or, when it is editable content, its text).
const targetJS = `((focus) => {
  const el = document.querySelector('[data-manglecp-target="1"]');
  if (!el) return null;
  el.scrollIntoView({block: 'center', inline: 'center'});
  if (focus) {
    el.focus();
    if ('value' in el) { el.value = ''; el.dispatchEvent(new Event('input', {bubbles: true})); }
    else if (el.isContentEditable) { el.textContent = ''; }
  }
  const r = el.getBoundingClientRect();
  return {x: r.left + r.width / 2, y: r.top + r.height / 2};
})`

type point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// locate runs targetJS.
func locate(tab context.Context, focus bool) (*point, error) {
	p, err := chromedp.Run(tab, chromedp.Evaluate[*point](fmt.Sprintf("%s(%v)", targetJS, focus)))
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errors.New("the element left the page")
	}
	return p, nil
}

// click presses and releases the left mouse button at the marked
// element's centre, as a user would. (The tab does not enable the DOM
// domain, see tab, so chromedp's selector actions are not used.)
func click(tab context.Context) error {
	p, err := locate(tab, false)
	if err != nil {
		return err
	}
	for _, typ := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMouseMoved,
		input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
		ev := input.DispatchMouseEventParams{Type: typ, X: p.X, Y: p.Y}
		if typ != input.DispatchMouseEventTypeMouseMoved {
			ev.Button, ev.ClickCount = input.MouseButtonLeft, 1
		}
		if _, err := chromedp.Call(tab, input.DispatchMouseEvent, ev); err != nil {
			return err
		}
	}
	return nil
}

// checkJS reads the checked state of the marked element (a checkbox or
// radio input, or an element with aria-checked: a switch, a custom
// checkbox): "true", "false", or null when it has none.
const checkJS = `(() => {
  const el = document.querySelector('[data-manglecp-target="1"]');
  if (!el) return null;
  if (el.tagName === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) return el.checked ? 'true' : 'false';
  const a = el.getAttribute('aria-checked');
  if (a === null) return null;
  return a === 'true' ? 'true' : 'false';
})()`

// CheckError is a check action on an element that has no checked state
// (not a checkbox, radio button or switch), with a value other than
// "true" or "false", or whose state did not change as asked (a checked
// radio button cannot be unchecked). Its message is safe to show to
// clients.
type CheckError struct{ ElementID, Value, Reason string }

// Error names the element, the value and why.
func (e *CheckError) Error() string {
	return fmt.Sprintf("cannot set %q to %q: %s", clip(e.ElementID, 60), clip(e.Value, 20), e.Reason)
}

// check sets the marked checkbox, radio button or switch to want
// ("true" or "false"), clicking it only when its state differs, and
// checks that it took the state.
func check(tab context.Context, id, want string) error {
	if want != "true" && want != "false" {
		return &CheckError{ElementID: id, Value: want, Reason: `the value of a check is "true" or "false"`}
	}
	state, err := chromedp.Run(tab, chromedp.Evaluate[*string](checkJS))
	if err != nil {
		return err
	}
	if state == nil {
		return &CheckError{ElementID: id, Value: want, Reason: "it is not a checkbox, radio button or switch"}
	}
	if *state == want {
		return nil
	}
	if err := click(tab); err != nil {
		return err
	}
	state, err = chromedp.Run(tab, chromedp.Evaluate[*string](checkJS))
	if err != nil {
		return err
	}
	if state == nil || *state != want {
		return &CheckError{ElementID: id, Value: want, Reason: "clicking it did not change its state"}
	}
	return nil
}

// fill focuses and clears the marked element and types value into it.
func fill(tab context.Context, value string) error {
	if _, err := locate(tab, true); err != nil {
		return err
	}
	_, err := chromedp.Call(tab, input.InsertText, input.InsertTextParams{Text: value})
	return err
}

// inspect fills the page's URL, title, text and elements.
func (b *Browser) inspect(tab context.Context, obs *Observation) error {
	st, err := readPage(tab)
	if err != nil {
		return err
	}
	obs.URL, obs.Title, obs.Text = clip(st.URL, maxURL), clip(st.Title, 200), st.Text
	els, err := listElements(tab, "", b.cfg.MaxElements)
	if err != nil {
		return err
	}
	obs.Elements, obs.ElementsTotal = els.List, els.Total
	if els.Capped || els.Total > len(els.List) {
		obs.Truncated = true
	}
	return nil
}

// selectJS chooses the option of the marked select whose label or value
// is the given text, as a user would (input and change events); it
// returns false when the element is not a select or has no such option.
const selectJS = `((want) => {
  const el = document.querySelector('[data-manglecp-target="1"]');
  if (!el || el.tagName !== 'SELECT') return false;
  const o = [...el.options].find(o => o.label === want || o.value === want) ||
    [...el.options].find(o => o.label.trim().toLowerCase() === want.trim().toLowerCase());
  if (!o) return false;
  el.focus();
  o.selected = true;
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return true;
})`

// OptionError is a select without the option asked for (or an element
// that is not a select). Its message is safe to show to clients.
type OptionError struct{ ElementID, Option string }

func (e *OptionError) Error() string {
	return fmt.Sprintf("the element %q is not a select with the option %q", clip(e.ElementID, 60), clip(e.Option, 60))
}

// selectOption runs selectJS on the marked element.
func selectOption(tab context.Context, id, option string) error {
	ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](fmt.Sprintf("%s(%s)", selectJS, strconv.Quote(option))))
	if err != nil {
		return err
	}
	if !ok {
		return &OptionError{ElementID: id, Option: option}
	}
	return nil
}
