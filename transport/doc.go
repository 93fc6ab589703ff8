// Package transport carries MangleCP messages over HTTP, WebSocket, stdio
// and an in-memory pipe. It turns bytes into [protocol.Inbound] values for a
// [Handler] and the handler's envelopes back into bytes and statuses. It
// never looks inside evaluation: the status of an error comes from the
// protocol registry, the body is always a MangleCP envelope.
//
// It also bounds what a peer can make the server hold, before any work:
// credentials are checked before a body is read ([Authenticator]), a
// session reads only small messages until it authenticated, holds a
// bounded number of unanswered bytes (and all sessions a server-wide
// [Budget]), an answer that cannot be written within the write timeout
// ends the session and drops its work, [LimitListener] bounds connections
// per IP, and [Drain] ends connections gracefully on shutdown.
package transport

import (
	"context"

	"github.com/manglecp/manglecp/protocol"
)

// Handler answers MangleCP messages. *manglecp.Server implements it.
type Handler interface {
	// Handle answers one inbound message with an envelope. It may keep
	// in.Data, unless it is a DataBorrower that says it does not.
	Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope
	// ManifestJSON returns the current manifest payload and its ETag.
	ManifestJSON() (payload []byte, etag string)
	// MaxMessageBytes is the size limit to enforce while reading.
	MaxMessageBytes() int64
}
