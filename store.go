package manglecp

import (
	"time"

	"github.com/manglecp/manglecp/internal/memstore"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/store"
)

// Store is the state that replicas of one deployment share: synthesized
// macro-tools, confirmation-token nonces and per-identity rate limits. The
// contract, the record format and its seal are in package store; the
// in-memory store is the default, store/redis shares the state through
// Redis or Valkey.
type Store = store.Store

// NewMemoryStore returns the in-memory [Store] every server uses unless
// Options.Store names another: state is not shared between processes.
// maxBytes bounds the stored macro-tools (default 64 MiB when <= 0).
func NewMemoryStore(maxBytes int64) Store { return memstore.New(maxBytes, time.Now) }

// StoredMacro is one encoded macro-tool definition for [Store.PutMacros].
type StoredMacro = store.Macro

// RateLimit is a token bucket: PerSecond sustained, Burst at once.
type RateLimit = store.RateLimit

// StoreStats is implemented by stores that can cheaply report their
// macro-tool entries and bytes.
type StoreStats = store.Stats

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
