package transport

import "github.com/manglecp/manglecp/protocol"

// OversizePrefixBytes is how much of a message longer than a connection's
// limit [OversizeError] keeps: enough for an envelope's type and id, which
// MangleCP servers write first and whose length protocol.MaxIDBytes bounds.
const OversizePrefixBytes = 1024

// OversizeError reports a message longer than a connection's limit, which
// the connection skipped without buffering it. Prefix holds its first bytes
// (at most [OversizePrefixBytes]), so that a peer can still tell whose
// answer it was and answer the caller instead of letting it wait. It
// unwraps to the message_too_large *protocol.Error, so protocol.AsError
// finds that.
type OversizeError struct {
	Err    *protocol.Error
	Prefix []byte
}

// Error is the message_too_large error's text.
func (e *OversizeError) Error() string { return e.Err.Error() }

// Unwrap returns the message_too_large error.
func (e *OversizeError) Unwrap() error { return e.Err }
