// Package transport carries MangleCP messages over HTTP, WebSocket, stdio
// and an in-memory pipe. It turns bytes into [protocol.Inbound] values for a
// [Handler] and the handler's envelopes back into bytes and statuses. It
// never looks inside evaluation: the status of an error comes from the
// protocol registry, the body is always a MangleCP envelope.
package transport

import (
	"context"

	"github.com/manglecp/manglecp/protocol"
)

// Handler answers MangleCP messages. *manglecp.Server implements it.
type Handler interface {
	// Handle answers one inbound message with an envelope.
	Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope
	// ManifestJSON returns the current manifest payload and its ETag.
	ManifestJSON() (payload []byte, etag string)
	// MaxMessageBytes is the size limit to enforce while reading.
	MaxMessageBytes() int64
}
