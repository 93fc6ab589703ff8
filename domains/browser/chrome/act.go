package chrome

import (
	"context"
	"encoding/json"
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

// act clicks, fills, selects or checks the element, waits for the page
// to settle and records what changed. In a session (tb.live set) the
// element is found by its ref (see [Browser.markRef]), in a run by its
// JavaScript id. A fill, select or check is read back from the page: a
// value the page does not hold is a [NotHeld] error.
func (b *Browser) act(tab context.Context, tb *tab, col *collector, a *Act, obs *Observation) error {
	before, err := readPage(tab)
	if err != nil {
		return err
	}
	textsBefore := pageTexts(tab)
	defer releaseObjects(tab)
	el, err := b.mark(tab, tb, a.ElementID)
	if err != nil {
		return err
	}
	reqs, cons := col.counts()
	switch a.Kind {
	case "click":
		err = click(el)
	case "fill", "select", "check":
		want := a.Values
		if len(want) == 0 {
			want = []string{a.Value}
		}
		err = setField(el, a.Kind, want, col)
	default:
		err = fmt.Errorf("unknown action %q", clip(a.Kind, 20))
	}
	if err != nil {
		return err
	}
	col.touch()
	if err := b.settleAction(tab, col); err != nil {
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

// elem is the element an action works on: a handle on it (a remote
// object of objGroup, in the JavaScript context of its own frame, so also
// inside a shadow root or a frame) and the contexts to reach it.
type elem struct {
	// op is the context of the target that holds the element (the tab,
	// or a cross-site frame's own target); tab is the page's, which
	// takes input events.
	op, tab context.Context
	obj     runtime.RemoteObjectID
	// id is what the caller named the element (for messages).
	id string
	// frame is the offset of the element's frame in the page's viewport
	// (a cross-site frame's; zero otherwise).
	frame point
}

// objGroup holds the handles of one call's elements; releaseObjects
// frees them.
const objGroup = "manglecp-act"

// releaseObjects frees the element handles of a call.
func releaseObjects(op context.Context) {
	if op.Err() == nil {
		_, _ = chromedp.Call(op, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: objGroup})
	}
}

// callOn calls the JavaScript function fn with this = the element and
// args (as JSON), awaits the promise it returns and decodes its value
// into T. An element that left the page is an [ElementNotFound] error.
func callOn[T any](el *elem, fn string, args ...any) (T, error) {
	var zero T
	res, err := callRaw(el, fn, true, args...)
	if err != nil || res == nil || len(res.Value) == 0 {
		return zero, err
	}
	var out T
	if err := json.Unmarshal(res.Value, &out); err != nil {
		return zero, err
	}
	return out, nil
}

// objOn calls fn as callOn does and returns the element it returns as
// an elem of the same frame; nil when it returns none.
func objOn(el *elem, fn string, args ...any) (*elem, error) {
	res, err := callRaw(el, fn, false, args...)
	if err != nil || res == nil || res.ObjectID == "" || res.Subtype != "node" {
		return nil, err
	}
	return &elem{op: el.op, tab: el.tab, obj: res.ObjectID, id: el.id, frame: el.frame}, nil
}

func callRaw(el *elem, fn string, byValue bool, args ...any) (*runtime.RemoteObject, error) {
	cargs := make([]*runtime.CallArgument, len(args))
	for i, a := range args {
		raw, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		cargs[i] = &runtime.CallArgument{Value: raw}
	}
	yes := true
	res, err := chromedp.Call(el.op, runtime.CallFunctionOn, runtime.CallFunctionOnParams{FunctionDeclaration: fn,
		ObjectID: el.obj, Arguments: cargs, ReturnByValue: &byValue, AwaitPromise: &yes, Silent: &yes, ObjectGroup: objGroup})
	if err != nil {
		if el.op.Err() != nil {
			return nil, el.op.Err()
		}
		return nil, notFound(el.id)
	}
	if d := res.ExceptionDetails; d != nil {
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg, _, _ = strings.Cut(d.Exception.Description, "\n")
		}
		return nil, fmt.Errorf("acting on %q: %s", clip(el.id, 60), clip(msg, 200))
	}
	return res.Result, nil
}

// mark finds the element named id: by its ref in a session's tab, by
// its JavaScript id in a run.
func (b *Browser) mark(tab context.Context, tb *tab, id string) (*elem, error) {
	if tb.live != nil {
		return b.markRef(tab, tb.live, id)
	}
	found, err := listElements(tab, id, 1)
	if err != nil {
		return nil, err
	}
	if len(found.List) == 0 {
		return nil, notFound(id)
	}
	return markedElement(tab, id)
}

// markedElement is the element elementsJS marked, as an elem.
func markedElement(tab context.Context, id string) (*elem, error) {
	no, yes := false, true
	res, err := chromedp.Call(tab, runtime.Evaluate, runtime.EvaluateParams{Expression: `document.querySelector('[data-manglecp-target="1"]')`,
		ObjectGroup: objGroup, ReturnByValue: &no, Silent: &yes})
	if err != nil {
		return nil, err
	}
	if res.Result == nil || res.Result.ObjectID == "" {
		return nil, notFound(id)
	}
	return &elem{op: tab, tab: tab, obj: res.Result.ObjectID, id: id}, nil
}

// markRef finds the element ref names on lt's page. ref is a
// [PageElement.Ref] of the tab's latest accessibility read, an
// [PageElement.ID] ("ax123"), or a JavaScript id of [Element] ("save",
// "button-2"); a ref the latest read does not know (or whose node left
// the page) is looked up again in a fresh read, once. The DOM domain
// stays disabled: the node is resolved with DOM.resolveNode (in the
// target of its frame). The error is an [ElementNotFound] error when no element
// matches.
func (b *Browser) markRef(op context.Context, lt *liveTab, ref string) (*elem, error) {
	node, ok := lt.refs[ref]
	if !ok {
		if n, err := strconv.ParseInt(strings.TrimPrefix(ref, "ax"), 10, 64); err == nil && n > 0 && strings.HasPrefix(ref, "ax") {
			node, ok = pageNode{id: cdp.BackendNodeID(n)}, true
		}
	}
	if ok {
		el, err := resolveNode(op, lt, node, ref)
		if el != nil || err != nil {
			return el, err
		}
	}
	rctx, cancel := context.WithTimeout(op, b.inspectTime())
	p, err := b.readPageOf(rctx, lt, 1)
	cancel()
	if err != nil && op.Err() != nil {
		return nil, op.Err()
	}
	if err == nil {
		lt.refs = p.refs
		if node, ok := p.refs[ref]; ok {
			el, err := resolveNode(op, lt, node, ref)
			if el != nil || err != nil {
				return el, err
			}
		}
	}
	found, err := listElements(op, ref, 1)
	if err != nil {
		return nil, err
	}
	if len(found.List) == 0 {
		return nil, notFound(ref)
	}
	return markedElement(op, ref)
}

// liveJS checks that the node it is called on (this) is an element still
// in its document (also inside a shadow root or a frame).
const liveJS = `function() { return this instanceof this.ownerDocument.defaultView.Element && this.isConnected; }`

// resolveNode returns the element of node, or nil when it is not (or no
// longer) an element of the page. err is set only when the tab's context
// ended.
func resolveNode(op context.Context, lt *liveTab, node pageNode, ref string) (*elem, error) {
	target, frame := op, point{}
	if node.frame != "" {
		if lt == nil {
			return nil, nil
		}
		ctx, off, ok := lt.frameAt(op, node.frame)
		if !ok {
			return nil, op.Err()
		}
		target, frame = ctx, off
	}
	res, err := chromedp.Call(target, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: node.id, ObjectGroup: objGroup})
	if err != nil || res.Object == nil || res.Object.ObjectID == "" {
		return nil, op.Err()
	}
	el := &elem{op: target, tab: op, obj: res.Object.ObjectID, id: ref, frame: frame}
	ok, err := callOn[bool](el, liveJS)
	if err != nil || !ok {
		return nil, op.Err()
	}
	return el, nil
}

type point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// centreJS scrolls the element into view and returns its centre in its
// frame's viewport, with the offsets of the same-origin frames around it
// added (the page's viewport then).
const centreJS = `function() {
  this.scrollIntoView({block: 'center', inline: 'center'});
  const r = this.getBoundingClientRect();
  let x = r.left + r.width / 2, y = r.top + r.height / 2;
  try {
    for (let w = this.ownerDocument.defaultView; w && w.frameElement; w = w.parent) {
      const f = w.frameElement, fr = f.getBoundingClientRect(), cs = w.parent.getComputedStyle(f);
      x += fr.left + parseFloat(cs.borderLeftWidth) + parseFloat(cs.paddingLeft);
      y += fr.top + parseFloat(cs.borderTopWidth) + parseFloat(cs.paddingTop);
    }
  } catch (e) {}
  return {x, y, w: r.width, h: r.height};
}`

// centre is the element's centre in the page's viewport, scrolled into
// view.
func centre(el *elem) (point, error) {
	type box struct {
		X, Y, W, H float64
	}
	b, err := callOn[*box](el, centreJS)
	if err != nil {
		return point{}, err
	}
	if b == nil || (b.W == 0 && b.H == 0) {
		return point{}, elementError(NotVisible, el.id, "the element %q is not visible on the page", clip(el.id, 60))
	}
	return point{X: b.X + el.frame.X, Y: b.Y + el.frame.Y}, nil
}

// click presses and releases the left mouse button at the element's
// centre, as a user would. (The tab does not enable the DOM domain, see
// tab, so chromedp's selector actions are not used.)
func click(el *elem) error {
	p, err := centre(el)
	if err != nil {
		return err
	}
	return clickAt(el.tab, p, 0)
}

// clickAt clicks at p with the modifier keys (input.Modifier bits).
func clickAt(tab context.Context, p point, modifiers int64) error {
	for _, typ := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMouseMoved,
		input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
		ev := input.DispatchMouseEventParams{Type: typ, X: p.X, Y: p.Y, Modifiers: modifiers}
		if typ != input.DispatchMouseEventTypeMouseMoved {
			ev.Button, ev.ClickCount = input.MouseButtonLeft, 1
		}
		if _, err := chromedp.Call(tab, input.DispatchMouseEvent, ev); err != nil {
			return err
		}
	}
	return nil
}

// hoverAt moves the mouse to the element's centre.
func hoverAt(el *elem) error {
	p, err := centre(el)
	if err != nil {
		return err
	}
	_, err = chromedp.Call(el.tab, input.DispatchMouseEvent, input.DispatchMouseEventParams{
		Type: input.DispatchMouseEventTypeMouseMoved, X: p.X, Y: p.Y})
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
