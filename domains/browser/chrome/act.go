package chrome

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chromedp/chromedp"
)

// elementsJS lists the interactive elements of the page, in document
// order, with the ids described at [Element]. With a non-empty target it
// marks that element with data-manglecp-target and returns only it.
const elementsJS = `((target, max) => {
  const sel = 'a[href],button,input,select,textarea,[role=button],[role=link],[contenteditable=""],[contenteditable=true]';
  const out = [], seen = {};
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
  const labelOf = el => {
    let t = el.getAttribute('aria-label') || '';
    if (!t && el.labels && el.labels.length) t = el.labels[0].innerText;
    if (!t && el.tagName !== 'INPUT' && el.tagName !== 'TEXTAREA' && el.tagName !== 'SELECT') t = el.innerText;
    if (!t) t = el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('name') || el.getAttribute('value') || '';
    return t.replace(/\s+/g, ' ').trim().slice(0, 80);
  };
  for (const el of document.querySelectorAll(sel)) {
    const kind = kindOf(el);
    if (!kind) continue;
    let id = el.id && document.querySelectorAll('#' + CSS.escape(el.id)).length === 1 ? el.id : '';
    if (!id) { seen[kind] = (seen[kind] || 0) + 1; id = kind + '-' + seen[kind]; }
    if (target) {
      if (id === target) { el.setAttribute('data-manglecp-target', '1'); return [{id, kind, label: labelOf(el)}]; }
      continue;
    }
    if (out.length >= max) break;
    out.push({id, kind, label: labelOf(el)});
  }
  return out;
})`

// pageJS reads the location, title and the start of the visible text.
const pageJS = `({url: location.href, title: document.title, text: (document.body ? document.body.innerText : '').replace(/\s+/g, ' ').trim().slice(0, %d)})`

type pageState struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

func readPage(tab context.Context) (pageState, error) {
	return chromedp.Run(tab, chromedp.Evaluate[pageState](fmt.Sprintf(pageJS, maxTextBytes)))
}

func listElements(tab context.Context, target string) ([]Element, error) {
	t, _ := json.Marshal(target)
	type el struct {
		ID    string `json:"id"`
		Kind  string `json:"kind"`
		Label string `json:"label"`
	}
	raw, err := chromedp.Run(tab, chromedp.Evaluate[[]el](fmt.Sprintf("%s(%s, %d)", elementsJS, t, maxElements+1)))
	if err != nil {
		return nil, err
	}
	out := make([]Element, 0, len(raw))
	for _, e := range raw {
		out = append(out, Element{ID: clip(e.ID, maxLabel), Kind: e.Kind, Label: clip(e.Label, maxLabel)})
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

// act clicks or fills the element, waits for the page to settle and
// records what changed.
func (b *Browser) act(tab context.Context, col *collector, a *Act, obs *Observation) error {
	before, err := readPage(tab)
	if err != nil {
		return err
	}
	found, err := listElements(tab, a.ElementID)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return &ElementNotFound{a.ElementID}
	}
	reqs, cons := col.counts()
	sel := chromedp.CSS(`[data-manglecp-target="1"]`)
	switch a.Kind {
	case "click":
		err = chromedp.Do(tab, chromedp.Click(sel))
	case "fill":
		err = chromedp.Do(tab, chromedp.Clear(sel), chromedp.SendKeys(sel, a.Value))
	default:
		err = fmt.Errorf("unknown action %q", a.Kind)
	}
	if err != nil {
		return err
	}
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
		Requests: reqs2 - reqs, Console: cons2 - cons}
	return nil
}

// inspect fills the page's URL, title, text and elements.
func (b *Browser) inspect(tab context.Context, obs *Observation) error {
	st, err := readPage(tab)
	if err != nil {
		return err
	}
	obs.URL, obs.Title, obs.Text = clip(st.URL, maxURL), clip(st.Title, 200), st.Text
	els, err := listElements(tab, "")
	if err != nil {
		return err
	}
	if len(els) > maxElements {
		els, obs.Truncated = els[:maxElements], true
	}
	obs.Elements = els
	return nil
}
