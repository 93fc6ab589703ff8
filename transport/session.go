package transport

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"

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

// ManifestNotifier is implemented by handlers whose manifest changes
// (status, limits); sessions push each new manifest to their peer.
type ManifestNotifier interface {
	OnManifestChange(fn func()) (unsubscribe func())
}

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
	// Logger receives transport logs; default: discard.
	Logger *slog.Logger
}

// ServeSession serves a session transport (Spec 02 sections 4.1, 4.3 and
// 6): it sends the manifest first, then reads messages and answers each
// request concurrently, correlated by id (pipelining). A cancel message
// cancels the request it names, which then answers cancelled, unless it
// already finished. When the peer is done (io.EOF) it waits for pending
// answers, writes them and returns nil. It returns when ctx ends too,
// after the running requests stopped.
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
	s := &session{h: h, c: c, o: o, inflight: map[string]context.CancelFunc{}, slots: make(chan struct{}, o.MaxConcurrent),
		queue: make(chan struct{}, o.MaxConcurrent+o.MaxQueued), creds: o.Credentials}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.wg.Wait()
	// Subscribe before the first manifest goes out, so no change is missed;
	// pushes wait until the first manifest was written.
	firstSent := make(chan struct{})
	if n, ok := h.(ManifestNotifier); ok {
		stop := n.OnManifestChange(func() {
			select {
			case <-firstSent:
			case <-ctx.Done():
				return
			}
			m, _ := h.ManifestJSON()
			_ = s.write(ctx, &protocol.Envelope{Type: protocol.TypeManifest, Version: protocol.Version, Payload: m})
		})
		defer stop()
	}
	manifest, _ := h.ManifestJSON()
	err := s.write(ctx, &protocol.Envelope{Type: protocol.TypeManifest, Version: protocol.Version, Payload: manifest})
	close(firstSent)
	if err != nil {
		return err
	}
	for {
		msg, err := c.ReadMessage(ctx)
		if err != nil {
			var perr *protocol.Error
			if errors.As(err, &perr) {
				_ = s.write(ctx, protocol.ErrorEnvelope("", perr))
				continue
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		s.dispatch(ctx, msg)
	}
}

type session struct {
	h Handler
	c Conn
	o SessionOptions

	writeMu sync.Mutex
	mu      sync.Mutex
	// inflight maps the id of each running request to its cancel function.
	inflight map[string]context.CancelFunc
	slots    chan struct{} // requests running
	queue    chan struct{} // requests running or waiting for a slot
	wg       sync.WaitGroup
	creds    *protocol.Credentials // from the options, then from a successful authenticate
}

func (s *session) write(ctx context.Context, env *protocol.Envelope) error {
	raw, err := env.Encode()
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.c.WriteMessage(ctx, raw)
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
	if p.ID != nil {
		id = *p.ID
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
				"id %q is already in use by a request in flight; ids must be unique within a session", id).
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
	rctx, cancel := context.WithCancel(ctx)
	if id != "" {
		s.mu.Lock()
		s.inflight[id] = cancel
		s.mu.Unlock()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { <-s.queue }()
		defer cancel()
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
			// Later requests of this session carry the accepted credentials.
			var a protocol.Authenticate
			if e, perr := protocol.DecodeEnvelope(msg); perr == nil && protocol.DecodePayload(e.Payload, &a) == nil {
				s.mu.Lock()
				s.creds = &protocol.Credentials{Scheme: a.Scheme, Token: a.Token}
				s.mu.Unlock()
			}
		}
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

// finish forgets a request and writes its answer.
func (s *session) finish(ctx context.Context, id string, env *protocol.Envelope) {
	if id != "" {
		s.mu.Lock()
		delete(s.inflight, id)
		s.mu.Unlock()
	}
	if err := s.write(ctx, env); err != nil {
		s.o.Logger.Warn("session write failed", "peer", s.o.Peer, "request_id", id, "error", err.Error())
	}
}
