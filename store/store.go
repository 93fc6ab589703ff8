// Package store is the contract for the state that replicas of one
// MangleCP deployment share: synthesized macro-tools (evaluate on one
// replica, invoke on any), confirmation-token nonces (a token is accepted
// once across all replicas) and per-identity rate limits. It also defines
// the format macro-tools are stored in ([Record]) and the seal that lets a
// replica authenticate a record it reads from shared storage ([Seal]).
//
// The server (package manglecp) keeps an in-memory implementation as its
// default; store/redis shares the state through Redis or Valkey. This
// package links neither the server nor the rule engine.
package store

import (
	"context"
	"errors"
	"time"
)

// Store is the state replicas share.
//
// Implementations must be safe for concurrent use. An error means the
// store could not answer (unreachable, timed out); the server then refuses
// the request with server_not_ready and logs the error. The exception is
// an error matching [ErrRejected] from GetMacro: the store answered with a
// record it does not trust, which the server treats as unknown
// (macro_not_found) and logs.
type Store interface {
	// PutMacros stores encoded macro-tool definitions, each under its id
	// for its TTL, replacing an equal id. Beyond the store's byte bound the
	// least recently used definitions are evicted, never the ones of this
	// call.
	PutMacros(ctx context.Context, macros []Macro) error
	// GetMacro returns the definition stored under id, or nil (and no
	// error) when it is unknown, evicted or past its TTL. The bytes must
	// not be modified.
	GetMacro(ctx context.Context, id string) ([]byte, error)
	// UseNonce records a confirmation-token nonce for ttl. It reports false
	// when the nonce was already recorded and has not expired.
	UseNonce(ctx context.Context, nonce string, ttl time.Duration) (fresh bool, err error)
	// Take takes one request from the token bucket of key, refilled at
	// limit.PerSecond up to limit.Burst. It returns 0 when the request may
	// proceed, else how long until it could. now is the caller's clock; a
	// store shared by replicas may use its own clock instead, so that
	// replicas whose clocks differ share one bucket correctly.
	Take(ctx context.Context, key string, limit RateLimit, now time.Time) (wait time.Duration, err error)
}

// Macro is one encoded macro-tool definition for [Store.PutMacros].
type Macro struct {
	ID   string
	Data []byte
	// TTL is how long the definition stays: until validity.expires_at of
	// the macro-tool, and at least the server's MacroTTL.
	TTL time.Duration
}

// RateLimit is a token bucket: PerSecond sustained, Burst at once.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// Stats is implemented by stores that can cheaply report the macro-tool
// entries and bytes they hold.
type Stats interface {
	MacroStats() (entries int, bytes int64)
}

// ErrRejected is matched (errors.Is) by the errors of a record a replica
// refuses to use: a seal that does not verify, a format or record version
// it does not know, a record stored under another id. Such a record is
// treated as absent (macro_not_found) and the cause is logged; it is never
// used in part.
var ErrRejected = errors.New("stored macro-tool rejected")
