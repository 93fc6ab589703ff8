package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/ondemand"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Default bounds of an upstream (see [Config]).
const (
	DefaultCallTimeout     = 60 * time.Second
	DefaultConnectTimeout  = 30 * time.Second
	DefaultMaxMessageBytes = 4 << 20
	DefaultMaxTools        = 256
	DefaultMinBackoff      = 500 * time.Millisecond
	DefaultMaxBackoff      = 30 * time.Second
	DefaultMaxSessions     = 16
	DefaultIdleTimeout     = 10 * time.Minute
)

// stableAfter is how long a session must live for its restart count to
// start again from the minimum backoff.
const stableAfter = 30 * time.Second

// namePattern is what an upstream name may be: it prefixes its tools'
// names.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9]{0,15}$`)

// Config configures one upstream MCP server.
type Config struct {
	// Name identifies the upstream (1-16 lower-case letters and digits,
	// starting with a letter); the gateway prefixes its tools with it.
	Name string
	// Command runs the upstream over stdio (program and arguments). Exactly
	// one of Command and URL is set.
	Command []string
	// URL is a streamable-HTTP MCP endpoint.
	URL string
	// Dial, when set instead of Command and URL, returns the transport to
	// an in-process server (mcp.NewInMemoryTransports) and what ends it.
	Dial func(ctx context.Context) (mcp.Transport, func(), error)
	// Env holds KEY=VALUE pairs given to Command. Command gets a clean
	// environment: the few variables a program needs to run (see
	// [BaseEnv]), PassEnv's, and Env's; never the rest of the server's
	// (its secrets: MANGLECP_AUTH_TOKEN, MANGLECP_CONFIRMATION_KEY, ...).
	Env []string
	// PassEnv names variables of the server's environment that Command
	// gets too (a MANGLECP_ variable cannot be passed on: give its value
	// in Env if an upstream needs one).
	PassEnv []string
	// Dir is Command's working directory ("" the server's).
	Dir string
	// Shared declares the upstream stateless: one session (one process
	// of Command, one MCP session at URL) serves every identity. By
	// default each identity (the key [Upstream.Call] takes) gets its own
	// session, started on its first call, at most MaxSessions at once and
	// ended after IdleTimeout unused, so that what one identity's calls
	// leave in the upstream (a signed-in page, a note) is never another's.
	Shared bool
	// MaxSessions bounds the identities' sessions open at once (default
	// [DefaultMaxSessions]); a call of another identity beyond it fails
	// with Busy. IdleTimeout ends a session unused that long (default
	// [DefaultIdleTimeout]). Both are ignored when Shared.
	MaxSessions int
	IdleTimeout time.Duration
	// Lazy starts Command only when a call needs it: the tools are listed
	// at Start, then the process stops until the first call. Otherwise it
	// runs from Start on and is restarted with backoff when it dies.
	Lazy bool
	// CallTimeout bounds one tool call (default [DefaultCallTimeout]);
	// ConnectTimeout the start, initialization and tool listing (default
	// [DefaultConnectTimeout]).
	CallTimeout, ConnectTimeout time.Duration
	// MaxMessageBytes bounds one message from the upstream: a stdio line
	// or an HTTP answer (default [DefaultMaxMessageBytes]). A larger one
	// ends the session with ProtocolMismatch.
	MaxMessageBytes int
	// MaxTools bounds the tools read from the upstream (default
	// [DefaultMaxTools]); more are dropped, with a warning in the log.
	MaxTools int
	// MinBackoff and MaxBackoff bound the wait before a restart, doubled
	// at each failure in a row (defaults [DefaultMinBackoff],
	// [DefaultMaxBackoff]).
	MinBackoff, MaxBackoff time.Duration
	// Logger receives the upstream's stderr and lifecycle (default: none).
	Logger *slog.Logger
	// OnStatus, when set, is called with the upstream's status whenever it
	// changes (from a goroutine of the upstream; it must not block).
	OnStatus func(Status)
}

// Check reports what is wrong with c.
func (c *Config) Check() error {
	if !namePattern.MatchString(c.Name) {
		return fmt.Errorf("upstream name %q: use 1-16 lower-case letters and digits, starting with a letter", Truncate(c.Name, 40))
	}
	set := 0
	for _, ok := range []bool{len(c.Command) > 0, c.URL != "", c.Dial != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("upstream %s: give a command or a URL", c.Name)
	}
	if c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		return fmt.Errorf("upstream %s: the URL must be http:// or https://", c.Name)
	}
	for _, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("upstream %s: environment entry %q is not KEY=VALUE", c.Name, Truncate(kv, 40))
		}
	}
	for _, k := range c.PassEnv {
		if k == "" || strings.ContainsAny(k, "= \x00") {
			return fmt.Errorf("upstream %s: %q is not the name of an environment variable", c.Name, Truncate(k, 40))
		}
		if strings.HasPrefix(strings.ToUpper(k), "MANGLECP_") {
			return fmt.Errorf("upstream %s: %s is the server's own setting and is not passed to upstreams (give a value in env if the upstream needs one)", c.Name, Truncate(k, 40))
		}
	}
	return nil
}

func (c *Config) defaults() {
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.MaxTools <= 0 {
		c.MaxTools = DefaultMaxTools
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(DefaultMaxBackoff, c.MinBackoff)
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Tool is an upstream tool as listed, with the MCP annotations' hints
// resolved by the specification's defaults (readOnlyHint false,
// destructiveHint true, idempotentHint false, openWorldHint true;
// destructive and idempotent mean something only for a tool that is not
// read-only).
type Tool struct {
	Name        string
	Title       string
	Description string
	InputSchema map[string]any
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
	// Annotated: the upstream sent annotations for the tool (the hints
	// above are otherwise the specification's defaults).
	Annotated bool
	// Problem, when set, says why the tool cannot be served (its input
	// schema is over MaxSchemaBytes and was not kept): the gateway leaves
	// it out.
	Problem string
}

// Bounds of what is kept of each listed tool (the rest is dropped as the
// list is read, so that a hostile list costs no more memory than this).
const (
	MaxToolDescription = 2 << 10  // bytes of a description (the gateway shows its first sentence)
	MaxToolTitle       = 200      // bytes of a title
	MaxSchemaBytes     = 64 << 10 // bytes of an input schema, encoded
)

// Status is an upstream's state: "starting", "up", "idle" (a lazy
// upstream not running), "restarting" or "down" (closed, or never
// reached), with the reason when it is not up.
type Status struct {
	Name     string `json:"-"`
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	Tools    int    `json:"tools"`
	Restarts int    `json:"restarts,omitempty"`
	// Sessions is the number of identities' sessions open (per-identity
	// upstreams); Shared says one session serves every identity.
	Sessions int  `json:"sessions,omitempty"`
	Shared   bool `json:"shared,omitempty"`
}

// Upstream is one supervised upstream MCP server. Its methods are safe for
// concurrent use.
type Upstream struct {
	cfg    Config
	client *mcp.Client
	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// shared is the shared session, or the spare started at boot, dialled
	// on demand with backoff (internal/ondemand).
	shared  ondemand.Conn[*session]
	backoff *ondemand.Backoff // after failed dials and sessions that ended

	mu       sync.Mutex
	slots    map[string]*slot // per-identity sessions, by identity
	notified Status           // the status OnStatus last had
	warned   bool             // a tool list change was logged at WARN
	tools    []Tool
	server   string // serverInfo.name
	state    string
	reason   string
	// restartWarned is the last restart failure logged at WARN: the same
	// failure again goes to DEBUG, so a missing binary is not a WARN line
	// every 0.5-30 s.
	restartWarned string
	restarts      int
	closed        bool
}

// slot is one identity's session of a per-identity upstream, dialled on
// demand (internal/ondemand): the callers of one identity share one dial,
// which is cancelled only when every one of them left. Its other fields
// are guarded by Upstream.mu.
type slot struct {
	who      string
	conn     ondemand.Conn[*session] // dials the session: the spare first, else a new one (Upstream.dialSlot)
	sess     *session                // the session, once dialled
	waiting  int                     // callers waiting for the dial: the slot stays while one does
	inflight int
	lastUse  time.Time
	timer    *time.Timer // ends the session after IdleTimeout unused
}

// session is one connection to the upstream (and its process).
type session struct {
	cs       *mcp.ClientSession
	stop     func() // ends the process, if any
	started  time.Time
	done     chan struct{} // closed when the connection ended
	slot     *slot         // the identity it serves (nil: shared or spare); under Upstream.mu
	watching sync.Once     // starts its watch (startWatch)

	mu     sync.Mutex
	reason string // why it ended
}

// setReason records why s ended, unless a reason is already recorded.
func (s *session) setReason(r string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason == "" {
		s.reason = r
	}
}

func (s *session) why() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// New returns the upstream c describes, not yet started.
func New(c Config) (*Upstream, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	c.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	u := &Upstream{cfg: c, ctx: ctx, cancel: cancel, state: "starting", slots: map[string]*slot{},
		backoff: &ondemand.Backoff{Min: c.MinBackoff, Max: c.MaxBackoff}}
	u.shared.Dial = u.dial
	u.shared.Drop = func(s *session) { s.close() }
	u.shared.Backoff = u.backoff
	u.shared.OnDial = u.dialled
	u.client = mcp.NewClient(&mcp.Implementation{Name: "manglecp-gateway", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { u.listChanged() },
	})
	return u, nil
}

// listChanged logs an upstream's notifications/tools/list_changed: the
// first at WARN, the others at DEBUG (an upstream sending thousands must
// not flood the log).
func (u *Upstream) listChanged() {
	u.mu.Lock()
	first := !u.warned
	u.warned = true
	u.mu.Unlock()
	const msg = "upstream tool list changed; the rules keep the tools listed at start (restart the server to serve the new list)"
	if first {
		u.cfg.Logger.Warn(msg, "upstream", u.cfg.Name, "note", "further changes are logged at DEBUG")
		return
	}
	u.cfg.Logger.Debug(msg, "upstream", u.cfg.Name)
}

// redact removes credentials of URLs from text for the status and the
// log (see [RedactURLs]).
func (u *Upstream) redact(s string) string { return RedactURLs(s) }

// Name is the upstream's name.
func (u *Upstream) Name() string { return u.cfg.Name }

// Config returns the upstream's configuration, with defaults filled in.
func (u *Upstream) Config() Config { return u.cfg }

// Start connects to the upstream and lists its tools. A lazy upstream is
// stopped again after listing. When it fails, the upstream is "down" with
// the reason and, unless lazy, retried in the background with backoff.
func (u *Upstream) Start(ctx context.Context) error {
	s, err := u.session(ctx)
	if err != nil {
		if !u.cfg.Lazy {
			u.scheduleRestart()
		}
		return err
	}
	if u.cfg.Lazy {
		u.drop(s, "")
		u.setState("idle", "started on the next call")
	}
	return nil
}

// Tools returns the tools listed at the first successful start, in name
// order (nil before).
func (u *Upstream) Tools() []Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tools
}

// ServerName is the serverInfo.name the upstream gave at initialization.
func (u *Upstream) ServerName() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.server
}

// Status returns the upstream's current status.
func (u *Upstream) Status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.statusLocked()
}

func (u *Upstream) statusLocked() Status {
	return Status{Name: u.cfg.Name, State: u.state, Reason: u.reason, Tools: len(u.tools), Restarts: u.restarts,
		Sessions: len(u.slots), Shared: u.cfg.Shared}
}

func (u *Upstream) setState(state, reason string) {
	u.mu.Lock()
	u.state, u.reason = state, u.redact(reason)
	u.mu.Unlock()
	u.notify()
}

// notify calls OnStatus when the status changed since it last did.
func (u *Upstream) notify() {
	if u.cfg.OnStatus == nil {
		return
	}
	u.mu.Lock()
	st := u.statusLocked()
	changed := st != u.notified
	u.notified = st
	u.mu.Unlock()
	if changed {
		u.cfg.OnStatus(st)
	}
}

// Call calls the upstream tool name with args for the identity who (an
// opaque key: the same key, the same session; "" is one identity too),
// within the call timeout and ctx. Unless the upstream is Shared, each
// identity's calls go to a session of its own. The result is the
// upstream's, unchanged: bounding it for a client is the caller's job
// (its size is bounded by MaxMessageBytes; a larger answer fails with
// AnswerTooLarge and the session goes on). A failure is an *Error, or
// ctx's error when ctx ended first.
func (u *Upstream) Call(ctx context.Context, who, name string, args map[string]any) (*mcp.CallToolResult, error) {
	var (
		s   *session
		err error
	)
	if u.cfg.Shared {
		s, err = u.session(ctx)
	} else {
		s, err = u.acquire(ctx, who)
		if err == nil {
			defer u.release(s)
		}
	}
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, u.cfg.CallTimeout)
	defer cancel()
	res, err := s.cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err == nil {
		if res == nil {
			return nil, newError(u.cfg.Name, ProtocolMismatch, nil, "the upstream answered %s with no result", name)
		}
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		switch werr.Code {
		case codeTooLarge:
			return nil, newError(u.cfg.Name, AnswerTooLarge, err, "the answer of %s was over %d bytes, the gateway's bound; ask for less", name, u.cfg.MaxMessageBytes)
		case codeRejected: // the request did not reach the upstream (HTTP)
			_, msg := classify(err, u.cfg.MaxMessageBytes)
			return nil, newError(u.cfg.Name, Unreachable, err, "%s", msg)
		}
		return nil, newError(u.cfg.Name, ToolFailed, err, "%s", werr.Message)
	}
	if cctx.Err() != nil {
		return nil, newError(u.cfg.Name, Timeout, err, "no answer to %s within %s", name, u.cfg.CallTimeout)
	}
	// The connection failed: if the process is ending, say so.
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-s.done:
		return nil, newError(u.cfg.Name, Unreachable, err, "the upstream stopped during the call: %s", s.why())
	case <-t.C:
	}
	kind, msg := classify(err, u.cfg.MaxMessageBytes)
	msg = u.redact(msg)
	if kind == Unreachable || kind == ProtocolMismatch {
		s.setReason(msg)
		u.ended(s)
		s.close()
	}
	return nil, newError(u.cfg.Name, kind, err, "%s", msg)
}

// acquire returns who's session, starting one when who has none: the
// spare started at boot when there is one (it served nobody), else a new
// one, within MaxSessions. The callers of one identity share one dial
// (slot.conn). Each acquire is paired with a release.
func (u *Upstream) acquire(ctx context.Context, who string) (*session, error) {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, newError(u.cfg.Name, Unreachable, nil, "the upstream is closed")
	}
	sl := u.slots[who]
	if sl != nil && sl.sess != nil {
		sl.inflight++
		if sl.timer != nil {
			sl.timer.Stop()
		}
		s := sl.sess
		u.mu.Unlock()
		return s, nil
	}
	if sl == nil {
		if len(u.slots) >= u.cfg.MaxSessions {
			wait := u.cfg.CallTimeout
			for _, o := range u.slots {
				if o.inflight == 0 && o.sess != nil {
					wait = min(wait, max(time.Until(o.lastUse.Add(u.cfg.IdleTimeout)), time.Second))
				}
			}
			n := len(u.slots)
			u.mu.Unlock()
			e := newError(u.cfg.Name, Busy, nil, "the upstream serves %d identities, each with a session of its own (the server's limit); retry later", n)
			e.RetryAfter = wait
			return nil, e
		}
		if _, spare := u.shared.Current(); !spare {
			if wait := u.backoff.Wait(); wait > 0 {
				reason := u.reason
				u.mu.Unlock()
				return nil, u.restarting(reason, wait)
			}
		}
		sl = u.newSlot(who)
		u.slots[who] = sl
	}
	sl.waiting++
	u.mu.Unlock()

	s, err := sl.conn.Get(ctx)

	u.mu.Lock()
	defer u.mu.Unlock()
	sl.waiting--
	if err != nil {
		if sl.waiting == 0 && sl.sess == nil && u.slots[who] == sl {
			delete(u.slots, who) // no one waits for it any more
		}
		if errors.Is(err, ondemand.ErrClosed) {
			return nil, newError(u.cfg.Name, Unreachable, nil, "the upstream is closed")
		}
		return nil, err
	}
	if u.closed || u.slots[who] != sl || sl.sess != s {
		return nil, newError(u.cfg.Name, Unreachable, nil, "the upstream is closed")
	}
	sl.inflight++
	return s, nil
}

// newSlot is who's slot, with its dialer; under u.mu.
func (u *Upstream) newSlot(who string) *slot {
	sl := &slot{who: who}
	sl.conn.Dial = u.dialSlot
	sl.conn.Drop = func(s *session) { s.close() }
	sl.conn.OnDial = func(s *session, err error) { u.slotDialled(sl, s, err) }
	return sl
}

// dialSlot makes an identity's session: the spare, if there is one, else
// a new session.
func (u *Upstream) dialSlot(ctx context.Context) (*session, error) {
	if spare, ok := u.shared.Take(); ok {
		return spare, nil
	}
	return u.dial(ctx)
}

// slotDialled records the end of sl's dial (before its callers return):
// a failure counts for the backoff and the slot is gone; a session is
// the identity's from now on, and watched, unless the upstream closed or
// every caller left meanwhile.
func (u *Upstream) slotDialled(sl *slot, s *session, err error) {
	if err != nil {
		u.mu.Lock()
		if u.slots[sl.who] == sl {
			delete(u.slots, sl.who)
		}
		u.mu.Unlock()
		u.backoff.Fail()
		u.dialled(nil, err)
		return
	}
	u.mu.Lock()
	if u.closed || u.slots[sl.who] != sl {
		u.mu.Unlock()
		if sl.conn.Forget(s) {
			s.close()
		}
		return
	}
	sl.sess, s.slot = s, sl
	u.mu.Unlock()
	u.startWatch(s)
	u.setState("up", "")
	u.cfg.Logger.Debug("upstream session started for an identity", "upstream", u.cfg.Name, "sessions", u.Status().Sessions)
}

// release ends a call on s: when it was the identity's last call under
// way, the idle timer starts.
func (u *Upstream) release(s *session) {
	u.mu.Lock()
	defer u.mu.Unlock()
	sl := s.slot
	if sl == nil || u.slots[sl.who] != sl || sl.sess != s {
		return
	}
	sl.inflight--
	sl.lastUse = time.Now()
	if sl.inflight > 0 || u.closed {
		return
	}
	if sl.timer == nil {
		sl.timer = time.AfterFunc(u.cfg.IdleTimeout, func() { u.reap(sl) })
	} else {
		sl.timer.Reset(u.cfg.IdleTimeout)
	}
}

// reap ends sl's session after it was unused for IdleTimeout.
func (u *Upstream) reap(sl *slot) {
	u.mu.Lock()
	if u.closed || u.slots[sl.who] != sl || sl.sess == nil || sl.inflight > 0 || time.Since(sl.lastUse) < u.cfg.IdleTimeout {
		u.mu.Unlock()
		return
	}
	delete(u.slots, sl.who)
	s := sl.sess
	left := len(u.slots)
	u.mu.Unlock()
	s.setReason("idle")
	s.close()
	u.cfg.Logger.Debug("upstream session of an identity ended after being idle", "upstream", u.cfg.Name, "idle", u.cfg.IdleTimeout, "sessions", left)
	u.notify()
}

// codeRejected is the MCP SDK's JSON-RPC code of a request its transport
// could not deliver (an HTTP upstream that is gone).
const codeRejected = -32005

// droppedAnswer logs a message over MaxMessageBytes that the guard
// discarded.
func (u *Upstream) droppedAnswer(answered bool) {
	u.cfg.Logger.Warn("upstream message over the bound discarded", "upstream", u.cfg.Name, "max_bytes", u.cfg.MaxMessageBytes, "answered_with_error", answered)
}

// classify turns a connection error into a kind and a message.
func classify(err error, maxBytes int) (Kind, string) {
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout, "no answer in time"
	case strings.Contains(msg, errRedirect.Error()):
		return Unreachable, errRedirect.Error()
	case strings.Contains(msg, "protocol version"):
		return ProtocolMismatch, "the upstream does not speak a supported MCP version"
	case strings.Contains(msg, "too long") || strings.Contains(msg, "exceeds") || strings.Contains(msg, "too large") || errors.Is(err, errTooLarge):
		return ProtocolMismatch, fmt.Sprintf("the upstream sent a message over %d bytes", maxBytes)
	case strings.Contains(msg, "invalid character") || strings.Contains(msg, "unmarshal") || strings.Contains(msg, "decod"):
		return ProtocolMismatch, "the upstream sent a message that is not MCP JSON-RPC"
	}
	return Unreachable, "the upstream connection failed"
}

// session returns the live session, connecting when there is none and
// the backoff allows. Only one dial runs at a time; other callers wait for
// it, and it is cancelled only when every caller waiting for it left
// (internal/ondemand).
func (u *Upstream) session(ctx context.Context) (*session, error) {
	s, err := u.shared.Get(ctx)
	var retry *ondemand.RetryError
	switch {
	case errors.Is(err, ondemand.ErrClosed):
		return nil, newError(u.cfg.Name, Unreachable, nil, "the upstream is closed")
	case errors.As(err, &retry):
		u.mu.Lock()
		reason := u.reason
		u.mu.Unlock()
		return nil, u.restarting(reason, retry.After)
	}
	return s, err
}

// restarting is the error of a call that comes while the backoff runs.
func (u *Upstream) restarting(reason string, wait time.Duration) *Error {
	e := newError(u.cfg.Name, Unreachable, nil, "the upstream is restarting (%s); next attempt in %s", reason, wait.Round(time.Millisecond))
	e.RetryAfter = wait
	return e
}

// dialled records the end of a dial: the upstream is down with the
// dial's error, or up with the shared session (or spare) s, watched from
// now on (an identity's dial records a session in slotDialled).
func (u *Upstream) dialled(s *session, err error) {
	if err != nil {
		var e *Error
		reason := "unreachable"
		if errors.As(err, &e) {
			reason = e.Message
		}
		u.setState("down", reason)
		return
	}
	u.setState("up", "")
	u.startWatch(s)
}

// startWatch watches s from now on, once whoever calls it (the spare is
// the shared dial's, then an identity's).
func (u *Upstream) startWatch(s *session) {
	s.watching.Do(func() {
		u.wg.Add(1)
		go u.watch(s)
	})
}

// watch waits for s to end; unless it was dropped on purpose, the
// upstream is restarting (or idle, when lazy).
func (u *Upstream) watch(s *session) {
	defer u.wg.Done()
	err := s.cs.Wait()
	if err != nil {
		s.setReason("the upstream connection ended: " + Sanitize(RedactURLs(err.Error()), 120))
	}
	s.setReason("the upstream exited")
	close(s.done)
	u.ended(s)
	s.stop()
}

// ended records that s is over: unless it was dropped on purpose (it is
// no longer the current session), the upstream is restarting with
// backoff, or idle when lazy.
func (u *Upstream) ended(s *session) {
	reason := s.why()
	u.mu.Lock()
	current := u.shared.Forget(s)
	if sl := s.slot; sl != nil && u.slots[sl.who] == sl && sl.sess == s {
		current = true
		delete(u.slots, sl.who)
		if sl.timer != nil {
			sl.timer.Stop()
		}
	}
	if current {
		if time.Since(s.started) >= stableAfter {
			u.backoff.Reset()
		}
		u.backoff.Fail()
		u.restarts++
	}
	closed := u.closed
	u.mu.Unlock()
	if !current || closed {
		return
	}
	u.cfg.Logger.Warn("upstream stopped", "upstream", u.cfg.Name, "reason", u.redact(reason))
	if u.cfg.Lazy {
		u.setState("idle", reason+"; started on the next call")
		return
	}
	u.setState("restarting", reason)
	u.scheduleRestart()
}

// scheduleRestart reconnects in the background once the backoff passed.
func (u *Upstream) scheduleRestart() {
	u.mu.Lock()
	wait := u.backoff.Wait()
	closed := u.closed
	u.mu.Unlock()
	if closed {
		return
	}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		t := time.NewTimer(max(wait, 0))
		defer t.Stop()
		select {
		case <-t.C:
		case <-u.ctx.Done():
			return
		}
		if _, err := u.session(u.ctx); err != nil {
			var e *Error
			if errors.As(err, &e) && e.RetryAfter > 0 {
				return // another restart is already waiting
			}
			u.logRestartFailure(err)
			u.scheduleRestart()
			return
		}
		u.mu.Lock()
		u.restartWarned = ""
		u.mu.Unlock()
		u.setState("up", "")
	}()
}

// logRestartFailure logs a failed restart with its whole cause (Cause:
// for the operator, not a client): at WARN the first time it fails so, at
// DEBUG while it keeps failing the same way.
func (u *Upstream) logRestartFailure(err error) {
	msg := u.redact(err.Error())
	u.mu.Lock()
	repeat := u.restartWarned == msg
	u.restartWarned = msg
	u.mu.Unlock()
	level, note := slog.LevelWarn, "the same failure again is logged at DEBUG"
	if repeat {
		level, note = slog.LevelDebug, ""
	}
	u.cfg.Logger.Log(context.Background(), level, "upstream restart failed", "upstream", u.cfg.Name, "error", msg, "cause", Cause(err), "note", note)
}

// drop ends s on purpose (reason "" for a lazy stop).
func (u *Upstream) drop(s *session, reason string) {
	u.shared.Forget(s)
	if reason == "" {
		reason = "stopped"
	}
	s.setReason(reason)
	s.close()
}

func (s *session) close() {
	_ = s.cs.Close()
	s.stop()
}

// dial starts (or connects to) the upstream, initializes the session and,
// the first time, lists the tools.
func (u *Upstream) dial(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.ConnectTimeout)
	defer cancel()
	var (
		t    mcp.Transport
		stop = func() {}
	)
	switch {
	case u.cfg.Dial != nil:
		dt, end, err := u.cfg.Dial(ctx)
		if err != nil {
			return nil, newError(u.cfg.Name, Unreachable, err, "cannot connect to the upstream")
		}
		t, stop = dt, end
		if stop == nil {
			stop = func() {}
		}
	case len(u.cfg.Command) > 0:
		p, err := startProcess(u.cfg, &u.wg)
		if err != nil {
			return nil, newError(u.cfg.Name, Unreachable, err, "cannot start the upstream command %s: %s", u.cfg.Command[0], innermost(err))
		}
		guard := newLineGuard(p.Stdout, u.cfg.MaxMessageBytes, "", u.droppedAnswer)
		// The guard bounds every line; the SDK's own bound is a backstop
		// above it.
		t, stop = &mcp.IOTransport{Reader: readCloser{guard, p.Stdout}, Writer: p.Stdin, MaxLineLength: u.cfg.MaxMessageBytes + 64<<10}, p.Stop
	default:
		t = &mcp.StreamableClientTransport{
			Endpoint: u.cfg.URL,
			HTTPClient: &http.Client{
				Transport:     &boundedTransport{max: u.cfg.MaxMessageBytes, base: http.DefaultTransport},
				CheckRedirect: checkRedirect,
			},
			MaxRetries:           -1,
			DisableStandaloneSSE: true,
			MaxEventSize:         u.cfg.MaxMessageBytes + 64<<10,
		}
	}
	cs, err := u.client.Connect(ctx, t, nil)
	if err != nil {
		stop()
		kind, msg := classify(err, u.cfg.MaxMessageBytes)
		if kind == Timeout {
			msg = fmt.Sprintf("the upstream did not initialize within %s", u.cfg.ConnectTimeout)
		}
		if kind == Unreachable {
			msg = "the upstream did not start or initialize: " + Sanitize(RedactURLs(err.Error()), 150)
		}
		return nil, newError(u.cfg.Name, kind, err, "%s", msg)
	}
	s := &session{cs: cs, stop: stop, started: time.Now(), done: make(chan struct{})}
	u.mu.Lock()
	listed := u.tools != nil
	u.mu.Unlock()
	if !listed {
		tools, err := u.list(ctx, cs)
		if err != nil {
			s.close()
			return nil, err
		}
		name := ""
		if r := cs.InitializeResult(); r != nil && r.ServerInfo != nil {
			name = Truncate(r.ServerInfo.Name, 100)
		}
		u.mu.Lock()
		u.tools, u.server = tools, name
		u.mu.Unlock()
	}
	return s, nil
}

// list reads the tool list, bounded by MaxTools (and as many pages).
func (u *Upstream) list(ctx context.Context, cs *mcp.ClientSession) ([]Tool, error) {
	var out []Tool
	cursor := ""
	for page := 0; ; page++ {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			kind, msg := classify(err, u.cfg.MaxMessageBytes)
			if kind == Timeout {
				msg = fmt.Sprintf("the upstream did not list its tools within %s", u.cfg.ConnectTimeout)
			}
			return nil, newError(u.cfg.Name, kind, err, "tools/list: %s", msg)
		}
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			if len(out) == u.cfg.MaxTools {
				u.cfg.Logger.Warn("upstream lists more tools than the bound; the rest are dropped", "upstream", u.cfg.Name, "max_tools", u.cfg.MaxTools)
				res.Tools = nil
				return sortTools(out), nil
			}
			out = append(out, toTool(t))
		}
		// The SDK keeps each list result in its session's cache: what it
		// keeps must not be the tools as sent (their descriptions and
		// schemas could be megabytes each).
		res.Tools = nil
		if res.NextCursor == "" || page >= u.cfg.MaxTools {
			break
		}
		cursor = res.NextCursor
	}
	if out == nil {
		out = []Tool{}
	}
	return sortTools(out), nil
}

func sortTools(ts []Tool) []Tool {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

func toTool(t *mcp.Tool) Tool {
	out := Tool{Name: strings.Clone(Truncate(t.Name, 256)), Title: strings.Clone(Truncate(t.Title, MaxToolTitle)),
		Description: strings.Clone(Truncate(t.Description, MaxToolDescription)), Destructive: true, OpenWorld: true}
	if m, ok := t.InputSchema.(map[string]any); ok {
		if raw, err := json.Marshal(m); err != nil || len(raw) > MaxSchemaBytes {
			out.Problem = fmt.Sprintf("its input schema is over %d bytes", MaxSchemaBytes)
		} else {
			out.InputSchema = m
		}
	}
	if a := t.Annotations; a != nil {
		out.Annotated = true
		out.ReadOnly, out.Idempotent = a.ReadOnlyHint, a.IdempotentHint
		if a.DestructiveHint != nil {
			out.Destructive = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			out.OpenWorld = *a.OpenWorldHint
		}
		if out.Title == "" {
			out.Title = strings.Clone(Truncate(a.Title, MaxToolTitle))
		}
	}
	if out.ReadOnly {
		out.Destructive, out.Idempotent = false, true
	}
	return out
}

// Close stops the upstream and waits for its goroutines and process.
func (u *Upstream) Close() error {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil
	}
	u.closed = true
	slots := make([]*slot, 0, len(u.slots))
	for _, sl := range u.slots {
		if sl.timer != nil {
			sl.timer.Stop()
		}
		slots = append(slots, sl)
	}
	clear(u.slots)
	u.mu.Unlock()
	u.cancel()
	// A dial under way ends (its callers get "closed") and is waited for.
	var open []*session
	if s, ok := u.shared.Close(); ok {
		open = append(open, s)
	}
	for _, sl := range slots {
		if s, ok := sl.conn.Close(); ok {
			open = append(open, s)
		}
	}
	for _, s := range open {
		s.setReason("closed")
		s.close()
	}
	u.wg.Wait()
	u.setState("down", "closed")
	return nil
}
