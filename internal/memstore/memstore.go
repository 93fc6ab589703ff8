// Package memstore is the in-memory store.Store, one process's state: the
// encoded macro-tools (byte-bounded, least recently used first beyond the
// bound), the used confirmation nonces (expiring one by one) and the
// request-rate buckets (bounded in keys). Servers given one such store
// share it as replicas share Redis. It knows the store contract only:
// neither the server nor the engine.
package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/lru"
	"github.com/manglecp/manglecp/internal/ratelimit"
	"github.com/manglecp/manglecp/store"
)

// Store is the default store.Store: one process's memory. Macro-tools are
// kept until their TTL or, beyond maxBytes, until they are the least
// recently used. A server without a shared store keeps its macro-tools in
// its own decoded cache and uses this store for nonces and rate limits
// only. It is safe for concurrent use.
type Store struct {
	now func() time.Time

	mu  sync.Mutex
	lru *lru.Cache[string, memEntry] // encoded definitions, by id

	nonces nonceSet

	limiters *ratelimit.Buckets // Take's buckets (newRequestLimiters)
}

type memEntry struct {
	data    []byte
	expires time.Time
}

// New returns a Store whose macro-tools take at most maxBytes (default
// 64 MiB when <= 0), on the clock now.
func New(maxBytes int64, now func() time.Time) *Store {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	return &Store{now: now, lru: lru.New[string, memEntry](maxBytes),
		limiters: newRequestLimiters()}
}

// PutMacros stores each definition, replacing an equal id (identical
// evaluations share ids and refresh retention), then evicts expired and
// least recently used entries; the entries just stored stay.
func (c *Store) PutMacros(_ context.Context, macros []store.Macro) error {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range macros {
		c.lru.Add(m.ID, memEntry{data: m.Data, expires: now.Add(m.TTL)}, int64(len(m.Data)))
	}
	for c.lru.Len() > len(macros) {
		id, e, _ := c.lru.Oldest()
		if e.expires.After(now) {
			break
		}
		c.lru.Remove(id)
	}
	c.lru.Trim(len(macros))
	return nil
}

// GetMacro returns the stored definition, or nil when unknown, evicted or
// past its TTL.
func (c *Store) GetMacro(_ context.Context, id string) ([]byte, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(id)
	if !ok {
		return nil, nil
	}
	if !e.expires.After(now) {
		c.lru.Remove(id)
		return nil, nil
	}
	return e.data, nil
}

// MacroStats reports entries and bytes.
func (c *Store) MacroStats() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.lru.Bytes()
}

// UseNonce records nonce until ttl passes; false when already recorded.
func (c *Store) UseNonce(_ context.Context, nonce string, ttl time.Duration) (bool, error) {
	return c.nonces.use(nonce, c.now(), ttl), nil
}

// Take applies a token bucket per key, in bounded memory (see
// newRequestLimiters).
func (c *Store) Take(_ context.Context, key string, limit store.RateLimit, now time.Time) (time.Duration, error) {
	return c.limiters.Take(key, ratelimit.Limit{PerSecond: limit.PerSecond, Burst: limit.Burst}, now), nil
}

// requestLimiterKeys bounds the keys (identities, anonymous clients) whose
// request rate the memory store remembers (the server's Options.RateLimit): about 11
// MB when full.
const requestLimiterKeys = 100_000

// newRequestLimiters returns the memory store's request-rate buckets. A
// bucket goes once it is full again; at capacity the bucket used least
// recently makes room, so a new caller is never refused for lack of room
// and a flood of new keys cannot reset the bucket of a caller that keeps
// sending (issue 30: the map used to be cleared wholesale at 100,000
// keys).
func newRequestLimiters() *ratelimit.Buckets {
	return ratelimit.New(requestLimiterKeys, ratelimit.EvictOldest)
}

var _ store.Store = (*Store)(nil)
var _ store.Stats = (*Store)(nil)
