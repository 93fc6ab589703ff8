package chrome

import (
	"context"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/manglecp/manglecp/internal/testenv"
)

// PageTargets counts the browser's page targets (tabs), for tests.
func PageTargets(b *Browser) (int, error) {
	b.mu.Lock()
	root := b.root
	b.mu.Unlock()
	if root == nil {
		return 0, nil
	}
	ctx, done := context.WithTimeout(root, testenv.Budget(5*time.Second))
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

// Budgeted is cfg with the limits a test does not set (a page's load
// time, the queue's wait) at their defaults stretched by the machine's
// measured speed (testenv.Budget): on a loaded machine Chromium is slow,
// and these limits are not what most tests check.
func Budgeted(cfg Config) Config {
	if cfg.MaxLoadTime == 0 {
		cfg.MaxLoadTime = testenv.Budget(DefaultMaxLoadTime)
	}
	if cfg.QueueWait == 0 {
		cfg.QueueWait = testenv.Budget(DefaultQueueWait)
	}
	return cfg
}
