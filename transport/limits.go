package transport

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/peerkey"
)

// Defaults of the transport limits (issue 9: bounded memory per peer).
const (
	// DefaultWriteTimeout bounds the writing of one answer (an HTTP
	// response, a WebSocket frame). A peer that does not read for this long
	// is gone: its connection is closed and its queued work dropped.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultPreAuthMessageBytes is the largest message a session reads
	// before it authenticated (when the server requires credentials): room
	// for an authenticate message with a long token, nothing more.
	DefaultPreAuthMessageBytes = 16 << 10
	// DefaultSessionPendingBytes bounds the bytes one session holds: the
	// messages it read and has not answered, and the answers not yet
	// written. Beyond it new messages are refused with rate_limited.
	DefaultSessionPendingBytes = 32 << 20
	// DefaultBudgetBytes is the default server-wide bound of the same bytes
	// over every session and HTTP request body (see [Budget]).
	DefaultBudgetBytes = 256 << 20
	// DefaultMaxConnsPerIP is the default per-IP connection limit of
	// [LimitListener]. It leaves room for a single local client that opens
	// many connections (a benchmark at 64 connections plus the ones still
	// closing from its warm-up): memory per connection is bounded by the
	// byte budgets, so the limit only has to stop a flood of sockets.
	DefaultMaxConnsPerIP = 256
)

// Budget is a server-wide bound on the bytes that the transports hold on
// behalf of peers: request bodies being handled, session messages waiting
// or running, answers waiting to be written. A transport takes bytes
// before it holds them and refuses the work (rate_limited) when the budget
// is spent; so one greedy peer cannot exhaust memory for everyone. It is
// safe for concurrent use; a nil *Budget is unlimited.
type Budget struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// TryTake takes n bytes if they are free and reports whether it did.
func (b *Budget) TryTake(n int64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// take takes n bytes even beyond the limit (an answer that is already
// computed must be accounted for, but cannot be refused).
func (b *Budget) take(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
}

// Give returns n bytes taken before.
func (b *Budget) Give(n int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// Used reports the bytes taken now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Drain coordinates a graceful stop of the transports (Spec 04 section
// 6.2): after [Drain.Start], HTTP answers carry "Connection: close" so
// keep-alive connections end, and every session finishes the requests it
// admitted, writes their answers and then closes (WebSocket: a close frame
// with status 1001, going away). [Drain.Wait] returns when every session
// ended. The server itself refuses new requests (server_not_ready) once it
// drains; Drain only ends connections. The zero value is not usable; use
// [NewDrain].
type Drain struct {
	once     sync.Once
	started  chan struct{}
	mu       sync.Mutex
	sessions int
	idle     chan struct{} // closed when sessions drops to zero after Start
}

// NewDrain returns a drain that has not started.
func NewDrain() *Drain { return &Drain{started: make(chan struct{})} }

// Start begins draining. It may be called more than once.
func (d *Drain) Start() { d.once.Do(func() { close(d.started) }) }

// Started is closed once draining began.
func (d *Drain) Started() <-chan struct{} {
	if d == nil {
		return nil
	}
	return d.started
}

func (d *Drain) draining() bool {
	if d == nil {
		return false
	}
	select {
	case <-d.started:
		return true
	default:
		return false
	}
}

// enter counts a session; leave uncounts it.
func (d *Drain) enter() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.sessions++
	d.mu.Unlock()
}

func (d *Drain) leave() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.sessions--
	if d.sessions == 0 && d.idle != nil {
		close(d.idle)
		d.idle = nil
	}
	d.mu.Unlock()
}

// Sessions reports the sessions open now.
func (d *Drain) Sessions() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sessions
}

// Wait blocks until no session is open, or ctx ends.
func (d *Drain) Wait(ctx context.Context) error {
	d.mu.Lock()
	if d.sessions == 0 {
		d.mu.Unlock()
		return nil
	}
	if d.idle == nil {
		d.idle = make(chan struct{})
	}
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LimitListener wraps ln so that one remote IP holds at most perIP
// connections at once; a connection beyond that is closed as soon as it is
// accepted (perIP <= 0 means DefaultMaxConnsPerIP). It bounds what one
// peer can hold open: sessions, slow bodies, unread answers.
func LimitListener(ln net.Listener, perIP int) net.Listener {
	return LimitListenerExempting(ln, perIP, nil)
}

// LimitListenerExempting is [LimitListener] that does not count
// connections from the exempt prefixes: the trusted reverse proxies
// ([HTTPOptions.TrustedProxies]), whose connections carry every client
// behind them, so a per-IP limit on them would be one limit for everyone.
// The proxy bounds its own connections; the byte budgets still bound what
// they hold.
func LimitListenerExempting(ln net.Listener, perIP int, exempt []netip.Prefix) net.Listener {
	if perIP <= 0 {
		perIP = DefaultMaxConnsPerIP
	}
	return &limitListener{Listener: ln, perIP: perIP, exempt: exempt, open: map[string]int{}}
}

type limitListener struct {
	net.Listener
	perIP  int
	exempt []netip.Prefix
	mu     sync.Mutex
	open   map[string]int
}

// exempted reports whether a's connections go uncounted.
func (l *limitListener) exempted(a net.Addr) bool {
	if len(l.exempt) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap().WithZone("")
	for _, p := range l.exempt {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Accept returns the next connection whose IP is under its limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.exempted(c.RemoteAddr()) {
			return c, nil
		}
		ip := remoteIP(c.RemoteAddr())
		l.mu.Lock()
		if l.open[ip] >= l.perIP {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *limitListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// remoteIP is the key a connection's limit is counted under:
// peerkey.Addr, its IPv4 address or its IPv6 /64 (one host commonly
// holds a whole /64, so single IPv6 addresses would let it open perIP
// connections from each of them).
func remoteIP(a net.Addr) string { return peerkey.Addr(a) }

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot, once.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
