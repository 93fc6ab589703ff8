package browser_test

import (
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/testenv"
)

// budgeted is the configuration and options a browser test's server runs
// with: where the test leaves them zero, the invocation deadline, a page's
// load time and the queue's wait are the defaults stretched by the
// machine's measured speed (testenv.Budget), since none of these
// deadlines is what the tests check and a loaded machine makes Chromium
// slow.
func budgeted(cfg browser.Config, o *manglecp.Options) (browser.Config, *manglecp.Options) {
	if cfg.MaxLoadTime == 0 {
		cfg.MaxLoadTime = testenv.Budget(chrome.DefaultMaxLoadTime)
	}
	if cfg.QueueWait == 0 {
		cfg.QueueWait = testenv.Budget(chrome.DefaultQueueWait)
	}
	if o.InvokeTimeout == 0 {
		o.InvokeTimeout = testenv.Budget(30 * time.Second)
	}
	return cfg, o
}
