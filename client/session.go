package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// cancelTimeout bounds the best-effort send of a cancel message.
const cancelTimeout = 2 * time.Second

// NewSession runs a session (Spec 02 sections 4.1, 4.3 and 6) over conn:
// it waits, at most until ctx ends, for the manifest the server sends
// first, then authenticates when Options.Token is set and the manifest
// requires authentication. Requests are pipelined and correlated by id;
// manifests the server pushes later replace the current one.
//
// The session owns conn from now on: Close closes it, and conn must not be
// read or written by anyone else. ctx bounds the opening only.
func NewSession(ctx context.Context, conn transport.Conn, opts *Options) (*Session, error) {
	return newSession(ctx, conn, opts.withDefaults(), "conn", nil)
}

// sessionBinding is a session transport over a transport.Conn: one reader
// goroutine routes answers and progress to the waiting calls by id.
type sessionBinding struct {
	s    *Session
	conn transport.Conn
	// ctx is the session's lifetime: reads and writes use it, Close ends it.
	ctx    context.Context
	cancel context.CancelFunc
	// wsem serializes writes (a Conn is never written concurrently); it is
	// a channel so that waiting for it can stop when a call's context ends.
	wsem  chan struct{}
	ready chan struct{} // closed when the first manifest arrived
	done  chan struct{} // closed when the reader returned
	// onClose, when set, runs after conn was closed and before the reader
	// is stopped: stdio waits there for the process to exit.
	onClose func(readerDone <-chan struct{}) error

	mu      sync.Mutex
	pending map[string]*pendingCall
	err     error // why the session ended; nil while it runs
	closing bool
	cancels sync.WaitGroup // cancel messages being sent
}

// pendingCall is a request waiting for its answer.
type pendingCall struct {
	ch       chan callResult // buffered: the reader never blocks on it
	progress func(protocol.Progress)
}

type callResult struct {
	env *protocol.Envelope
	err error
}

func newSession(ctx context.Context, conn transport.Conn, opts Options, kind string, onClose func(<-chan struct{}) error) (*Session, error) {
	s := &Session{opts: opts, kind: kind}
	lctx, cancel := context.WithCancel(context.Background())
	b := &sessionBinding{
		s: s, conn: conn, ctx: lctx, cancel: cancel, onClose: onClose,
		wsem: make(chan struct{}, 1), ready: make(chan struct{}), done: make(chan struct{}),
		pending: map[string]*pendingCall{},
	}
	s.rt = b
	go b.read()
	select {
	case <-b.ready:
	case <-b.done:
		select {
		case <-b.ready: // the manifest came, then the end: calls will report it
		default:
			err := b.endErr()
			_ = s.Close()
			return nil, err
		}
	case <-ctx.Done():
		_ = s.Close()
		return nil, ctx.Err()
	}
	if opts.Token != "" && s.Manifest().Auth.Required {
		if err := s.authenticate(ctx); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// endErr is why the session ended.
func (b *sessionBinding) endErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		return ErrClosed
	}
	return b.err
}

// read receives every message: the manifest first, then answers, progress
// and pushed manifests, until the connection ends.
func (b *sessionBinding) read() {
	defer close(b.done)
	first := true
	for {
		raw, err := b.conn.ReadMessage(b.ctx)
		if err != nil {
			if _, framing := protocol.AsError(err); framing && !first {
				// A message the transport could not frame: the call it
				// answers, if its first bytes say which, learns why
				// instead of waiting.
				var big *transport.OversizeError
				if errors.As(err, &big) {
					if id, ok := envelopeID(big.Prefix); ok {
						b.deliver(id, callResult{err: replyTooLarge("answer", b.s.opts.MaxReplyBytes)})
					}
				}
				continue
			}
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("the server ended the session: %w", err)
			}
			b.fail(&TransportError{Op: "receive", Err: err})
			return
		}
		env, perr := protocol.DecodeEnvelope(raw)
		if first {
			if perr != nil {
				b.fail(&TransportError{Op: "receive", Err: fmt.Errorf("the first message is not a MangleCP message: %w", perr)})
				return
			}
			if env.Type != protocol.TypeManifest {
				b.fail(&TransportError{Op: "receive", Err: fmt.Errorf("the first message is %s, want manifest", env.Type)})
				return
			}
			if err := b.s.setManifest(env.Payload); err != nil {
				b.fail(&TransportError{Op: "receive", Err: err})
				return
			}
			first = false
			close(b.ready)
			continue
		}
		if perr != nil {
			if env != nil && env.ID != nil {
				b.deliver(*env.ID, callResult{err: &TransportError{Op: "decode", Err: fmt.Errorf("the answer is not a MangleCP message: %w", perr)}})
			}
			continue
		}
		switch env.Type {
		case protocol.TypeManifest:
			_ = b.s.setManifest(env.Payload) // keep the last good manifest
		case protocol.TypeProgress:
			b.progress(env)
		case protocol.TypeIntentResponse, protocol.TypeInvokeResponse, protocol.TypeError, protocol.TypeAuthenticateResponse:
			// Errors with a null id are not about any one request.
			if env.ID != nil {
				b.deliver(*env.ID, callResult{env: env})
			}
		}
	}
}

// fail ends the session with err (unless it already ended) and fails every
// waiting call.
func (b *sessionBinding) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	err = b.err
	pending := b.pending
	b.pending = map[string]*pendingCall{}
	b.mu.Unlock()
	for _, p := range pending {
		p.ch <- callResult{err: err}
	}
}

// deliver hands a result to the call waiting for id; unknown ids (calls
// that gave up) are dropped.
func (b *sessionBinding) deliver(id string, r callResult) {
	b.mu.Lock()
	p := b.pending[id]
	delete(b.pending, id)
	b.mu.Unlock()
	if p != nil {
		p.ch <- r
	}
}

// progress passes a progress message to its call; progress for unknown ids
// is ignored (Spec 07 section 7.3).
func (b *sessionBinding) progress(env *protocol.Envelope) {
	b.mu.Lock()
	p := b.pending[env.IDString()]
	b.mu.Unlock()
	if p == nil || p.progress == nil {
		return
	}
	var pr protocol.Progress
	if decodeLenient(env.Payload, &pr) == nil {
		p.progress(pr)
	}
}

// remove forgets a waiting call and reports whether it was still waiting.
func (b *sessionBinding) remove(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.pending[id]
	delete(b.pending, id)
	return ok
}

// roundTrip sends a request and waits for its answer. When ctx ends first
// the request is cancelled on the server with a cancel message (Spec 02
// section 6.2) and ctx's error is returned.
func (b *sessionBinding) roundTrip(ctx context.Context, _ protocol.MessageType, id string, raw []byte, progress func(protocol.Progress)) (*protocol.Envelope, int, error) {
	p := &pendingCall{ch: make(chan callResult, 1), progress: progress}
	b.mu.Lock()
	if b.err != nil {
		err := b.err
		b.mu.Unlock()
		return nil, 0, err
	}
	b.pending[id] = p
	b.mu.Unlock()
	if err := b.send(ctx, raw); err != nil {
		b.remove(id)
		if ctx.Err() != nil {
			b.sendCancel(id) // the request may have gone out
			return nil, 0, ctx.Err()
		}
		b.mu.Lock()
		ended := b.err
		b.mu.Unlock()
		if ended != nil {
			return nil, 0, ended
		}
		return nil, 0, &TransportError{Op: "send", Err: err}
	}
	select {
	case r := <-p.ch:
		return r.env, 0, r.err
	case <-ctx.Done():
		if b.remove(id) {
			b.sendCancel(id)
		}
		return nil, 0, ctx.Err()
	}
}

// send writes one message, giving up when ctx ends. A write already under
// way finishes in the background.
func (b *sessionBinding) send(ctx context.Context, raw []byte) error {
	select {
	case b.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.done:
		return b.endErr()
	}
	errc := make(chan error, 1)
	go func() {
		defer func() { <-b.wsem }()
		errc <- b.conn.WriteMessage(b.ctx, raw)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendCancel sends a cancel message for id in the background, best effort
// and bounded in time.
func (b *sessionBinding) sendCancel(id string) {
	b.mu.Lock()
	if b.closing || b.err != nil {
		b.mu.Unlock()
		return
	}
	b.cancels.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.cancels.Done()
		env, err := protocol.NewEnvelope(protocol.TypeCancel, "", protocol.Cancel{RequestID: id})
		if err != nil {
			return
		}
		raw, err := env.Encode()
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(b.ctx, cancelTimeout)
		defer cancel()
		_ = b.send(ctx, raw)
	}()
}

// refresh has nothing to do: the server pushes new manifests.
func (b *sessionBinding) refresh(context.Context) error { return nil }

// close fails the waiting calls, closes the connection (a half-close on
// stdio and in-memory pairs), lets onClose wait for a subprocess, then
// stops the reader.
func (b *sessionBinding) close() error {
	b.mu.Lock()
	b.closing = true
	if b.err == nil {
		b.err = ErrClosed
	}
	pending := b.pending
	b.pending = map[string]*pendingCall{}
	b.mu.Unlock()
	for _, p := range pending {
		p.ch <- callResult{err: ErrClosed}
	}
	err := b.conn.Close()
	if b.onClose != nil {
		if werr := b.onClose(b.done); werr != nil {
			err = werr
		}
	}
	b.cancel()
	<-b.done
	b.cancels.Wait()
	return err
}

// envelopeID reads the id of an envelope from its first bytes (the rest
// cut off): the "id" member's string value when it comes before the cut,
// at the top level of the object.
func envelopeID(prefix []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", false
		}
		if key == "id" {
			tok, err := dec.Token()
			id, ok := tok.(string)
			return id, err == nil && ok
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}
