package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/protocol"
)

// WSOptions configure the WebSocket endpoint.
type WSOptions struct {
	// PingInterval is how often an idle connection is pinged; default 25 s
	// (the spec asks for at most 30 s).
	PingInterval time.Duration
	// OriginPatterns are the browser origins allowed to connect (see
	// websocket.AcceptOptions); empty means same-origin only.
	OriginPatterns []string
	// Session configures each session (limits, write timeout, budget,
	// drain). [NewHTTPHandler] fills Budget, Drain and WriteTimeout from
	// its options when they are unset here.
	Session SessionOptions
}

// NewWSHandler serves the WebSocket binding (Spec 02 section 4.1): the
// manifest is the first frame, one message per text frame, pipelined
// requests answered by id, cancel, pings while idle, close handshake. A
// frame larger than the handler's MaxMessageBytes is answered with
// message_too_large and the connection is closed with status 1009. When
// the handler requires credentials and the upgrade request carried no
// valid ones, frames are limited to SessionOptions.PreAuthMessageBytes
// until an authenticate message succeeds; a larger frame is answered with
// auth_required and the connection closed with 1008. When draining, the
// session pushes the manifest (which says draining), answers every request
// the peer sent before it could read it (a ping tells when they are in),
// and closes with 1001 once its requests are answered.
func NewWSHandler(h Handler, opts *WSOptions) http.Handler {
	var o WSOptions
	if opts != nil {
		o = *opts
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 25 * time.Second
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			// The opening handshake is a GET (RFC 6455 section 4.1).
			w.Header().Set("Allow", "GET")
			writeError(w, "", protocol.Errorf(protocol.CodeMethodNotAllowed, "the WebSocket handshake is a GET request"))
			return
		}
		if !IsWebSocketUpgrade(r) {
			w.Header().Set("Upgrade", "websocket")
			writeError(w, "", protocol.Errorf(protocol.CodeUpgradeRequired, "this is the WebSocket endpoint: connect with a WebSocket client"))
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: o.OriginPatterns})
		if err != nil {
			return // Accept wrote the HTTP error (the envelope guard turned it into an envelope)
		}
		defer c.CloseNow()
		c.SetReadLimit(-1) // wsConn enforces the limit itself, so it can answer with the registry error
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		conn := &wsConn{c: c, limit: h.MaxMessageBytes(), activity: make(chan struct{}, 1)}
		go conn.keepalive(ctx, o.PingInterval)
		so := o.Session
		so.Credentials = credentials(r)
		so.Peer = peer(r)
		err = ServeSession(ctx, h, conn, &so)
		switch {
		case errors.Is(err, errFrameTooLarge):
			_ = c.Close(websocket.StatusMessageTooBig, "message exceeds limits.max_message_bytes")
		case errors.Is(err, errPreAuthTooLarge):
			_ = c.Close(websocket.StatusPolicyViolation, "authenticate first")
		case err == nil:
			_ = c.Close(websocket.StatusNormalClosure, "")
		default:
			_ = c.Close(websocket.StatusInternalError, "")
		}
	})
}

var (
	errFrameTooLarge   = errors.New("frame too large")
	errPreAuthTooLarge = errors.New("frame too large before authentication")
)

// wsConn adapts a WebSocket connection to Conn.
type wsConn struct {
	c        *websocket.Conn
	limit    int64
	activity chan struct{}

	mu      sync.Mutex
	preAuth int64 // > 0: the limit until the session authenticates
	refusal error // set after a refused frame: the session ends with it
}

// SetPreAuthLimit limits frames to n bytes until called with n <= 0.
func (w *wsConn) SetPreAuthLimit(n int64) {
	w.mu.Lock()
	w.preAuth = n
	w.mu.Unlock()
}

// ReadMessage reads one text frame of at most limit bytes (the pre-auth
// limit while one is set).
func (w *wsConn) ReadMessage(ctx context.Context) ([]byte, error) {
	w.mu.Lock()
	refusal := w.refusal
	w.mu.Unlock()
	if refusal != nil {
		return nil, refusal // the previous frame was refused: end the session
	}
	typ, r, err := w.c.Reader(ctx)
	if err != nil {
		if websocket.CloseStatus(err) != -1 || errors.Is(err, io.EOF) {
			return nil, errPeerGone // a close frame: nobody will read answers any more
		}
		return nil, err
	}
	select {
	case w.activity <- struct{}{}:
	default:
	}
	// The limit as the frame arrives: an authenticate answered before lifts it.
	w.mu.Lock()
	limit, preAuth := w.limit, w.preAuth
	w.mu.Unlock()
	if preAuth > 0 {
		limit = min(limit, preAuth)
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		w.mu.Lock()
		defer w.mu.Unlock()
		if preAuth > 0 && preAuth < w.limit {
			w.refusal = errPreAuthTooLarge
			return nil, protocol.Errorf(protocol.CodeAuthRequired,
				"authenticate first: before authentication a message may have at most %d bytes", preAuth)
		}
		w.refusal = errFrameTooLarge
		return nil, protocol.MessageTooLarge(w.limit, -1)
	}
	if typ != websocket.MessageText {
		return nil, protocol.Errorf(protocol.CodeMalformedMessage, "MangleCP messages are text frames")
	}
	return data, nil
}

// WriteMessage sends one text frame; ctx bounds the write (the connection
// is closed when it ends first).
func (w *wsConn) WriteMessage(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageText, msg)
}

// Close closes the connection.
func (w *wsConn) Close() error { return w.c.CloseNow() }

// CloseGoingAway closes with status 1001: the server is draining.
func (w *wsConn) CloseGoingAway() error {
	return w.c.Close(websocket.StatusGoingAway, "server draining")
}

// Ping pings the peer and waits for the pong, which the peer sends after
// every frame it sent before it read the ping.
func (w *wsConn) Ping(ctx context.Context) error { return w.c.Ping(ctx) }

// keepalive pings when no frame arrived for interval.
func (w *wsConn) keepalive(ctx context.Context, interval time.Duration) {
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.activity:
			t.Reset(interval)
		case <-t.C:
			// A peer answers pongs when it reads; allow it a generous while.
			pctx, cancel := context.WithTimeout(ctx, 2*interval+10*time.Second)
			err := w.c.Ping(pctx)
			cancel()
			if err != nil {
				_ = w.c.CloseNow()
				return
			}
			t.Reset(interval)
		}
	}
}

// IsWebSocketUpgrade reports whether r asks for a WebSocket.
func IsWebSocketUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}
