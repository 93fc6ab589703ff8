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

// pingTimeout is how long the health check waits for an answer:
// HealthInterval within 2 to 10 s, stretched by MaxLoadTime
// ([Browser.stretch]).
func (b *Browser) pingTimeout() time.Duration {
	return b.stretch(min(max(b.cfg.HealthInterval, 2*time.Second), 10*time.Second))
}

// busyLimit is how long a browser that does not answer the health check
// but works (its process uses CPU time between the checks) is waited
// for before it is restarted all the same: MaxLoadTime, at least two
// health checks' waits. A loaded machine makes a browser with much to do
// (32 sessions ending at once, each disposing of its browser context)
// answer late; it is slow, not hung, and restarting it would end every
// live session. A hung or stopped browser uses no CPU time and is
// restarted after two checks, as before.
func (b *Browser) busyLimit() time.Duration {
	return max(b.cfg.MaxLoadTime, 2*b.pingTimeout())
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
	var checks failedChecks
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
			checks = failedChecks{}
			continue
		}
		restart, why := checks.failed(time.Now(), cpuTime(pid), b.busyLimit()) // cpuTime: memory_linux.go
		if !restart {
			if checks.n > 1 {
				b.log.Warn("Chromium does not answer the health check but works; waiting for it", "failed_checks", checks.n)
			}
			continue
		}
		if ctx.Err() == nil {
			if why == "" {
				why = "no answer to two health checks within " + b.pingTimeout().String()
			}
			b.fail(gen, why)
		}
		return
	}
}

// failedChecks are the consecutive health checks a browser did not
// answer.
type failedChecks struct {
	n     int       // how many
	since time.Time // when the first failed
	cpu   int64     // the browser process's CPU time at the last (-1: unknown)
}

// failed counts one more failed check at now, the browser process then
// having used cpu (its CPU time, -1 when unknown), and says whether the
// browser is to be restarted: at the second failed check in a row,
// unless the process used CPU time since the check before (it works: a
// loaded machine, much to do) and the failures began less than limit
// ago. why is "" for a browser that did not work (hung, stopped), else
// says it worked.
func (c *failedChecks) failed(now time.Time, cpu int64, limit time.Duration) (restart bool, why string) {
	c.n++
	prev := c.cpu
	c.cpu = cpu
	if c.n == 1 {
		c.since = now
		return false, ""
	}
	if cpu < 0 || prev < 0 || cpu <= prev {
		return true, ""
	}
	if now.Sub(c.since) < limit {
		return false, ""
	}
	return true, "no answer to the health checks for " + now.Sub(c.since).Round(time.Second).String() + " while it worked"
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
