package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/manglecp/manglecp/domains/browser"
)

// browserFlags are serve's flags for the browser domain's own Chromium
// (stable contract): --browser-path, --browser-allowed-hosts and the
// bounds of the browser's work. They override the config file's "browser"
// section. docs/browser.md documents each bound's default and worst case.
type browserFlags struct {
	path, hosts                       string
	maxPages, maxQueued, pageMemoryMB int
	maxConsole                        int
	queueWait, maxLoadTime, health    time.Duration
	// Live sessions: docs/browser.md "Live sessions".
	maxSessions, maxSessionsPerID, maxSessionTabs int
	sessionIdle                                   time.Duration
	uploadDir                                     string
	allowScripts                                  bool
}

// addBrowserFlags registers the browser flags on fs.
func addBrowserFlags(fs *flag.FlagSet, b *browserFlags) {
	fs.StringVar(&b.path, "browser-path", "", "Chromium binary of the browser domain (a path or a name on PATH; default: chromium, chromium-browser, google-chrome; \"none\" turns the browser off)")
	fs.StringVar(&b.hosts, "browser-allowed-hosts", "", "comma-separated hosts the browser may reach from any page, frame, popup or worker: host (every port) or host:port, [v6]:port (default: localhost,127.0.0.1,::1, every port; \"*\" allows every host)")
	fs.IntVar(&b.maxPages, "browser-max-pages", 0, "pages the browser works on at a time (default 4)")
	fs.IntVar(&b.maxQueued, "browser-max-queued", 0, "pages that wait for one of them; more are refused with x-browser_busy and retry_after_ms (default 8; -1: none wait)")
	fs.DurationVar(&b.queueWait, "browser-queue-wait", 0, "how long a page waits for a free one before it is refused (default 10s)")
	fs.IntVar(&b.pageMemoryMB, "browser-page-memory-mb", 0, "memory of one page's renderer in MiB: V8's heap gets half, a renderer above it is stopped (default 512)")
	fs.IntVar(&b.maxConsole, "browser-max-console", 0, "console messages one observation keeps; it counts the rest (default 100)")
	fs.DurationVar(&b.maxLoadTime, "browser-max-load-time", 0, "time of one page: load, settle, act, inspect (default 20s)")
	fs.DurationVar(&b.health, "browser-health-interval", 0, "how often the browser is checked; two checks without an answer restart it (default 5s)")
	fs.IntVar(&b.maxSessions, "browser-max-sessions", 0, "live browser sessions on this server; one more open_page is refused with x-browser_busy (default 8)")
	fs.IntVar(&b.maxSessionsPerID, "browser-max-sessions-per-identity", 0, "live browser sessions of one identity; one more ends its least recently used idle session (default 2)")
	fs.IntVar(&b.maxSessionTabs, "browser-max-session-tabs", 0, "tabs of one live browser session (default 4)")
	fs.DurationVar(&b.sessionIdle, "browser-session-idle", 0, "a live browser session without a call for this long ends with its tabs (default 5m)")
	fs.StringVar(&b.uploadDir, "browser-upload-dir", "", "directory upload_file may take files from (confined to it; default: none, uploads off)")
	fs.BoolVar(&b.allowScripts, "browser-allow-scripts", false, "let run_script run JavaScript in live pages, each run confirmed by the user (default off)")
}

// check validates the flags before the server starts: an upload
// directory must be an existing directory.
func (b *browserFlags) check() error {
	if b.uploadDir == "" {
		return nil
	}
	st, err := os.Stat(b.uploadDir)
	if err != nil {
		return fmt.Errorf("--browser-upload-dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--browser-upload-dir: %s is not a directory", b.uploadDir)
	}
	return nil
}

// apply sets the flags that were given on c.
func (b *browserFlags) apply(c *browser.Config) {
	if b.path != "" {
		c.BrowserPath = b.path
	}
	if b.hosts != "" {
		c.AllowedHosts = nil
		for _, h := range strings.Split(b.hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				c.AllowedHosts = append(c.AllowedHosts, h)
			}
		}
	}
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setD := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	set(&c.MaxPages, b.maxPages)
	set(&c.MaxQueued, b.maxQueued)
	set(&c.PageMemoryMB, b.pageMemoryMB)
	set(&c.MaxConsole, b.maxConsole)
	setD(&c.QueueWait, b.queueWait)
	setD(&c.MaxLoadTime, b.maxLoadTime)
	setD(&c.HealthInterval, b.health)
	set(&c.MaxSessions, b.maxSessions)
	set(&c.MaxSessionsPerIdentity, b.maxSessionsPerID)
	set(&c.MaxSessionTabs, b.maxSessionTabs)
	setD(&c.SessionIdle, b.sessionIdle)
	if b.uploadDir != "" {
		c.UploadDir = b.uploadDir
	}
	if b.allowScripts {
		c.AllowScripts = true
	}
}
