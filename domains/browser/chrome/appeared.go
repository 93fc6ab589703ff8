package chrome

import (
	"context"

	"github.com/chromedp/chromedp"
)

// textsJS lists the page's visible text nodes (trimmed, whitespace
// collapsed, each at most 200 characters), at most 400 of them, walking
// at most 20,000 nodes.
const textsJS = `(() => {
  const out = [], skip = {SCRIPT: 1, STYLE: 1, NOSCRIPT: 1, TEMPLATE: 1};
  if (!document.body) return out;
  const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let n = 0;
  while (out.length < 400 && n++ < 20000 && w.nextNode()) {
    const p = w.currentNode.parentElement;
    if (!p || skip[p.tagName] || p.closest('[hidden]')) continue;
    const t = w.currentNode.data.replace(/\s+/g, ' ').trim();
    if (t) out.push(t.slice(0, 200));
  }
  return out;
})()`

// maxAppeared bounds the texts [ActResult.Appeared] keeps.
const maxAppeared = 5

// pageTexts reads textsJS; a page that does not answer gives none.
func pageTexts(tab context.Context) []string {
	texts, err := chromedp.Run(tab, chromedp.Evaluate[[]string](textsJS))
	if err != nil {
		return nil
	}
	return texts
}

// appeared returns the texts of after that before did not have (at most
// maxAppeared, in page order): what an action made the page say, such as
// "Saved order for 1".
func appeared(before, after []string) []string {
	had := make(map[string]int, len(before))
	for _, t := range before {
		had[t]++
	}
	var out []string
	for _, t := range after {
		if had[t] > 0 {
			had[t]--
			continue
		}
		out = append(out, clip(t, 200))
		if len(out) == maxAppeared {
			break
		}
	}
	return out
}
