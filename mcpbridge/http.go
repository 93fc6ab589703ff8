package mcpbridge

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/internal/peerkey"
	"github.com/manglecp/manglecp/protocol"
)

// protocolVersionHeader is the HTTP header in which an MCP host names the
// protocol version of each request.
const protocolVersionHeader = "Mcp-Protocol-Version"

// versionedHandler serves both MCP generations on one endpoint. A request
// of MCP 2026-07-28 or later (its Mcp-Protocol-Version header) stands
// alone: it goes to a stateless handler, which serves it with a bridge
// session of its own (server/discover, tools/list, tools/call; a
// confirmation's answer comes back in a new request and finds its
// question in the bridge's ledger). Earlier versions get the stateful
// handler of o: initialize, then one bridge session per Mcp-Session-Id.
func (b *Bridge) versionedHandler(o *mcp.StreamableHTTPOptions, stateful http.Handler) http.Handler {
	newServer := b.serverFor
	if stateful == nil {
		stateful = mcp.NewStreamableHTTPHandler(newServer, o)
	}
	so := *o
	so.Stateless = true
	stateless := mcp.NewStreamableHTTPHandler(newServer, &so)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(protocolVersionHeader) >= modernMCP {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// Cache hints of MCP 2026-07-28 (ttlMs, cacheScope).
const (
	// listTTLMs: the tool list and the server's description are fixed for
	// a manifest; a reloaded server's new intents reach a host within
	// this time.
	listTTLMs = 5 * 60 * 1000
)

// cacheable sets the cache hints of the results that carry them: the tool
// list and server/discover may be cached by anyone for listTTLMs (they
// are the same for every host of this bridge and never change as a side
// effect of a call); the manifest resource likewise; the resource list
// (the skills of the last evaluation) and the working state are this
// session's and stale at once.
func cacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch p := req.GetParams().(type) {
	case *mcp.ListToolsParams, *mcp.DiscoverParams:
		c.TTLMs, c.CacheScope = listTTLMs, "public"
	case *mcp.ReadResourceParams:
		if p != nil && p.URI == ManifestURI {
			c.TTLMs, c.CacheScope = listTTLMs, "public"
			return
		}
		c.TTLMs, c.CacheScope = 0, "private"
	case *mcp.ListResourcesParams:
		c.TTLMs, c.CacheScope = 0, "private"
	}
}

// Defaults of [HTTPOptions].
const (
	// DefaultMaxSessions bounds the MCP sessions (Mcp-Session-Id) one
	// bridge keeps over streamable HTTP: about 40 KB each, so 40 MB.
	DefaultMaxSessions = 1024
	// DefaultMaxSessionsPerPeer bounds those of one peer address (IPv6:
	// its /64): one host that leaks sessions does not take the others'.
	DefaultMaxSessionsPerPeer = 64
)

// HTTPOptions configure [Bridge.HTTP].
type HTTPOptions struct {
	// Token, when not empty, is the bearer token every request must
	// present (Authorization: Bearer TOKEN), compared in constant time;
	// a request without it is answered 401 auth_required, one with
	// another token 401 auth_invalid, before any MCP processing.
	Token string
	// SessionTimeout closes a session its host left idle this long (no
	// request, none in flight); 0 means [DefaultSessionTimeout], a
	// negative value never (the session bounds still hold).
	SessionTimeout time.Duration
	// MaxSessions and MaxSessionsPerPeer bound the open sessions (0:
	// [DefaultMaxSessions], [DefaultMaxSessionsPerPeer]). A new session
	// past a bound, once idle sessions are closed, is answered 429
	// rate_limited with Retry-After: when the peer's (or the bridge's)
	// least recently used session times out.
	MaxSessions        int
	MaxSessionsPerPeer int
}

// HTTP serves MCP over streamable HTTP as [Bridge.HTTPHandler] does, with
// the bridge's own authentication (o.Token) and bounded sessions.
func (b *Bridge) HTTP(o HTTPOptions) http.Handler {
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionsPerPeer <= 0 {
		o.MaxSessionsPerPeer = DefaultMaxSessionsPerPeer
	}
	sdk := &mcp.StreamableHTTPOptions{SessionTimeout: o.SessionTimeout}
	g := &sessionGuard{b: b, o: o, sessions: map[string]*guardedSession{}, perPeer: map[string]int{}}
	if o.Token != "" {
		sum := sha256.Sum256([]byte(o.Token))
		g.token = sum[:]
	}
	g.stateful = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return b.serverFor(r) }, sdk)
	g.next = b.versionedHandler(sdk, g.stateful)
	return g
}

// peerKey is the context key of a request's peer (the budget key of its
// confirmation questions, consent.go).
type peerKey struct{}

// peerOf is the key of a request's peer: its address (IPv6: the /64),
// "local" without one.
func peerOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || host == "" {
		return "local"
	}
	return peerkey.Of(host)
}

// serverFor is the MCP server of a new session for r: its confirmation
// questions count against r's peer.
func (b *Bridge) serverFor(r *http.Request) *mcp.Server {
	ss := b.newSession()
	if p, ok := r.Context().Value(peerKey{}).(string); ok {
		ss.host = p
	} else {
		ss.host = peerOf(r)
	}
	return ss.srv
}

// sessionGuard authenticates the bridge's HTTP requests and bounds its
// stateful sessions: it learns a session from the Mcp-Session-Id its
// initialize answer names, counts it against its peer, and closes it
// (a DELETE to the SDK's handler) once idle past the timeout, on the
// bridge's clock.
type sessionGuard struct {
	b        *Bridge
	o        HTTPOptions
	token    []byte // SHA-256 of o.Token; nil: no authentication
	next     http.Handler
	stateful http.Handler

	mu       sync.Mutex
	sessions map[string]*guardedSession
	perPeer  map[string]int
	opening  int // sessions being initialized (admitted, id not seen yet)
	lastReap time.Time
}

type guardedSession struct {
	peer     string
	last     time.Time // end of the latest request
	inflight int
}

func (g *sessionGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.token != nil {
		if perr := g.authenticate(r); perr != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="manglecp-mcp"`)
			writeHTTPError(w, perr)
			return
		}
	}
	peer := peerOf(r)
	r = r.WithContext(context.WithValue(r.Context(), peerKey{}, peer))
	if r.Header.Get(protocolVersionHeader) >= modernMCP {
		g.next.ServeHTTP(w, r) // stateless: nothing outlives the request
		return
	}
	id := r.Header.Get(sessionIDHeader)
	if id == "" {
		if r.Method != http.MethodPost {
			g.next.ServeHTTP(w, r)
			return
		}
		if perr := g.admit(peer); perr != nil {
			writeHTTPError(w, perr)
			return
		}
		cw := &captureID{ResponseWriter: w}
		g.next.ServeHTTP(cw, r)
		g.opened(peer, cw.id)
		return
	}
	if !g.begin(id) {
		g.next.ServeHTTP(w, r) // not a session of ours (any more): the SDK answers 404
		return
	}
	after := keepSession
	if r.Method == http.MethodDelete {
		after = forgetSession // the host ends it
	}
	defer g.end(id, after)
	g.next.ServeHTTP(w, r)
}

// authenticate checks the request's bearer token in constant time.
func (g *sessionGuard) authenticate(r *http.Request) *protocol.Error {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
		return protocol.Errorf(protocol.CodeAuthRequired, "this MCP endpoint requires a bearer token (Authorization: Bearer TOKEN; manglecp mcp --http-token or MANGLECP_MCP_HTTP_TOKEN)")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], g.token) != 1 {
		return protocol.Errorf(protocol.CodeAuthInvalid, "the bearer token is not this MCP endpoint's")
	}
	return nil
}

// admit reserves room for a new session of peer, closing idle sessions
// first; a rate_limited error when a bound is reached.
func (g *sessionGuard) admit(peer string) *protocol.Error {
	now := g.b.now()
	g.reap(now, reapAlways)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perPeer[peer] >= g.o.MaxSessionsPerPeer {
		return protocol.Errorf(protocol.CodeRateLimited, "this address holds %d open MCP sessions, the most one address may; end one (DELETE) or wait until one is idle for %s", g.perPeer[peer], g.o.SessionTimeout).
			WithRetryAfter(g.retryAfter(now, peer))
	}
	if len(g.sessions)+g.opening >= g.o.MaxSessions {
		return protocol.Errorf(protocol.CodeRateLimited, "this bridge holds %d open MCP sessions, its most; retry later", len(g.sessions)+g.opening).
			WithRetryAfter(g.retryAfter(now, ""))
	}
	g.opening++
	g.perPeer[peer]++
	return nil
}

// opened records the session a new-session request opened (id "" when
// it opened none) and releases its reservation.
func (g *sessionGuard) opened(peer, id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.opening--
	if id == "" || g.sessions[id] != nil {
		g.drop(peer)
		return
	}
	g.sessions[id] = &guardedSession{peer: peer, last: g.b.now()}
}

func (g *sessionGuard) drop(peer string) {
	if g.perPeer[peer]--; g.perPeer[peer] <= 0 {
		delete(g.perPeer, peer)
	}
}

// begin marks a request of session id in flight; false for an unknown id.
func (g *sessionGuard) begin(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sessions[id]
	if s == nil {
		return false
	}
	s.inflight++
	return true
}

// afterRequest says what becomes of a session when one of its requests
// ends.
type afterRequest int

const (
	keepSession   afterRequest = iota // it stays, idle from now on unless another request runs
	forgetSession                     // a DELETE: the host ended it
)

// end marks the request done, and then the session as after says.
func (g *sessionGuard) end(id string, after afterRequest) {
	now := g.b.now()
	g.mu.Lock()
	if s := g.sessions[id]; s != nil {
		s.inflight--
		s.last = now
		if after == forgetSession {
			delete(g.sessions, id)
			g.drop(s.peer)
		}
	}
	g.mu.Unlock()
	g.reap(now, reapPaced)
}

// reapPace says how often reap looks for idle sessions.
type reapPace int

const (
	reapAlways reapPace = iota // before a new session is admitted: room is made
	reapPaced                  // after a request: at most once per tenth of the timeout
)

// reap closes the sessions idle past the timeout, as often as pace says.
func (g *sessionGuard) reap(now time.Time, pace reapPace) {
	idle := g.o.SessionTimeout
	if idle < 0 {
		return
	}
	g.mu.Lock()
	if pace == reapPaced && now.Sub(g.lastReap) < idle/10 {
		g.mu.Unlock()
		return
	}
	g.lastReap = now
	var gone []string
	for id, s := range g.sessions {
		if s.inflight == 0 && now.Sub(s.last) >= idle {
			gone = append(gone, id)
			delete(g.sessions, id)
			g.drop(s.peer)
		}
	}
	g.mu.Unlock()
	for _, id := range gone {
		// The SDK closes the session and frees its state.
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", nil)
		req.Header.Set(sessionIDHeader, id)
		g.stateful.ServeHTTP(discard{}, req)
	}
}

// retryAfter is the time until the least recently used idle session (of
// peer, or of anyone) times out, in ms; at least a second.
func (g *sessionGuard) retryAfter(now time.Time, peer string) int64 {
	idle := g.o.SessionTimeout
	if idle < 0 {
		return 60_000
	}
	wait := idle
	for _, s := range g.sessions {
		if (peer == "" || s.peer == peer) && s.inflight == 0 {
			wait = min(wait, idle-now.Sub(s.last))
		}
	}
	return max(wait, time.Second).Milliseconds()
}

// sessionIDHeader names an MCP session over streamable HTTP.
const sessionIDHeader = "Mcp-Session-Id"

// captureID records the session id an answer names.
type captureID struct {
	http.ResponseWriter
	id string
}

func (c *captureID) WriteHeader(code int) {
	c.id = c.Header().Get(sessionIDHeader)
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureID) Write(p []byte) (int, error) {
	if c.id == "" {
		c.id = c.Header().Get(sessionIDHeader)
	}
	return c.ResponseWriter.Write(p)
}

// Flush passes streaming on (server-sent events).
func (c *captureID) Flush() {
	if c.id == "" {
		c.id = c.Header().Get(sessionIDHeader)
	}
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (c *captureID) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}

// writeHTTPError answers a request the bridge refuses itself: the HTTP
// status of the registry, Retry-After when the error has one, and a
// JSON-RPC error whose data is the registry error (MCP hosts show the
// message).
func writeHTTPError(w http.ResponseWriter, e *protocol.Error) {
	if e.RetryAfterMS != nil {
		w.Header().Set("Retry-After", strconv.FormatInt((*e.RetryAfterMS+999)/1000, 10))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Code.HTTPStatus())
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32001, "message": string(e.Code) + ": " + e.Message, "data": e},
	})
}
