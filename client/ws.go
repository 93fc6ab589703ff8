package client

import (
	"context"
	"io"
	"net/url"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// dialWebSocket opens a WebSocket session (Spec 02 section 4.1). The token
// and the extra headers go with the upgrade request.
// DefaultWebSocketPath is the WebSocket endpoint a ws:// or wss:// target
// without a path reaches: the path this module's servers serve.
const DefaultWebSocketPath = "/manglecp/ws"

func dialWebSocket(ctx context.Context, u *url.URL, opts *Options) (*Session, error) {
	o := opts.withDefaults()
	if u.Path == "" || u.Path == "/" {
		// ws://HOST:PORT means the server's default endpoint.
		c := *u
		c.Path = DefaultWebSocketPath
		u = &c
	}
	target := u.String()
	c, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPClient: o.HTTPClient, HTTPHeader: o.httpHeader()})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		te := &TransportError{Op: "dial", URL: target, Err: err}
		if resp != nil {
			te.Status = resp.StatusCode
		}
		return nil, te
	}
	// The library's own limit closes the connection; the client's limit
	// (MaxReplyBytes) is applied in ReadMessage, which skips a longer
	// message and keeps the session. Past maxSkippedReply the connection is
	// given up.
	c.SetReadLimit(o.MaxReplyBytes + maxSkippedReply)
	return newSession(ctx, &wsConn{c: c, limit: o.MaxReplyBytes}, o, "websocket", nil)
}

// maxSkippedReply is how many bytes of one over-long message a WebSocket
// session reads past Options.MaxReplyBytes (without keeping them) before it
// closes the connection instead.
const maxSkippedReply = 1 << 30

// wsConn adapts a client WebSocket connection to transport.Conn: one
// message per text frame, of at most limit bytes.
type wsConn struct {
	c     *websocket.Conn
	limit int64
}

// ReadMessage reads the next text frame. A normal close is io.EOF; a
// binary frame is reported as a framing error and skipped by the session;
// a frame longer than the limit is read past without being kept and
// reported as a transport.OversizeError with its first bytes, so the call
// it answers can be told.
func (w *wsConn) ReadMessage(ctx context.Context) ([]byte, error) {
	typ, r, err := w.c.Reader(ctx)
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway:
			return nil, io.EOF
		}
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, w.limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > w.limit {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, err
		}
		prefix := append([]byte(nil), data[:min(len(data), transport.OversizePrefixBytes)]...)
		return nil, &transport.OversizeError{Err: protocol.MessageTooLarge(w.limit, -1), Prefix: prefix}
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

// Close closes the connection with a normal close handshake (bounded by
// the library). Its failures are not reported: the connection is gone
// either way, and a peer that closed first is no error.
func (w *wsConn) Close() error {
	_ = w.c.Close(websocket.StatusNormalClosure, "")
	return nil
}
