package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// Options configure a [Session]. A nil *Options means all defaults; the
// dial functions copy the options, so changing them later has no effect.
type Options struct {
	// Token is the caller's credential (Spec 08 section 3). Over HTTP it is
	// sent as "Authorization: Bearer" with every request; over WebSocket in
	// the upgrade request's headers; to a stdio subprocess as the
	// environment variable MANGLECP_AUTH_TOKEN. On session transports whose
	// manifest requires authentication the session also sends an
	// authenticate message with it when it opens.
	Token string
	// Header holds extra HTTP headers for every HTTP request and the
	// WebSocket upgrade (for example User-Agent).
	Header http.Header
	// HTTPClient makes HTTP requests and WebSocket upgrades; default
	// http.DefaultClient.
	HTTPClient *http.Client

	// MaxAttempts is how many times a call may be sent in total when the
	// server answers a retryable error (server_not_ready, rate_limited).
	// 0 means 5, the most Spec 09 section 7.3 allows; larger values are
	// capped at 5; 1 turns retries off.
	MaxAttempts int
	// RetryBaseDelay is the first backoff (default 100 ms); it doubles with
	// each failed attempt up to RetryMaxDelay (default 5 s). A wait is never
	// shorter than the server's retry_after_ms, and gets up to 25% random
	// jitter on top.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// Sleep waits d between attempts and must return ctx's error as soon as
	// ctx ends. Default: a timer. Tests replace it to avoid real waits.
	Sleep func(ctx context.Context, d time.Duration) error

	// SkipFactValidation sends intent requests without checking their facts
	// against the manifest's facts_profile first.
	SkipFactValidation bool

	// Progress receives the progress messages of every call on session
	// transports (Spec 07 section 7), unless the call has its own
	// ([WithProgress]). It is called from the session's reader, in order,
	// and always before the call returns; it must not block for long.
	Progress func(protocol.Progress)
	// OnManifest is called with every manifest that replaces the current
	// one: pushed by the server on session transports (called from the
	// session's reader), or fetched again over HTTP (called from the call
	// that fetched it). It must not block for long and must not modify the
	// manifest.
	OnManifest func(*protocol.Manifest)

	// Stderr receives a stdio server's standard error when the command has
	// none set. Default: only the last few KiB are kept, to explain a
	// server that exits before sending its manifest.
	Stderr io.Writer
	// CloseTimeout bounds how long Close waits for a stdio server to exit
	// after its stdin was closed before killing it; default 5 s.
	CloseTimeout time.Duration
	// MaxReplyBytes bounds one message read from the server: the manifest,
	// an answer, a progress message; default (0) 256 MiB. Over HTTP the
	// client reads at most MaxReplyBytes+1 bytes of a body and a longer one
	// fails with message_too_large (a local error); on WebSocket and stdio
	// it is the transport's read limit.
	MaxReplyBytes int64
}

// The retry limits of Spec 09 section 7.3 and the defaults of [Options].
const (
	// MaxAttempts is the most times a call is ever sent.
	MaxAttempts = 5

	defaultRetryBase    = 100 * time.Millisecond
	defaultRetryMax     = 5 * time.Second
	defaultCloseTimeout = 5 * time.Second
	// maxReply bounds one reply read from a server unless
	// Options.MaxReplyBytes says otherwise.
	maxReply = 256 << 20
)

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	out.Header = out.Header.Clone()
	if out.HTTPClient == nil {
		out.HTTPClient = http.DefaultClient
	}
	if out.MaxAttempts <= 0 || out.MaxAttempts > MaxAttempts {
		out.MaxAttempts = MaxAttempts
	}
	if out.RetryBaseDelay <= 0 {
		out.RetryBaseDelay = defaultRetryBase
	}
	if out.RetryMaxDelay <= 0 {
		out.RetryMaxDelay = defaultRetryMax
	}
	if out.RetryMaxDelay < out.RetryBaseDelay {
		out.RetryMaxDelay = out.RetryBaseDelay
	}
	if out.Sleep == nil {
		out.Sleep = sleep
	}
	if out.CloseTimeout <= 0 {
		out.CloseTimeout = defaultCloseTimeout
	}
	if out.MaxReplyBytes <= 0 {
		out.MaxReplyBytes = maxReply
	}
	return out
}

// httpHeader is the header of every HTTP request and WebSocket upgrade:
// the extra headers and the bearer token.
func (o *Options) httpHeader() http.Header {
	h := o.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if o.Token != "" {
		h.Set("Authorization", "Bearer "+o.Token)
	}
	return h
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// roundTripper is one transport binding as a session uses it.
type roundTripper interface {
	// roundTrip sends one request (raw, with id) and returns the final
	// answer and, over HTTP, its status (0 otherwise). progress receives
	// the request's progress messages on session transports.
	roundTrip(ctx context.Context, typ protocol.MessageType, id string, raw []byte, progress func(protocol.Progress)) (*protocol.Envelope, int, error)
	// refresh fetches the manifest again where the binding can (HTTP).
	refresh(ctx context.Context) error
	// close ends the binding; it is called once.
	close() error
}

// Session is a connection to one MangleCP server. It is safe for
// concurrent use; on session transports concurrent calls are pipelined
// over one connection. Close it when done.
type Session struct {
	opts     Options
	kind     string
	rt       roundTripper
	manifest atomic.Pointer[protocol.Manifest]
	auth     atomic.Pointer[protocol.AuthenticateResponse]
	nextID   atomic.Uint64
	closed   atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// Dial connects to the server at target:
//
//   - "http://..." and "https://...": the manifest is read from
//     /.well-known/manglecp/manifest.json on the URL's host (or from the
//     URL itself when it ends in manifest.json); requests are posted to the
//     manifest's endpoints, resolved against the manifest's URL.
//   - "ws://..." and "wss://...": a WebSocket session; the manifest is the
//     first frame. A URL without a path reaches [DefaultWebSocketPath].
//   - "stdio:COMMAND ARGS...": starts the command (arguments split on
//     white space, no quoting) and speaks one message per line over its
//     stdin and stdout; see [DialCommand].
//
// ctx bounds connecting and reading the first manifest only; the session
// lives until Close. Dial fails with a [*TransportError] when the server
// cannot be reached or does not speak MangleCP.
func Dial(ctx context.Context, target string, opts *Options) (*Session, error) {
	if rest, ok := strings.CutPrefix(target, "stdio:"); ok {
		args := strings.Fields(rest)
		if len(args) == 0 {
			return nil, &TransportError{Op: "dial", URL: target, Err: errors.New("stdio: target names no command")}
		}
		return DialCommand(ctx, exec.Command(args[0], args[1:]...), opts)
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, &TransportError{Op: "dial", URL: target, Err: err}
	}
	switch u.Scheme {
	case "http", "https":
		return dialHTTP(ctx, u, opts)
	case "ws", "wss":
		return dialWebSocket(ctx, u, opts)
	}
	return nil, &TransportError{Op: "dial", URL: target, Err: fmt.Errorf("unsupported scheme %q: use http, https, ws, wss or stdio:COMMAND", u.Scheme)}
}

// Manifest returns the server's latest manifest. The value is shared and
// replaced, never modified, when a new manifest arrives: do not modify it.
func (s *Session) Manifest() *protocol.Manifest { return s.manifest.Load() }

// RefreshManifest fetches the manifest again over HTTP (a conditional GET)
// and returns the latest one. Session transports receive new manifests
// without asking; there it only returns the latest.
func (s *Session) RefreshManifest(ctx context.Context) (*protocol.Manifest, error) {
	if err := s.rt.refresh(ctx); err != nil {
		return s.Manifest(), err
	}
	return s.Manifest(), nil
}

// Authentication returns the server's answer to the session's authenticate
// message, or nil when none was sent (HTTP, no token, or a server that does
// not require authentication).
func (s *Session) Authentication() *protocol.AuthenticateResponse { return s.auth.Load() }

// Transport names the binding: "http", "websocket", "stdio" or "conn"
// (a session made by [NewSession]).
func (s *Session) Transport() string { return s.kind }

// Close ends the session. Calls still waiting for an answer fail with
// [ErrClosed]. A stdio server's stdin is closed and Close waits for the
// process to exit (killing it after Options.CloseTimeout); its exit error,
// if any, is returned. Close may be called more than once.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.closeErr = s.rt.close()
	})
	return s.closeErr
}

// setManifest decodes and stores a manifest payload, calling OnManifest
// when it replaces another one.
func (s *Session) setManifest(payload json.RawMessage) error {
	var m protocol.Manifest
	if err := decodeLenient(payload, &m); err != nil {
		return fmt.Errorf("manifest payload: %w", err)
	}
	old := s.manifest.Swap(&m)
	if old != nil && s.opts.OnManifest != nil {
		s.opts.OnManifest(&m)
	}
	return nil
}

// newID returns a request id unique within the session.
func (s *Session) newID() string { return fmt.Sprintf("c%d", s.nextID.Add(1)) }

// A CallOption adjusts one [Session.Evaluate] or [Session.Invoke] call.
type CallOption func(*callOptions)

type callOptions struct {
	progress    func(protocol.Progress)
	token       string
	key         []byte
	ttl         time.Duration
	maxAttempts int
}

// WithProgress sends this call's progress messages to fn instead of
// Options.Progress (session transports only; HTTP has no progress). fn is
// called in order, before the call returns.
func WithProgress(fn func(protocol.Progress)) CallOption {
	return func(c *callOptions) { c.progress = fn }
}

// WithConfirmationToken attaches a confirmation token (Spec 08 section 4.2)
// to an invocation. Evaluate ignores it.
func WithConfirmationToken(token string) CallOption {
	return func(c *callOptions) { c.token = token }
}

// WithConfirmation mints a confirmation token for the invoked macro_id
// with [ConfirmationToken] (key, ttl) and attaches it, for hosts that hold
// the server's confirmation key and have their user's consent. Evaluate
// ignores it.
func WithConfirmation(key []byte, ttl time.Duration) CallOption {
	return func(c *callOptions) { c.key, c.ttl = append([]byte(nil), key...), ttl }
}

// WithMaxAttempts overrides Options.MaxAttempts for one call (1 turns
// retries off; at most 5).
func WithMaxAttempts(n int) CallOption {
	return func(c *callOptions) { c.maxAttempts = n }
}

func (s *Session) callOptions(opts []CallOption) *callOptions {
	c := &callOptions{progress: s.opts.Progress, maxAttempts: s.opts.MaxAttempts}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	if c.maxAttempts <= 0 || c.maxAttempts > MaxAttempts {
		c.maxAttempts = MaxAttempts
	}
	return c
}

// Evaluate sends an intent request (Spec 05) and returns the intent
// response. Unless Options.SkipFactValidation is set, the facts are first
// checked against the manifest's facts_profile and the intent's
// required_facts; invalid facts return, without sending anything, a local
// [*Error] equal to the server's answer. Retryable errors are retried (see
// the package documentation). req is not modified.
func (s *Session) Evaluate(ctx context.Context, req *protocol.IntentRequest, opts ...CallOption) (*protocol.IntentResponse, error) {
	if req == nil {
		return nil, errors.New("manglecp client: Evaluate needs a request")
	}
	co := s.callOptions(opts)
	if !s.opts.SkipFactValidation {
		if perr := checkFacts(s.Manifest(), req); perr != nil {
			return nil, &Error{Payload: perr, Status: perr.HTTPStatus(), Local: true}
		}
	}
	var out protocol.IntentResponse
	if err := s.call(ctx, protocol.TypeIntentRequest, protocol.TypeIntentResponse, req, co, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Invoke sends an invoke request (Spec 07) and returns the invoke
// response. Nil Args are sent as {}. A confirmation token given with
// [WithConfirmationToken] or minted with [WithConfirmation] replaces
// req.ConfirmationToken. Retryable errors are retried (see the package
// documentation). req is not modified.
func (s *Session) Invoke(ctx context.Context, req *protocol.InvokeRequest, opts ...CallOption) (*protocol.InvokeResponse, error) {
	if req == nil {
		return nil, errors.New("manglecp client: Invoke needs a request")
	}
	co := s.callOptions(opts)
	r := *req
	if r.Args == nil {
		r.Args = map[string]any{}
	}
	switch {
	case co.token != "":
		r.ConfirmationToken = co.token
	case co.key != nil:
		r.ConfirmationToken = ConfirmationToken(co.key, r.MacroID, co.ttl)
	}
	var out protocol.InvokeResponse
	if err := s.call(ctx, protocol.TypeInvokeRequest, protocol.TypeInvokeResponse, &r, co, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// authenticate sends the authenticate message of session transports
// (Spec 08 section 3.3) and keeps the answer.
func (s *Session) authenticate(ctx context.Context) error {
	var out protocol.AuthenticateResponse
	req := &protocol.Authenticate{Scheme: protocol.SchemeBearer, Token: s.opts.Token}
	if err := s.call(ctx, protocol.TypeAuthenticate, protocol.TypeAuthenticateResponse, req, s.callOptions(nil), &out); err != nil {
		return err
	}
	s.auth.Store(&out)
	return nil
}

// call sends one request, retrying retryable errors, and decodes the
// answer of type want into out.
func (s *Session) call(ctx context.Context, typ, want protocol.MessageType, payload any, co *callOptions, out any) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("manglecp client: encode %s: %w", typ, err)
	}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.closed.Load() {
			return ErrClosed
		}
		id := s.newID()
		raw, err := (&protocol.Envelope{Type: typ, ID: &id, Version: protocol.Version, Payload: body}).Encode()
		if err != nil {
			return fmt.Errorf("manglecp client: encode %s: %w", typ, err)
		}
		if m := s.Manifest(); m != nil && m.Limits.MaxMessageBytes > 0 && int64(len(raw)) > m.Limits.MaxMessageBytes {
			perr := protocol.MessageTooLarge(m.Limits.MaxMessageBytes, int64(len(raw)))
			return &Error{Payload: perr, Status: perr.HTTPStatus(), Local: true}
		}
		env, status, err := s.rt.roundTrip(ctx, typ, id, raw, co.progress)
		if err != nil {
			return err
		}
		switch env.Type {
		case want:
			if err := decodeLenient(env.Payload, out); err != nil {
				return &TransportError{Op: "decode", Err: fmt.Errorf("%s payload: %w", want, err)}
			}
			return nil
		case protocol.TypeError:
		default:
			return &TransportError{Op: "decode", Err: fmt.Errorf("answer to %s is %s, want %s or error", typ, env.Type, want)}
		}
		var perr protocol.Error
		if err := decodeLenient(env.Payload, &perr); err != nil || perr.Code == "" {
			return &TransportError{Op: "decode", Status: status, Err: fmt.Errorf("error payload is not a MangleCP error: %s", truncate(env.Payload))}
		}
		if status == 0 {
			status = perr.Code.HTTPStatus()
		}
		e := &Error{Payload: &perr, Status: status, RequestID: id, Attempts: attempt}
		if !retryable(perr.Code) || attempt >= co.maxAttempts {
			return e
		}
		d := retryDelay(attempt, e.RetryAfter(), s.opts.RetryBaseDelay, s.opts.RetryMaxDelay, jitter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return e // the context would end while waiting: answer now
		}
		if err := s.opts.Sleep(ctx, d); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if perr.Code == protocol.CodeServerNotReady {
			// The status has likely changed (booting, draining): look
			// again where the binding can, best effort.
			_ = s.rt.refresh(ctx)
		}
	}
}

// decodeLenient decodes a payload from a server: numbers stay json.Number
// and unknown fields are ignored, so newer servers stay readable.
func decodeLenient(payload json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	return dec.Decode(v)
}

// truncate shortens a payload for an error message.
func truncate(b []byte) string {
	return protocol.ClipN(string(b), 200)
}
