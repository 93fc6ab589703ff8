package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// ErrClosed is returned by calls on a session that was closed with
// [Session.Close], and by calls still waiting for their answer when it was.
var ErrClosed = errors.New("manglecp client: session closed")

// Error is an error answer of a MangleCP server (Spec 09 section 2), or
// the same error found by the client before sending (Local).
//
// It unwraps to its [*protocol.Error] payload, so errors.Is(err,
// &protocol.Error{Code: c}) matches by code and protocol.AsError(err)
// returns the payload with its typed details.
type Error struct {
	// Payload is the error as the server sent it: code, message, typed
	// details, recoverable and retry_after_ms.
	Payload *protocol.Error
	// Status is the HTTP status of the answer over HTTP; on session
	// transports, and for local errors, the registry's status of the code.
	Status int
	// RequestID is the id of the request the error answered; "" for local
	// errors.
	RequestID string
	// Attempts is how many times the request was sent (0 for local errors).
	Attempts int
	// Local reports that the client found the error itself and sent
	// nothing: invalid facts (Spec 10 section 5.2) or a message larger than
	// the manifest's limits.max_message_bytes.
	Local bool
}

// Error describes the error by code and message.
func (e *Error) Error() string {
	if e.Payload == nil {
		return "manglecp: error answer without payload"
	}
	return "manglecp: " + e.Payload.Error()
}

// Unwrap returns the payload.
func (e *Error) Unwrap() error {
	if e.Payload == nil {
		return nil
	}
	return e.Payload
}

// Code is the error code, or "" when there is no payload.
func (e *Error) Code() protocol.Code {
	if e.Payload == nil {
		return ""
	}
	return e.Payload.Code
}

// Details are the structured details (Spec 09 section 4), or nil.
func (e *Error) Details() *protocol.ErrorDetails {
	if e.Payload == nil {
		return nil
	}
	return e.Payload.Details
}

// Recoverable reports the error's recoverable flag as sent.
func (e *Error) Recoverable() bool { return e.Payload != nil && e.Payload.Recoverable }

// RetryAfter is the wait the server asked for (retry_after_ms), or 0.
func (e *Error) RetryAfter() time.Duration {
	if e.Payload == nil || e.Payload.RetryAfterMS == nil || *e.Payload.RetryAfterMS < 0 {
		return 0
	}
	return time.Duration(*e.Payload.RetryAfterMS) * time.Millisecond
}

// TransportError is a failure below the protocol: the connection could not
// be made or broke, or the peer's reply was not a MangleCP message. Retrying
// is the caller's decision; the client never retries these.
type TransportError struct {
	// Op is what failed: "dial", "manifest", "send", "receive" or "decode".
	Op string
	// URL is the URL or command involved, when there is one.
	URL string
	// Status is the HTTP status of a reply that was not a MangleCP
	// envelope, or 0.
	Status int
	// Err is the cause.
	Err error
}

// Error describes the failure.
func (e *TransportError) Error() string {
	s := "manglecp client: " + e.Op
	if e.URL != "" {
		s += " " + e.URL
	}
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *TransportError) Unwrap() error { return e.Err }
