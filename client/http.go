package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// httpBinding is the HTTP binding (Spec 02 section 4.2): the manifest from
// the well-known path, one POST per request.
type httpBinding struct {
	s           *Session
	client      *http.Client
	header      http.Header
	manifestURL *url.URL

	mu        sync.Mutex
	etag      string
	evalURL   string
	invokeURL string
}

// dialHTTP reads the manifest at u's host (or at u, when it is the
// manifest's URL) and returns a session posting to its endpoints.
func dialHTTP(ctx context.Context, u *url.URL, opts *Options) (*Session, error) {
	s := &Session{opts: opts.withDefaults(), kind: "http"}
	mu := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: transport.ManifestPath}
	if strings.HasSuffix(u.Path, "manifest.json") {
		mu = &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User, Path: u.Path, RawQuery: u.RawQuery}
	}
	b := &httpBinding{s: s, client: s.opts.HTTPClient, header: s.opts.httpHeader(), manifestURL: mu}
	s.rt = b
	if err := b.refresh(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// refresh fetches the manifest (conditionally, once an ETag is known) and
// resolves the endpoints against the manifest's URL.
func (b *httpBinding) refresh(ctx context.Context) error {
	murl := b.manifestURL.String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, murl, nil)
	if err != nil {
		return &TransportError{Op: "manifest", URL: murl, Err: err}
	}
	b.setHeaders(req)
	b.mu.Lock()
	if b.etag != "" && b.s.Manifest() != nil {
		req.Header.Set("If-None-Match", b.etag)
	}
	b.mu.Unlock()
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &TransportError{Op: "manifest", URL: murl, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		return nil
	}
	body, err := readReply(resp.Body, b.s.opts.MaxReplyBytes, "manifest")
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ce *Error
		if errors.As(err, &ce) {
			return err
		}
		return &TransportError{Op: "manifest", URL: murl, Status: resp.StatusCode, Err: err}
	}
	env, perr := protocol.DecodeEnvelope(body)
	switch {
	case perr != nil && resp.StatusCode == http.StatusNotFound:
		return &TransportError{Op: "manifest", URL: murl, Status: resp.StatusCode, Err: errors.New("not found: the host does not serve MangleCP (Spec 02 section 5.1)")}
	case perr != nil:
		return &TransportError{Op: "manifest", URL: murl, Status: resp.StatusCode, Err: fmt.Errorf("not a MangleCP message: %w", perr)}
	case env.Type == protocol.TypeError:
		var pe protocol.Error
		if err := decodeLenient(env.Payload, &pe); err != nil || pe.Code == "" {
			return &TransportError{Op: "manifest", URL: murl, Status: resp.StatusCode, Err: fmt.Errorf("error payload is not a MangleCP error: %s", truncate(env.Payload))}
		}
		return &Error{Payload: &pe, Status: resp.StatusCode}
	case env.Type != protocol.TypeManifest:
		return &TransportError{Op: "manifest", URL: murl, Status: resp.StatusCode, Err: fmt.Errorf("got a %s message, want manifest", env.Type)}
	}
	var m protocol.Manifest
	if err := decodeLenient(env.Payload, &m); err != nil {
		return &TransportError{Op: "manifest", URL: murl, Err: fmt.Errorf("manifest payload: %w", err)}
	}
	if m.Endpoints == nil || m.Endpoints.IntentEval == "" || m.Endpoints.MacroInvoke == "" {
		return &TransportError{Op: "manifest", URL: murl, Err: errors.New("the manifest has no endpoints for HTTP (Spec 04 section 3.2.5)")}
	}
	evalURL, err := b.manifestURL.Parse(m.Endpoints.IntentEval)
	if err != nil {
		return &TransportError{Op: "manifest", URL: murl, Err: fmt.Errorf("endpoints.intent_eval: %w", err)}
	}
	invokeURL, err := b.manifestURL.Parse(m.Endpoints.MacroInvoke)
	if err != nil {
		return &TransportError{Op: "manifest", URL: murl, Err: fmt.Errorf("endpoints.macro_invoke: %w", err)}
	}
	b.mu.Lock()
	b.etag = resp.Header.Get("ETag")
	b.evalURL, b.invokeURL = evalURL.String(), invokeURL.String()
	b.mu.Unlock()
	if err := b.s.setManifest(env.Payload); err != nil {
		return &TransportError{Op: "manifest", URL: murl, Err: err}
	}
	return nil
}

func (b *httpBinding) setHeaders(req *http.Request) {
	for k, v := range b.header {
		req.Header[k] = append([]string(nil), v...)
	}
	req.Header.Set("Accept", "application/json")
}

// roundTrip posts one request to its endpoint. Ending ctx closes the
// request, which cancels it on the server (Spec 02 section 6.2).
func (b *httpBinding) roundTrip(ctx context.Context, typ protocol.MessageType, id string, raw []byte, _ func(protocol.Progress)) (*protocol.Envelope, int, error) {
	b.mu.Lock()
	target := b.evalURL
	switch typ {
	case protocol.TypeInvokeRequest:
		target = b.invokeURL
	case protocol.TypeIntentRequest:
	default:
		b.mu.Unlock()
		return nil, 0, fmt.Errorf("manglecp client: HTTP carries no %s messages", typ)
	}
	b.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(raw))
	if err != nil {
		return nil, 0, &TransportError{Op: "send", URL: target, Err: err}
	}
	b.setHeaders(req)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		return nil, 0, &TransportError{Op: "send", URL: target, Err: err}
	}
	defer resp.Body.Close()
	body, err := readReply(resp.Body, b.s.opts.MaxReplyBytes, "answer")
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		var ce *Error
		if errors.As(err, &ce) {
			return nil, 0, err
		}
		return nil, 0, &TransportError{Op: "receive", URL: target, Status: resp.StatusCode, Err: err}
	}
	env, perr := protocol.DecodeEnvelope(body)
	if perr != nil {
		return nil, 0, &TransportError{Op: "decode", URL: target, Status: resp.StatusCode, Err: fmt.Errorf("the reply is not a MangleCP message: %w", perr)}
	}
	if env.ID != nil && *env.ID != id {
		return nil, 0, &TransportError{Op: "decode", URL: target, Status: resp.StatusCode, Err: fmt.Errorf("the reply answers id %q, want %q", *env.ID, id)}
	}
	return env, resp.StatusCode, nil
}

// close has nothing to release: each request is its own exchange, and the
// HTTP client may be shared.
func (b *httpBinding) close() error { return nil }

// readReply reads a reply body of at most limit bytes: it stops after
// limit+1 and fails with a local message_too_large that names what was
// being read.
func readReply(r io.Reader, limit int64, what string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, replyTooLarge(what, limit)
	}
	return body, nil
}

// replyTooLarge is the local message_too_large of a reply (what: "answer",
// "manifest") longer than limit, the client's Options.MaxReplyBytes.
func replyTooLarge(what string, limit int64) *Error {
	perr := protocol.Errorf(protocol.CodeMessageTooLarge, "the server's %s is longer than the %d bytes this client reads (client.Options.MaxReplyBytes); it stopped reading there", what, limit).
		WithDetails(&protocol.ErrorDetails{Limit: protocol.Int64Ptr(limit)})
	return &Error{Payload: perr, Status: perr.HTTPStatus(), Local: true}
}
