package chrome

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/manglecp/manglecp/internal/settings"
)

// DefaultNames are the binary names looked up on PATH when
// [Config.Path] is empty, in order.
var DefaultNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// DefaultAllowedHosts is the host allow-list when [Config.AllowedHosts]
// is nil: loopback only (every port), so that a default server is not a
// proxy into the operator's network.
var DefaultAllowedHosts = []string{"localhost", "127.0.0.1", "::1"}

// Disabled is the [Config.Path] value that turns the browser off.
const Disabled = "none"

// Defaults of the bounds in [Config].
const (
	DefaultMaxLoadTime    = 20 * time.Second
	DefaultMaxPageBytes   = 16 << 20
	DefaultMaxPages       = 4
	DefaultMaxQueued      = 8
	DefaultQueueWait      = 10 * time.Second
	DefaultPageMemoryMB   = 512
	DefaultMaxConsole     = 100
	DefaultMaxRequests    = 150
	DefaultMaxElements    = 100
	DefaultHealthInterval = 5 * time.Second
	// Live sessions (see [Browser.OpenSession]).
	DefaultMaxSessions            = 8
	DefaultMaxSessionsPerIdentity = 2
	DefaultSessionIdle            = 5 * time.Minute
	DefaultMaxSessionTabs         = 4
)

// Config configures a [Browser]: it is the one place of the browser's
// settings. Zero values take the defaults ([DefaultConfig]); [Config.Validate]
// checks a configuration. The tags name each setting's config file key
// (in the "browser" section), its serve flag and its help line: the CLI's
// flags and config file and the settings table of docs/browser.md derive
// from them (package internal/settings), so a new setting is a field
// here, its default in DefaultConfig and its line in the docs.
type Config struct {
	// Path is the Chromium binary: a path or a name looked up on PATH.
	// Empty: the first of [DefaultNames] found. [Disabled] ("none"): no
	// browser.
	Path string `key:"browser_path" flag:"browser-path" help:"Chromium binary of the browser domain (a path or a name on PATH; empty: the first of chromium, chromium-browser, google-chrome, google-chrome-stable, headless-shell; \"none\" turns the browser off)"`
	// AllowedHosts are the hosts pages may reach (see [ParseAllowedHost]):
	// "host" or an IP literal allows every port of it, "host:port" (or
	// "[v6]:port") that port only; names compare case-insensitively. "*"
	// allows every host (the server then reaches whatever its network
	// reaches). Nil: [DefaultAllowedHosts].
	AllowedHosts []string `key:"allowed_hosts" flag:"browser-allowed-hosts" help:"comma-separated hosts the browser may reach from any page, frame, popup or worker: host (every port) or host:port, [v6]:port (\"*\" allows every host)"`
	// MaxLoadTime bounds one Run (navigation, settling, action). The
	// caller's context can end it earlier. A page that does not finish
	// loading in time is observed as far as it got. Chromium's start is
	// given one and a half MaxLoadTime, at least 30 s. It is also the
	// measure of how slow this machine's browser is: above its default
	// (20 s) the browser's shorter waits grow in proportion (settling
	// 5 s, inspecting 3 s, closing a tab 5 s, stopping a script, the
	// health check's wait; see Browser.stretch in run.go).
	MaxLoadTime time.Duration `key:"max_load_time_ms" flag:"browser-max-load-time" help:"time of one page: load, settle, act, inspect; above 20s the browser's shorter waits (settling, inspecting, closing a tab, the health check) grow in proportion"`
	// MaxPageBytes bounds the bytes a page may receive over the network
	// (all its requests).
	MaxPageBytes int64 `key:"max_page_bytes" flag:"browser-max-page-bytes" help:"bytes one page may receive over the network; past it the page is stopped"`
	// MaxPages bounds the runs (pages) at a time; MaxQueued the runs that
	// wait for one (-1: none), at most QueueWait each. A run beyond them
	// gets a [Busy] error.
	MaxPages  int           `key:"max_pages" flag:"browser-max-pages" help:"pages the browser works on at a time"`
	MaxQueued int           `key:"max_queued" flag:"browser-max-queued" min:"-1" help:"pages that wait for one of them; more are refused with x-browser_busy and retry_after_ms (-1: none wait)"`
	QueueWait time.Duration `key:"queue_wait_ms" flag:"browser-queue-wait" help:"how long a page waits for a free one before it is refused"`
	// PageMemoryMB bounds one renderer process (a page, its same-site
	// frames and workers): V8's heap is limited to half of it, and a
	// renderer whose resident memory, plus what it made the browser's
	// processes hold (Blobs, see memory_linux.go), passes it is killed;
	// its run reports the page as stopped.
	PageMemoryMB int `key:"page_memory_mb" flag:"browser-page-memory-mb" help:"memory of one page's renderer in MiB: V8's heap gets half, a renderer above it is stopped"`
	// MaxConsole, MaxRequests and MaxElements cap what one observation
	// keeps; the observation counts the rest ("first N of M").
	MaxConsole  int `key:"max_console" flag:"browser-max-console" help:"console messages one observation keeps; it counts the rest"`
	MaxRequests int `key:"max_requests" flag:"browser-max-requests" help:"network requests one observation keeps; it counts the rest"`
	MaxElements int `key:"max_elements" flag:"browser-max-elements" help:"interactive elements one observation keeps; it counts the rest"`
	// HealthInterval is how often a running browser is asked whether it
	// still answers; one that does not (or whose process ended) is
	// restarted.
	HealthInterval time.Duration `key:"health_interval_ms" flag:"browser-health-interval" help:"how often the browser is checked; two checks without an answer restart it"`
	// MaxSessions bounds the live sessions of the browser, and
	// MaxSessionsPerIdentity those of one identity (opening one more
	// ends that identity's least recently used idle session). A session
	// idle for SessionIdle ends; MaxSessionTabs bounds its tabs.
	MaxSessions            int           `key:"max_sessions" flag:"browser-max-sessions" help:"live browser sessions on this server; one more open_page is refused with x-browser_busy"`
	MaxSessionsPerIdentity int           `key:"max_sessions_per_identity" flag:"browser-max-sessions-per-identity" help:"live browser sessions of one identity; one more ends its least recently used idle session"`
	MaxSessionTabs         int           `key:"max_session_tabs" flag:"browser-max-session-tabs" help:"tabs of one live browser session"`
	SessionIdle            time.Duration `key:"session_idle_ms" flag:"browser-session-idle" help:"a live browser session without a call for this long ends with its tabs"`
	// UploadDir is the directory whose files [Session.Upload] may
	// give a page's file inputs (names relative to it; nothing outside it,
	// also not through symbolic links). Empty: uploads are off.
	UploadDir string `key:"upload_dir" flag:"browser-upload-dir" help:"directory upload_file may take files from (confined to it; none: uploads off)"`
	// AllowScripts lets [Session.Eval] run a client's script in a
	// session's page. Default false: it is refused with a
	// [ScriptsOff] error.
	AllowScripts bool `key:"allow_scripts" flag:"browser-allow-scripts" help:"let run_script run JavaScript in live pages, each run confirmed by the user"`
	// OnHealth, when set, is called (from its own goroutine, in order)
	// whenever the browser stops working or works again.
	OnHealth func(Health)
	// Logger receives the browser's start, stop and failures. Default:
	// discard.
	Logger *slog.Logger
}

// DefaultConfig is the configuration a zero [Config] stands for: every
// setting at its default.
func DefaultConfig() Config {
	return Config{
		AllowedHosts:           DefaultAllowedHosts,
		MaxLoadTime:            DefaultMaxLoadTime,
		MaxPageBytes:           DefaultMaxPageBytes,
		MaxPages:               DefaultMaxPages,
		MaxQueued:              DefaultMaxQueued,
		QueueWait:              DefaultQueueWait,
		PageMemoryMB:           DefaultPageMemoryMB,
		MaxConsole:             DefaultMaxConsole,
		MaxRequests:            DefaultMaxRequests,
		MaxElements:            DefaultMaxElements,
		HealthInterval:         DefaultHealthInterval,
		MaxSessions:            DefaultMaxSessions,
		MaxSessionsPerIdentity: DefaultMaxSessionsPerIdentity,
		MaxSessionTabs:         DefaultMaxSessionTabs,
		SessionIdle:            DefaultSessionIdle,
	}
}

// WithDefaults is c with each zero setting (a nil AllowedHosts, a number
// or duration of zero or less but a MaxQueued of -1) at its default.
func (c Config) WithDefaults() Config {
	none := c.MaxQueued < 0
	d := DefaultConfig()
	settings.FillZero(&c, &d)
	if none {
		c.MaxQueued = -1
	}
	return c
}

// Validate reports every setting of c that is not valid, each error
// naming its setting (a [settings.Error]-shaped "MaxPages must not be
// negative"): negative numbers and durations (but MaxQueued -1), an
// allowed host that [ParseAllowedHost] refuses, an UploadDir that is not
// an existing directory. A zero Config is valid. [New] does not call it:
// it takes the defaults and logs what it cannot use; a server calls it at
// start to fail loudly.
func (c Config) Validate() error {
	errs := settings.CheckMin(&c)
	for i, h := range c.AllowedHosts {
		_, _, err := ParseAllowedHost(h)
		settings.Check(&errs, err == nil, fmt.Sprintf("AllowedHosts[%d]", i),
			"must be a host name or IP address, optionally with :port, without scheme or path (%v)", err)
	}
	if c.UploadDir != "" {
		st, err := os.Stat(c.UploadDir)
		switch {
		case err != nil:
			settings.Check(&errs, false, "UploadDir", "must be an existing directory (%v)", err)
		case !st.IsDir():
			settings.Check(&errs, false, "UploadDir", "must be an existing directory: %s is not a directory", c.UploadDir)
		}
	}
	return errors.Join(errs...)
}
