// Package chrome drives one headless Chromium over the Chrome DevTools
// Protocol (with github.com/chromedp/chromedp) for the browser domain.
//
// A [Browser] owns at most one browser process, started on first use and
// stopped by [Browser.Close]. Every [Browser.Run] gets its own browser
// context (an incognito-like profile: no cookies, storage or cache shared
// with other runs), bounded by the caller's context and by
// [Config.MaxLoadTime], and closed before Run returns. Only http and https
// URLs on the allowed hosts load: the first navigation is checked before
// anything starts, and every request the page makes (subresources,
// redirects, fetches) is intercepted and failed unless its host is
// allowed. Downloads are denied and JavaScript dialogs dismissed.
package chrome

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/chromedp"
)

// DefaultNames are the binary names looked up on PATH when
// [Config.Path] is empty, in order.
var DefaultNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// DefaultAllowedHosts is the host allow-list when [Config.AllowedHosts]
// is nil: loopback only, so that a default server is not a proxy into the
// operator's network.
var DefaultAllowedHosts = []string{"localhost", "127.0.0.1", "::1"}

// Disabled is the [Config.Path] value that turns the browser off.
const Disabled = "none"

// Config configures a [Browser].
type Config struct {
	// Path is the Chromium binary: a path or a name looked up on PATH.
	// Empty: the first of [DefaultNames] found. [Disabled] ("none"): no
	// browser.
	Path string
	// AllowedHosts are the host names (or IP literals) pages may load
	// from, compared case-insensitively without the port. "*" allows
	// every host (the server then reaches whatever its network reaches).
	// Nil: [DefaultAllowedHosts].
	AllowedHosts []string
	// MaxLoadTime bounds one Run (navigation, settling, action). Default
	// 20s. The caller's context can end it earlier.
	MaxLoadTime time.Duration
	// MaxPageBytes bounds the bytes a page may receive over the network
	// (all its requests). Default 16 MiB.
	MaxPageBytes int64
	// Logger receives the browser's start, stop and failures. Default:
	// discard.
	Logger *slog.Logger
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("chrome: the browser was closed")

// URLError is a URL the browser refuses to open. Its message is safe to
// show to clients (it holds no server paths).
type URLError struct{ Reason string }

// Error is the reason the URL is refused.
func (e *URLError) Error() string { return e.Reason }

// Browser is one lazily started Chromium process shared by all runs. It is
// safe for concurrent use.
type Browser struct {
	cfg     Config
	path    string
	reason  string // why there is no browser; "" when there is one
	allowed map[string]bool
	anyHost bool
	log     *slog.Logger

	startMu sync.Mutex // serializes starts; held while Chromium launches

	mu         sync.Mutex // guards the fields below; never held while launching
	closed     bool
	root       context.Context // chromedp context holding the browser
	rootCancel context.CancelFunc
	allocStop  context.CancelFunc
	failedAt   time.Time // last failed start; retried after a pause
	failure    string
	runs       sync.WaitGroup
	tabs       atomic.Uint64 // numbers the runs' sessions: tab1, tab2, ...
}

// launchRetry is how long a failed start keeps the browser unavailable.
const launchRetry = 30 * time.Second

// New resolves the binary and returns a Browser; nothing starts until the
// first Run.
func New(cfg Config) *Browser {
	if cfg.MaxLoadTime <= 0 {
		cfg.MaxLoadTime = 20 * time.Second
	}
	if cfg.MaxPageBytes <= 0 {
		cfg.MaxPageBytes = 16 << 20
	}
	if cfg.AllowedHosts == nil {
		cfg.AllowedHosts = DefaultAllowedHosts
	}
	b := &Browser{cfg: cfg, allowed: map[string]bool{}, log: cfg.Logger}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	for _, h := range cfg.AllowedHosts {
		h = strings.ToLower(strings.Trim(strings.TrimSpace(h), "[]"))
		if h == "*" {
			b.anyHost = true
		}
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		if h != "" {
			b.allowed[h] = true
		}
	}
	switch {
	case cfg.Path == Disabled:
		b.reason = "the browser is turned off in the server configuration (browser_path \"none\")"
	case cfg.Path != "":
		p, err := exec.LookPath(cfg.Path)
		if err != nil {
			b.reason = "the configured browser_path is not an executable Chromium; the server log names it"
			b.log.Warn("browser_path not usable; browser tools are unavailable", "browser_path", cfg.Path, "error", err.Error())
		}
		b.path = p
	default:
		for _, n := range DefaultNames {
			if p, err := exec.LookPath(n); err == nil {
				b.path = p
				break
			}
		}
		if b.path == "" {
			b.reason = "no Chromium found on the server (looked for " + strings.Join(DefaultNames, ", ") +
				"); install it (scripts/deps/chromium.sh) or set browser_path"
		}
	}
	if b.reason == "" {
		b.log.Info("browser available; it starts on first use", "browser_path", b.path)
	}
	return b
}

// Available reports whether runs can start, and why not. It never starts
// the browser: a browser that failed to start is unavailable for a while,
// then tried again.
func (b *Browser) Available() (bool, string) {
	if b.reason != "" {
		return false, b.reason
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false, "the server is shutting down its browser"
	}
	if !b.failedAt.IsZero() && time.Since(b.failedAt) < launchRetry {
		return false, "Chromium failed to start (" + b.failure + "); retrying in a moment"
	}
	return true, ""
}

// HostAllowed reports whether pages may load from host (a host name or IP
// literal, without port).
func (b *Browser) HostAllowed(host string) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return b.anyHost || b.allowed[host]
}

// CheckURL parses raw and checks that the browser may open it: http or
// https, a host on the allow-list, no credentials in the URL.
func (b *Browser) CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &URLError{"the URL does not parse"}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, &URLError{"only http and https URLs may be opened"}
	}
	if u.User != nil {
		return nil, &URLError{"URLs with credentials are not opened"}
	}
	if u.Hostname() == "" {
		return nil, &URLError{"the URL has no host"}
	}
	if !b.HostAllowed(u.Hostname()) {
		return nil, &URLError{fmt.Sprintf("the host %q is not on the server's allowed_hosts list", clip(u.Hostname(), 100))}
	}
	return u, nil
}

// start launches the browser if it is not running and returns its root
// context. b.startMu is held; b.mu is not.
func (b *Browser) start() (context.Context, error) {
	b.mu.Lock()
	root, closed := b.root, b.closed
	b.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if root != nil && root.Err() == nil {
		return root, nil
	}
	b.mu.Lock()
	b.stopLocked() // a crashed browser: reap what is left
	b.mu.Unlock()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(b.path),
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
		// Running as root (containers, CI) needs --no-sandbox; chromedp
		// adds it when the uid is 0.
	)
	allocCtx, allocStop := chromedp.NewExecAllocator(context.Background(), opts...)
	root, rootCancel := chromedp.NewContext(allocCtx)
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(root) }()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		err = errors.New("no answer within 30s")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil && b.closed {
		err = ErrClosed
	}
	if err != nil {
		rootCancel()
		allocStop()
		if !errors.Is(err, ErrClosed) {
			b.failedAt, b.failure = time.Now(), "see the server log"
			b.log.Error("Chromium failed to start; browser tools are unavailable for a while", "browser_path", b.path, "error", err.Error())
		}
		return nil, fmt.Errorf("starting Chromium: %w", err)
	}
	b.root, b.rootCancel, b.allocStop = root, rootCancel, allocStop
	b.failedAt = time.Time{}
	b.log.Info("Chromium started", "browser_path", b.path)
	return root, nil
}

// stopLocked stops a running browser; b.mu is held.
func (b *Browser) stopLocked() {
	if b.rootCancel != nil {
		b.rootCancel() // kills the process and waits for it
		b.allocStop()  // waits for the profile directory to be removed
	}
	b.root, b.rootCancel, b.allocStop = nil, nil, nil
}

// Close stops the browser, ends every run and waits for them. Later runs
// fail with ErrClosed. It is safe to call more than once.
func (b *Browser) Close() error {
	b.mu.Lock()
	b.closed = true
	root := b.rootCancel
	b.mu.Unlock()
	if root != nil {
		root() // runs see their tabs end
	}
	// A start under way finishes, sees closed and stops its browser.
	b.startMu.Lock()
	b.startMu.Unlock() //nolint:staticcheck // an empty critical section: wait for a start to end
	b.runs.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rootCancel != nil {
		b.stopLocked()
		b.log.Info("Chromium stopped")
	}
	return nil
}

// acquire returns the browser's root context for a new run, starting the
// browser when needed. A caller whose ctx ends while the browser starts
// returns at once; the start goes on for the next caller (Close waits for
// it). On success the caller must call b.runs.Done.
func (b *Browser) acquire(ctx context.Context) (context.Context, error) {
	if b.reason != "" {
		return nil, errors.New(b.reason)
	}
	type started struct {
		root context.Context
		err  error
	}
	done := make(chan started, 1)
	go func() {
		b.startMu.Lock()
		defer b.startMu.Unlock()
		b.mu.Lock()
		recent := !b.failedAt.IsZero() && time.Since(b.failedAt) < launchRetry
		b.mu.Unlock()
		if recent {
			done <- started{err: errors.New("Chromium failed to start recently")}
			return
		}
		root, err := b.start()
		done <- started{root, err}
	}()
	var r started
	select {
	case r = <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil {
		return nil, r.err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	b.runs.Add(1)
	return r.root, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

// hostOf returns the host of a request URL, or "" for URLs that are not
// http(s) (data:, blob:, about:), which never reach the network.
func hostOf(raw string) (host string, network bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", true
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
		h := u.Hostname()
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		return h, true
	case "data", "blob", "about":
		return "", false
	}
	return "", true
}
