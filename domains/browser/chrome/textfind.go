package chrome

import (
	"context"
	"fmt"
	"strconv"

	"github.com/chromedp/chromedp"
)

// textFindJS returns the texts of the page's blocks (paragraphs, list
// items, definitions, cells...) that contain a text, case-insensitively:
// for each matching text node, the nearest ancestor whose text says more
// than the match itself (a term "Warranty" gives its definition list's
// "Warranty 3 years"), at most 300 characters around the match, at most
// max distinct texts; it walks at most 20,000 text nodes.
const textFindJS = `((want, max) => {
  const out = [], seen = new Set(), skip = {SCRIPT: 1, STYLE: 1, NOSCRIPT: 1, TEMPLATE: 1};
  const low = want.toLowerCase();
  if (!document.body || !low) return out;
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let n = 0;
  while (out.length < max && n++ < 20000 && w.nextNode()) {
    const node = w.currentNode, p = node.parentElement;
    if (!p || skip[p.tagName] || !node.data.toLowerCase().includes(low)) continue;
    let el = p;
    for (let up = 0; up < 3 && el.parentElement && el !== document.body; up++) {
      const t = (el.innerText || el.textContent || '').replace(/\s+/g, ' ').trim();
      if (t.length > low.length + 12) break;
      el = el.parentElement;
    }
    let t = (el.innerText || el.textContent || '').replace(/\s+/g, ' ').trim();
    if (t.length > 300) {
      const at = Math.max(0, t.toLowerCase().indexOf(low) - 120);
      t = (at > 0 ? '…' : '') + t.slice(at, at + 300) + '…';
    }
    if (t && !seen.has(t)) { seen.add(t); out.push(t); }
  }
  return out;
})`

// maxFindElements bounds the elements a find looks at (the tree's read
// itself is bounded by readAXPage).
const maxFindElements = 5000

// Find reads the current page of the session as
// [Session.Read] does and, in the same call, the texts of the
// page's blocks that contain text (at most max, 0: 5): the part of the
// page a model asks for, never the whole page. Errors: those of
// [Session.Read].
func (s *Session) Find(ctx context.Context, text string, max int) (*Page, []string, *Observation, error) {
	b := s.b
	if max <= 0 {
		max = 5
	}
	var p *Page
	var texts []string
	obs, err := s.do(ctx, func(op context.Context, lt *liveTab, obs *Observation) error {
		var err error
		// A find looks at more of the page than a call's page facts keep:
		// it returns only what matches.
		if p, err = b.readPageOf(op, lt, maxFindElements); err != nil {
			return err
		}
		lt.refs = p.refs
		obs.URL, obs.Title = p.URL, p.Title
		texts, err = chromedp.Run(op, chromedp.Evaluate[[]string](fmt.Sprintf("%s(%s, %d)", textFindJS, strconv.Quote(text), max)))
		return err
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for i := range texts {
		texts[i] = clip(texts[i], 400)
	}
	return p, texts, obs, nil
}
