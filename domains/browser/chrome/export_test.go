package chrome

import (
	"context"
	"flag"
	"os"
	"runtime"
	"sync"
	"testing"
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

// The shared browser: one Chromium for every test of this test binary
// that needs a browser but not one of its own (a test that counts the
// browser's targets, processes or goroutines, kills or stops it, or sets
// limits of its own starts its own). Starting Chromium is the slow part
// of most tests on a loaded machine, and the tests that share it run in
// parallel (t.Parallel): each works in its own sessions, whose browser
// contexts share nothing.
var shared struct {
	once sync.Once
	b    *Browser
}

// SharedConfig is the shared browser's configuration: the defaults
// stretched by the machine's speed (Budgeted), with room for the tests
// that run at once (each opens its sessions as "ada", and no test's
// session may end another's).
func SharedConfig(path string) Config {
	return Budgeted(Config{Path: path, MaxSessions: 256, MaxSessionsPerIdentity: 256, MaxPages: 8, MaxQueued: 64})
}

// SharedBrowser returns the test binary's shared browser (see
// [SharedConfig]), or skips t (fails it under MANGLECP_TEST_REQUIRE=1)
// without Chromium. TestMain closes it after the tests.
func SharedBrowser(t testing.TB) *Browser {
	t.Helper()
	path := loadChromium(t)
	shared.once.Do(func() { shared.b = New(SharedConfig(path)) })
	return shared.b
}

// TestMain runs the tests and closes the shared browser after them, so
// that no Chromium outlives the test binary. The tests marked parallel
// run up to 4 at a time unless -parallel says otherwise (go test's
// default is GOMAXPROCS, 2 on the project's machines): they wait on
// Chromium's pages far more than they use the CPU.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && runtime.GOMAXPROCS(0) < 4 {
		_ = flag.Set("test.parallel", "4")
	}
	code := m.Run()
	if shared.b != nil {
		_ = shared.b.Close()
	}
	os.Exit(code)
}

// BrowserPID is the pid of b's browser process, 0 when none runs: a
// test that signals or measures its own browser finds it among the
// others that run beside it.
func BrowserPID(b *Browser) int {
	b.mu.Lock()
	root := b.root
	b.mu.Unlock()
	if root == nil {
		return 0
	}
	if c := chromedp.FromContext(root); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		return c.Browser.Process().Pid
	}
	return 0
}
