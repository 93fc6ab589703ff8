// Package transport carries MangleCP messages over HTTP, WebSocket, stdio
// and an in-memory pipe. It turns bytes into [protocol.Inbound] values for a
// [Handler] and the handler's envelopes back into bytes and statuses. It
// never looks inside evaluation: the status of an error comes from the
// protocol registry, the body is always a MangleCP envelope.
//
// It also bounds what a peer can make the server hold, before any work:
// credentials are checked before a body is read ([Handler.Authenticate]),
// a session reads only small messages until it authenticated, holds a
// bounded number of unanswered bytes (and all sessions a server-wide
// [Budget]), an answer that cannot be written within the write timeout
// ends the session and drops its work, [LimitListener] bounds connections
// per IP, and [Drain] ends connections gracefully on shutdown.
package transport

import (
	"context"

	"github.com/manglecp/manglecp/protocol"
)

// Handler is everything a transport asks of what it serves;
// *manglecp.Server implements it. A handler that needs only some of it
// embeds [HandlerDefaults] for the rest.
//
// Concurrency: every method is called from many goroutines at once (one
// per HTTP request, per session and per session request) and must be safe
// for that; Handle runs concurrently with itself and with every other
// method. The function given to OnManifestChange is called in a goroutine
// of its own, possibly concurrently with itself; it must not block for
// long. ManifestJSON, MaxMessageBytes, AuthRequired and Registry answer at
// once, without I/O; Authenticate and Handle honour ctx.
//
// Memory: Handle borrows in.Data. It must keep no reference to the bytes,
// or to any slice of them, once it has returned (copy what you keep): the
// HTTP binding reads a later request's body into the same buffer.
//
// Authentication: a transport authenticates a request once. The HTTP
// binding calls Authenticate with the header credentials before it reads
// the body, refuses the request with the error it returns, and puts the
// caller on the message (Inbound.Caller), which Handle trusts. Sessions
// leave Caller nil: Handle authenticates the session's credentials with
// the request, in its own order of checks.
type Handler interface {
	// Handle answers one inbound message with an envelope.
	Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope
	// Authenticate checks credentials presented by peer (the client's
	// address): the caller, or the registry error to answer (auth_required,
	// auth_invalid, rate_limited when peer failed too often). Nil and nil:
	// the handler cannot tell yet (a booting server); Handle decides.
	Authenticate(ctx context.Context, c *protocol.Credentials, peer string) (*protocol.Caller, *protocol.Error)
	// AuthRequired reports whether requests need credentials (CORS never
	// answers "*" then; sessions read only small messages until
	// authenticated).
	AuthRequired() bool
	// ManifestJSON returns the current manifest payload and its ETag.
	ManifestJSON() (payload []byte, etag string)
	// OnManifestChange calls fn whenever the manifest changes, until the
	// returned function is called; sessions push each new manifest.
	OnManifestChange(fn func()) (unsubscribe func())
	// MaxMessageBytes is the size limit to enforce while reading.
	MaxMessageBytes() int64
	// SkillJSON returns a referenced skill (Spec 06 section 4.4) as JSON,
	// served at GET BasePath/skills/{id}; false when there is none.
	SkillJSON(id string) ([]byte, bool)
	// Registry is the error registry the HTTP statuses of error envelopes
	// come from (the domain's own codes included); nil: the standard codes.
	Registry() *protocol.Registry
}

// HandlerDefaults implements the parts of [Handler] a simple handler
// (a test double, a proxy) may not need: no authentication, a manifest
// that never changes, no skills, the standard codes. Embed it and
// implement Handle, ManifestJSON and MaxMessageBytes.
type HandlerDefaults struct{}

// Authenticate accepts anyone and leaves the caller to Handle.
func (HandlerDefaults) Authenticate(context.Context, *protocol.Credentials, string) (*protocol.Caller, *protocol.Error) {
	return nil, nil
}

// AuthRequired reports false.
func (HandlerDefaults) AuthRequired() bool { return false }

// OnManifestChange never calls fn.
func (HandlerDefaults) OnManifestChange(func()) func() { return func() {} }

// SkillJSON has no skills.
func (HandlerDefaults) SkillJSON(string) ([]byte, bool) { return nil, false }

// Registry is nil: the standard codes.
func (HandlerDefaults) Registry() *protocol.Registry { return nil }
