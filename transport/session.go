package transport

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// Conn is one session's message framing: WebSocket text frames, stdio
// lines or an in-memory pipe.
//
// ReadMessage returns the next message, io.EOF when the peer is done, or a
// *protocol.Error for a message that could not be framed (too large); the
// session answers that error and reads on. WriteMessage is never called
// concurrently. Close may be called more than once.
type Conn interface {
	ReadMessage(ctx context.Context) ([]byte, error)
	WriteMessage(ctx context.Context, msg []byte) error
	Close() error
}

// messageLimiter is implemented by Conns that can hold incoming messages
// to a smaller size until the session authenticated. n <= 0 lifts the
// limit; a message beyond it is reported as auth_required and ends the
// session.
type messageLimiter interface {
	SetPreAuthLimit(n int64)
}

// goingAwayCloser is implemented by Conns that can tell the peer the
// server is going away (WebSocket close status 1001) when draining.
type goingAwayCloser interface {
	CloseGoingAway() error
}

// errPeerGone is returned by a Conn's ReadMessage when the peer closed the
// connection for good (a WebSocket close): unlike io.EOF on stdio (a
// half-close), nobody is left to read answers, so queued work is dropped.
var errPeerGone = errors.New("the peer closed the connection")

// SessionOptions configure [ServeSession].
type SessionOptions struct {
	// MaxConcurrent bounds the requests of one session processed at once;
	// default 16. MaxQueued more may wait for a slot (default 4 times
	// MaxConcurrent); beyond that a request is refused with rate_limited.
	// Reading never blocks, so a cancel is always seen.
	MaxConcurrent int
	MaxQueued     int
	// Credentials are the session's credentials (stdio: a flag or the
	// environment; WebSocket: the upgrade request's headers).
	Credentials *protocol.Credentials
	// Peer identifies the session in logs and rate limits.
	Peer string
	// WriteTimeout bounds the writing of one message (default
	// DefaultWriteTimeout). A write that times out or fails ends the
	// session: the peer is gone or does not read, so its queued and running
	// requests are cancelled and their bytes given back.
	WriteTimeout time.Duration
	// MaxPendingBytes bounds the bytes the session holds: messages read
	// and not yet answered plus answers not yet written (default
	// DefaultSessionPendingBytes). A message that would exceed it is
	// refused with rate_limited.
	MaxPendingBytes int64
	// PreAuthMessageBytes is the largest message read before the session
	// authenticated, when the handler requires credentials (default
	// DefaultPreAuthMessageBytes); it applies to Conns that support it
	// (WebSocket).
	PreAuthMessageBytes int64
	// Budget, when set, is the server-wide bound the session's pending
	// bytes also count against.
	Budget *Budget
	// Drain, when set, ends the session gracefully once draining starts:
	// the session pushes the handler's manifest, answers the requests the
	// peer sent before it could know (on WebSocket a ping tells when they
	// are in; then it waits for a quiet moment, at most 5 s after draining
	// started), and closes once its admitted requests are answered.
	Drain *Drain
	// Logger receives transport logs; default: discard.
	Logger *slog.Logger
}

// ServeSession serves a session transport (Spec 02 sections 4.1, 4.3 and
// 6): it sends the manifest first, then reads messages and answers each
// request concurrently, correlated by id (pipelining). A cancel message
// cancels the request it names, which then answers cancelled, unless it
// already finished. When the peer is done (io.EOF, a half-close) it waits
// for pending answers, writes them and returns nil. When the peer is gone
// (a WebSocket close, a read error) or does not read (a write failed or
// timed out), the running and queued requests are cancelled and dropped.
// It returns when ctx ends too, after the running requests stopped.
func ServeSession(ctx context.Context, h Handler, c Conn, opts *SessionOptions) error {
	var o SessionOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 16
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = 4 * o.MaxConcurrent
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = DefaultSessionPendingBytes
	}
	if o.PreAuthMessageBytes <= 0 {
		o.PreAuthMessageBytes = DefaultPreAuthMessageBytes
	}
	o.Drain.enter()
	defer o.Drain.leave()
	s := &session{h: h, c: c, o: o, inflight: map[string]context.CancelFunc{}, slots: make(chan struct{}, o.MaxConcurrent),
		queue: make(chan struct{}, o.MaxConcurrent+o.MaxQueued), creds: o.Credentials, idle: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	defer cancel()
	defer s.wg.Wait() // runs before cancel: at EOF, pending answers are still written
	s.limitBeforeAuth(ctx)
	// Subscribe before the first manifest goes out, so no change is missed;
	// pushes wait until the first manifest was written.
	// Pushes take turns, each reading the manifest when its turn comes, so
	// the last one written is the current manifest.
	firstSent := make(chan struct{})
	var pushMu sync.Mutex
	stop := h.OnManifestChange(func() {
		select {
		case <-firstSent:
		case <-ctx.Done():
			return
		}
		pushMu.Lock()
		defer pushMu.Unlock()
		m, _ := h.ManifestJSON()
		_ = s.write(ctx, &protocol.Envelope{Type: protocol.TypeManifest, Version: protocol.Version, Payload: m})
	})
	defer stop()
	manifest, _ := h.ManifestJSON()
	err := s.write(ctx, &protocol.Envelope{Type: protocol.TypeManifest, Version: protocol.Version, Payload: manifest})
	close(firstSent)
	if err != nil {
		return err
	}
	if o.Drain != nil {
		go s.closeWhenDrained(ctx)
	}
	// Reading runs in its own goroutine so that the session ends as soon as
	// a write fails, even while a read is blocked (a stdio read ignores the
	// context; it ends when its reader does).
	reads := make(chan readResult)
	stopReading := make(chan struct{})
	defer close(stopReading)
	go func() {
		for {
			msg, err := c.ReadMessage(ctx)
			s.lastRead.Store(time.Now().UnixNano())
			select {
			case reads <- readResult{msg, err}:
			case <-stopReading:
				return
			}
			var perr *protocol.Error
			if err != nil && !errors.As(err, &perr) {
				return
			}
		}
	}()
	for {
		var r readResult
		select {
		case r = <-reads:
		case <-ctx.Done():
			return s.writeErr()
		}
		if r.err != nil {
			var perr *protocol.Error
			if errors.As(r.err, &perr) {
				_ = s.write(ctx, protocol.ErrorEnvelope("", perr))
				continue
			}
			if errors.Is(r.err, io.EOF) {
				return nil // a half-close: answer what was asked
			}
			ended := ctx.Err() != nil
			cancel() // nobody is left to read answers: drop the work
			if errors.Is(r.err, errPeerGone) || ended {
				return s.writeErr()
			}
			return r.err
		}
		s.dispatch(ctx, r.msg)
	}
}

type readResult struct {
	msg []byte
	err error
}

type session struct {
	h      Handler
	c      Conn
	o      SessionOptions
	cancel context.CancelFunc

	writeMu sync.Mutex
	mu      sync.Mutex
	// inflight maps the id of each running request to its cancel function.
	inflight map[string]context.CancelFunc
	slots    chan struct{} // requests running
	queue    chan struct{} // requests running or waiting for a slot
	wg       sync.WaitGroup
	creds    *protocol.Credentials // from the options, then from a successful authenticate
	pending  int64                 // bytes held: messages not answered, answers not written
	active   int                   // requests admitted and not yet answered
	wErr     error                 // the write failure that ended the session
	idle     chan struct{}         // signalled when active drops to zero
	lastRead atomic.Int64          // when the last message was read, in Unix nanoseconds
}

// limitBeforeAuth holds messages to PreAuthMessageBytes while the session
// has no accepted credentials and the handler requires them.
func (s *session) limitBeforeAuth(ctx context.Context) {
	l, ok := s.c.(messageLimiter)
	if !ok || !s.h.AuthRequired() {
		return
	}
	if s.creds != nil {
		if _, perr := s.h.Authenticate(ctx, s.creds, s.o.Peer); perr == nil {
			return
		}
	}
	l.SetPreAuthLimit(s.o.PreAuthMessageBytes)
}

// hold counts n more pending bytes if the session and the server-wide
// budget allow it (force: always, for answers already computed).
func (s *session) hold(n int64, force bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if force {
		s.o.Budget.take(n)
	} else if s.pending+n > s.o.MaxPendingBytes || !s.o.Budget.TryTake(n) {
		return false
	}
	s.pending += n
	return true
}

func (s *session) release(n int64) {
	s.mu.Lock()
	s.pending -= n
	s.mu.Unlock()
	s.o.Budget.Give(n)
}

// write sends one envelope within WriteTimeout. A failed write means the
// peer is gone or does not read: the session ends and its work is dropped.
func (s *session) write(ctx context.Context, env *protocol.Envelope) error {
	raw, err := env.Encode()
	if err != nil {
		return err
	}
	n := int64(len(raw))
	s.hold(n, true)
	defer s.release(n)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	wctx, cancel := context.WithTimeout(ctx, s.o.WriteTimeout)
	defer cancel()
	if err := s.c.WriteMessage(wctx, raw); err != nil {
		s.o.Logger.Warn("session write failed; closing the session and dropping its work", "peer", s.o.Peer, "error", err.Error())
		s.mu.Lock()
		if s.wErr == nil && ctx.Err() == nil {
			s.wErr = err
		}
		s.mu.Unlock()
		s.cancel()
		_ = s.c.Close()
		return err
	}
	return nil
}

// writeErr is the write failure that ended the session, if any.
func (s *session) writeErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wErr
}

// How a draining session makes sure every request its peer sent before
// the peer learned of the drain is answered (the handler answers
// server_not_ready), before it closes: the peer learns from the manifest
// the session pushes when draining starts; a ping then returns after every
// frame the peer sent before reading that manifest (frames arrive in
// order). The pong is awaited at most drainBarrierWait. Then the session
// closes once its requests are answered and no message arrived for
// drainQuiet (a peer that read the manifest but had a request on its way),
// but waits for quiet at most drainMaxLinger after draining started: a
// peer that keeps sending cannot hold the session open.
const (
	drainBarrierWait = 2 * time.Second
	drainQuiet       = 150 * time.Millisecond
	drainMaxLinger   = 5 * time.Second
)

// pinger is implemented by Conns that can ping the peer and wait for its
// answer (WebSocket).
type pinger interface {
	Ping(ctx context.Context) error
}

// closeWhenDrained waits for draining to start, tells the peer (the
// handler's manifest, which says draining), waits until the requests the
// peer sent before it knew are read and answered, then closes the
// connection, telling the peer the server is going away.
func (s *session) closeWhenDrained(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-s.o.Drain.Started():
	}
	linger := time.Now().Add(drainMaxLinger)
	manifest, _ := s.h.ManifestJSON()
	if s.write(ctx, &protocol.Envelope{Type: protocol.TypeManifest, Version: protocol.Version, Payload: manifest}) != nil {
		return // the session ended
	}
	if p, ok := s.c.(pinger); ok {
		pctx, cancel := context.WithTimeout(ctx, drainBarrierWait)
		_ = p.Ping(pctx) // no pong in time: the peer is slow or gone; close anyway
		cancel()
	}
	for {
		s.mu.Lock()
		n := s.active
		s.mu.Unlock()
		if n > 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.idle:
			}
			continue
		}
		if wait := time.Until(time.Unix(0, s.lastRead.Load()).Add(drainQuiet)); wait > 0 && time.Now().Before(linger) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(wait, time.Until(linger))):
			}
			continue
		}
		s.writeMu.Lock() // after the last answer was written
		s.mu.Lock()
		n = s.active
		s.mu.Unlock()
		if n > 0 { // a request admitted meanwhile: answer it first
			s.writeMu.Unlock()
			continue
		}
		if g, ok := s.c.(goingAwayCloser); ok {
			_ = g.CloseGoingAway()
		} else {
			_ = s.c.Close()
		}
		s.writeMu.Unlock()
		s.cancel()
		return
	}
}

// peek reads the type, id and cancel target of a message without judging
// it; the handler does the strict decoding.
func peek(msg []byte) (typ protocol.MessageType, id string, target string) {
	var p struct {
		Type    protocol.MessageType `json:"type"`
		ID      *string              `json:"id"`
		Payload struct {
			RequestID string `json:"request_id"`
		} `json:"payload"`
	}
	if json.Unmarshal(msg, &p) != nil {
		return "", "", ""
	}
	if p.ID != nil && protocol.CheckID("id", *p.ID) == nil {
		id = *p.ID // a longer id is refused by the handler, uncorrelated
	}
	return p.Type, id, p.Payload.RequestID
}

// dispatch answers one message: cancel is handled here, everything else
// runs concurrently through the handler.
func (s *session) dispatch(ctx context.Context, msg []byte) {
	typ, id, target := peek(msg)
	if typ == protocol.TypeCancel {
		if env, perr := protocol.DecodeEnvelope(msg); perr != nil {
			_ = s.write(ctx, protocol.ErrorEnvelope(env.IDString(), perr))
			return
		} else if perr := protocol.CheckID("request_id", target); perr != nil {
			_ = s.write(ctx, protocol.ErrorEnvelope(env.IDString(), perr))
			return
		}
		s.mu.Lock()
		cancel := s.inflight[target]
		s.mu.Unlock()
		if cancel != nil {
			cancel() // the request answers cancelled (or its result, if it was done)
		}
		return
	}
	if id != "" {
		s.mu.Lock()
		_, busy := s.inflight[id]
		s.mu.Unlock()
		if busy {
			_ = s.write(ctx, protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeMalformedMessage,
				"id %s is already in use by a request in flight; ids must be unique within a session", protocol.Quote(id)).
				WithDetails(&protocol.ErrorDetails{Field: "id"})))
			return
		}
	}
	// Admission never blocks the read loop, so cancel messages are always
	// read: a request waits in a bounded queue for one of MaxConcurrent
	// slots, and beyond the queue it is refused at once.
	select {
	case s.queue <- struct{}{}:
	default:
		_ = s.write(ctx, protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeRateLimited,
			"this session already has %d requests running or waiting", cap(s.queue)).WithRetryAfter(100)))
		return
	}
	size := int64(len(msg))
	if !s.hold(size, false) {
		<-s.queue
		_ = s.write(ctx, protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeRateLimited,
			"this session (or the server) holds too many unanswered bytes; wait for answers before sending more").WithRetryAfter(100)))
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	if id != "" {
		s.inflight[id] = cancel
	}
	s.active++
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.queue }()
		defer cancel()
		held := size
		defer func() { s.release(held) }()
		if !s.acquire(rctx) { // cancelled (or the session ended) while waiting
			s.finish(ctx, id, protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeCancelled, "the request was cancelled before it started")))
			return
		}
		defer func() { <-s.slots }()
		s.mu.Lock()
		creds := s.creds
		s.mu.Unlock()
		in := &protocol.Inbound{Data: msg, Credentials: creds, Peer: s.o.Peer}
		if typ == protocol.TypeInvokeRequest {
			in.Progress = func(p protocol.Progress) {
				if env, err := protocol.NewEnvelope(protocol.TypeProgress, id, p); err == nil {
					_ = s.write(ctx, env)
				}
			}
		}
		env := s.h.Handle(rctx, in)
		if typ == protocol.TypeAuthenticate && env.Type == protocol.TypeAuthenticateResponse {
			// Later requests of this session carry the accepted credentials,
			// and may be as large as the server allows.
			var a protocol.Authenticate
			if e, perr := protocol.DecodeEnvelope(msg); perr == nil && protocol.DecodePayload(e.Payload, &a) == nil {
				s.mu.Lock()
				s.creds = &protocol.Credentials{Scheme: a.Scheme, Token: a.Token}
				s.mu.Unlock()
				if l, ok := s.c.(messageLimiter); ok {
					l.SetPreAuthLimit(0)
				}
			}
		}
		msg, in = nil, nil // the answer replaces the message in memory
		s.release(held)
		held = 0
		s.finish(ctx, id, env)
	}()
}

// acquire takes a slot, waiting while all are busy; it reports false when
// ctx ends first. A free slot is always taken, so a request that could
// run is handed to the handler, which decides how to honour a cancel.
func (s *session) acquire(ctx context.Context) bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
	}
	select {
	case s.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// finish forgets a request and writes its answer; then the request no
// longer counts as active.
func (s *session) finish(ctx context.Context, id string, env *protocol.Envelope) {
	if id != "" {
		s.mu.Lock()
		delete(s.inflight, id)
		s.mu.Unlock()
	}
	if err := s.write(ctx, env); err != nil {
		s.o.Logger.Warn("session answer not delivered", "peer", s.o.Peer, "request_id", id, "error", err.Error())
	}
	s.mu.Lock()
	s.active--
	if s.active == 0 {
		select {
		case s.idle <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}
