package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
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
	// Session configures each session.
	Session SessionOptions
}

// NewWSHandler serves the WebSocket binding (Spec 02 section 4.1): the
// manifest is the first frame, one message per text frame, pipelined
// requests answered by id, cancel, pings while idle, close handshake. A
// frame larger than the handler's MaxMessageBytes is answered with
// message_too_large and the connection is closed with status 1009.
func NewWSHandler(h Handler, opts *WSOptions) http.Handler {
	var o WSOptions
	if opts != nil {
		o = *opts
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 25 * time.Second
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: o.OriginPatterns})
		if err != nil {
			return // Accept wrote the HTTP error
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
		case err == nil:
			_ = c.Close(websocket.StatusNormalClosure, "")
		default:
			_ = c.Close(websocket.StatusInternalError, "")
		}
	})
}

var errFrameTooLarge = errors.New("frame too large")

// wsConn adapts a WebSocket connection to Conn.
type wsConn struct {
	c        *websocket.Conn
	limit    int64
	tooLarge bool
	activity chan struct{}
}

// ReadMessage reads one text frame of at most limit bytes.
func (w *wsConn) ReadMessage(ctx context.Context) ([]byte, error) {
	if w.tooLarge {
		return nil, errFrameTooLarge // the previous frame was refused: end the session
	}
	typ, r, err := w.c.Reader(ctx)
	if err != nil {
		if websocket.CloseStatus(err) == websocket.StatusNormalClosure || websocket.CloseStatus(err) == websocket.StatusGoingAway || errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, err
	}
	select {
	case w.activity <- struct{}{}:
	default:
	}
	data, err := io.ReadAll(io.LimitReader(r, w.limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > w.limit {
		w.tooLarge = true
		return nil, protocol.MessageTooLarge(w.limit, -1)
	}
	if typ != websocket.MessageText {
		return nil, protocol.Errorf(protocol.CodeMalformedMessage, "MangleCP messages are text frames")
	}
	return data, nil
}

// WriteMessage sends one text frame.
func (w *wsConn) WriteMessage(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageText, msg)
}

// Close closes the connection.
func (w *wsConn) Close() error { return w.c.CloseNow() }

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
