package chrome

import (
	"context"
	"time"

	"github.com/chromedp/chromedp"
)

// PageTargets counts the browser's page targets (tabs), for tests.
func PageTargets(b *Browser) (int, error) {
	b.mu.Lock()
	root := b.root
	b.mu.Unlock()
	if root == nil {
		return 0, nil
	}
	ctx, done := context.WithTimeout(root, 5*time.Second)
	defer done()
	infos, err := chromedp.Targets(ctx)
	n := 0
	for _, i := range infos {
		if i.Type == "page" {
			n++
		}
	}
	return n, err
}
