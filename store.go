package manglecp

import (
	"context"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// Store is the state that replicas of one deployment share: synthesized
// macro-tools (so any replica can invoke what another one evaluated),
// confirmation-token nonces (so a token is accepted once across all
// replicas) and per-identity rate limits. The in-memory store is the
// default; store/redis shares it through Redis or Valkey.
//
// Implementations must be safe for concurrent use. An error means the store
// could not answer (unreachable, timed out); the server then refuses the
// request with server_not_ready and logs the error.
type Store interface {
	// PutMacros stores encoded macro-tool definitions, each under its id
	// for its TTL, replacing an equal id. Beyond the store's byte bound the
	// least recently used definitions are evicted.
	PutMacros(ctx context.Context, macros []StoredMacro) error
	// GetMacro returns the definition stored under id, or nil (and no
	// error) when it is unknown, evicted or past its TTL. The bytes must
	// not be modified.
	GetMacro(ctx context.Context, id string) ([]byte, error)
	// UseNonce records a confirmation-token nonce for ttl. It reports false
	// when the nonce was already recorded and has not expired.
	UseNonce(ctx context.Context, nonce string, ttl time.Duration) (fresh bool, err error)
	// Take takes one request from the token bucket of key, refilled at
	// limit.PerSecond up to limit.Burst. It returns 0 when the request may
	// proceed, else how long until it could.
	Take(ctx context.Context, key string, limit RateLimit, now time.Time) (wait time.Duration, err error)
}

// StoredMacro is one encoded macro-tool definition for [Store.PutMacros].
type StoredMacro struct {
	ID   string
	Data []byte
	// TTL is how long the definition stays: until validity.expires_at of
	// the macro-tool, and at least the server's MacroTTL.
	TTL time.Duration

	def *macroDef // the decoded definition, kept by the in-memory store
}

// RateLimit is a token bucket: PerSecond sustained, Burst at once.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// StoreStats is implemented by stores that can cheaply report their
// macro-tool entries and bytes (the in-memory store does); metrics and
// [Server.CacheStats] use it.
type StoreStats interface {
	MacroStats() (entries int, bytes int64)
}

// storeError is a store failure: the client sees server_not_ready (the
// registry's code for "retry shortly"), the cause is logged with the
// request id.
type storeError struct {
	op    string
	cause error
}

func (e *storeError) Error() string { return "shared store: " + e.op + ": " + e.cause.Error() }

func (e *storeError) Unwrap() error {
	return protocol.Errorf(protocol.CodeServerNotReady, "the shared state store is unavailable; retry shortly").WithRetryAfter(1000)
}
