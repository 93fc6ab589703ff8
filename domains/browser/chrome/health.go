package chrome

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// memoryInterval is how often the renderers' memory is looked at.
const memoryInterval = 500 * time.Millisecond

// pingTimeout is how long the health check waits for an answer.
func (b *Browser) pingTimeout() time.Duration {
	return min(max(b.cfg.HealthInterval, 2*time.Second), 10*time.Second)
}

// watch is the monitor of one browser process (generation gen): it asks
// the browser every HealthInterval whether it answers, notices when the
// process ends, and bounds the renderers' memory. A browser that does not
// answer, or whose process ended, is stopped and started again. Pages'
// memory, in their renderers and what they made the browser hold, is
// looked at every memoryInterval (memWatch). It ends
// with ctx (the browser was stopped) or after handing over to a restart.
func (b *Browser) watch(ctx, root context.Context, gen uint64) {
	defer b.monitors.Done()
	pid := 0
	if c := chromedp.FromContext(root); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		pid = c.Browser.Process().Pid
	}
	var pages memWatch // memory_linux.go
	mem := time.NewTicker(memoryInterval)
	defer mem.Stop()
	ping := time.NewTicker(b.cfg.HealthInterval)
	defer ping.Stop()
	fails := 0 // consecutive failed health checks; two restart the browser
	var lost <-chan struct{}
	if c := chromedp.FromContext(root); c != nil && c.Browser != nil {
		lost = c.Browser.LostConnection
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-lost:
			b.fail(gen, "its process ended")
			return
		case <-root.Done():
			b.fail(gen, "its process ended")
			return
		case <-mem.C:
			if pid != 0 {
				pages.look(pid, int64(b.cfg.PageMemoryMB)<<20, b.log)
			}
			continue
		case <-b.checkNow:
		case <-ping.C:
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ping.C:
		default:
		}
		if b.ping(root) {
			fails = 0
			continue
		}
		if fails++; fails >= 2 && ctx.Err() == nil {
			b.fail(gen, "no answer to two health checks within "+b.pingTimeout().String())
			return
		}
	}
}

// checkSoon asks the monitor for a health check now (a tab that did not
// close in time).
func (b *Browser) checkSoon() {
	select {
	case b.checkNow <- struct{}{}:
	default:
	}
}

// ping asks the browser for its version.
func (b *Browser) ping(root context.Context) bool {
	pctx, cancel := context.WithTimeout(root, b.pingTimeout())
	defer cancel()
	_, err := chromedp.CallBrowser(pctx, browser.GetVersion, cdp.Empty{})
	return err == nil
}

// fail stops the browser of generation gen, reports it down and restarts
// it in the background.
func (b *Browser) fail(gen uint64, why string) {
	b.mu.Lock()
	if b.gen != gen || b.closed || b.root == nil {
		b.mu.Unlock()
		return
	}
	b.down = "the server's browser stopped working (" + why + ") and is being restarted"
	b.restarts++
	b.log.Error("Chromium stopped working; restarting it", "reason", why, "restarts", b.restarts)
	b.mu.Unlock()
	b.report()
	b.monitors.Add(1)
	go b.restart(gen)
}

// restart stops what is left of the failed browser and starts a new one,
// trying again every launchRetry until it starts or the browser is closed.
func (b *Browser) restart(gen uint64) {
	defer b.monitors.Done()
	b.mu.Lock()
	if b.gen == gen {
		b.stopLocked() // kills the process (also a hung or stopped one)
	}
	b.mu.Unlock()
	for {
		b.startMu.Lock()
		_, _, err := b.start()
		b.startMu.Unlock()
		b.mu.Lock()
		closed := b.closed
		if err == nil {
			b.down = ""
		}
		b.mu.Unlock()
		if closed {
			return
		}
		if err == nil {
			b.log.Info("Chromium restarted")
			b.report()
			return
		}
		t := time.NewTimer(launchRetry)
		select {
		case <-t.C:
		case <-b.done:
			t.Stop()
			return
		}
		b.mu.Lock()
		b.failedAt = time.Time{} // try again now
		b.mu.Unlock()
	}
}

// report tells Config.OnHealth the browser's state, in order.
func (b *Browser) report() {
	if b.cfg.OnHealth == nil {
		return
	}
	b.healthMu.Lock()
	defer b.healthMu.Unlock()
	b.cfg.OnHealth(b.Health())
}
