// Package redis is a [store.Store] in Redis or Valkey, so that several
// replicas of a MangleCP server behind a load balancer share macro-tools
// (evaluate on one, invoke on any), confirmation-token nonces (a token is
// accepted once across all replicas) and per-identity rate limits.
//
// Macro-tools expire with their TTL (validity.expires_at of the tool, at
// least the server's MacroTTL) and are bounded in bytes like the in-memory
// store: beyond MaxBytes the least recently used are evicted. Every
// operation is one round trip (a Lua script where it must be atomic). The
// store needs a single Redis or Valkey node (or a primary with replicas),
// not Redis Cluster: its scripts touch several keys.
//
// Replicas trust only the macro-tools they can authenticate: each is
// stored sealed ([store.Seal]) under the key every replica shares
// (Options.Key), bound to its Redis key, and a record that does not verify
// (changed, planted, copied to another key, written under another key) is
// refused: GetMacro fails with an error matching [store.ErrRejected],
// which the server answers as macro_not_found and logs. Rate limits run on
// Redis's clock (TIME), not on each replica's.
package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/manglecp/manglecp/store"
)

// Options configure [New].
type Options struct {
	// URL is redis://[user:password@]HOST:PORT/DB (rediss:// for TLS).
	URL string
	// Prefix starts every key; default "manglecp:". Deployments sharing
	// one Redis database need distinct prefixes.
	Prefix string
	// MaxBytes bounds the macro-tool definitions held; default 64 MiB.
	MaxBytes int64
	// Timeout bounds one operation (dial, read, write); default 1 s, so a
	// dead Redis is reported quickly instead of stalling requests.
	Timeout time.Duration
	// Key authenticates the stored macro-tools (HMAC-SHA256, see
	// [store.Seal]): every replica of the deployment must have the same
	// one, at least store.MinKeyBytes long; anyone who can write Redis
	// without it cannot make a replica accept a record. Required.
	Key []byte
}

// Store is the Redis implementation of [store.Store].
type Store struct {
	c        *goredis.Client
	prefix   string
	maxBytes int64
	key      []byte
}

var _ store.Store = (*Store)(nil)

// New connects to Redis (it pings once and fails when Redis does not
// answer, so start-up fails loudly on a wrong address). It fails without
// a Key of at least store.MinKeyBytes, or with one [store.CheckKey] refuses.
func New(ctx context.Context, o Options) (*Store, error) {
	if len(o.Key) < store.MinKeyBytes {
		return nil, fmt.Errorf("redis store: the key that authenticates stored macro-tools must be at least %d bytes, shared by every replica", store.MinKeyBytes)
	}
	if err := store.CheckKey(o.Key); err != nil {
		return nil, fmt.Errorf("redis store: the key that authenticates stored macro-tools is not fit: %v; use a random one (for example openssl rand -base64 24), shared by every replica", err)
	}
	ro, err := goredis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("redis store: %w", err)
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
	ro.MaxRetries = 1
	if o.Prefix == "" {
		o.Prefix = "manglecp:"
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	s := &Store{c: goredis.NewClient(ro), prefix: o.Prefix, maxBytes: o.MaxBytes, key: append([]byte(nil), o.Key...)}
	if err := s.c.Ping(ctx).Err(); err != nil {
		_ = s.c.Close()
		return nil, fmt.Errorf("redis store: %s does not answer: %w", redactedAddr(ro), err)
	}
	return s, nil
}

func redactedAddr(o *goredis.Options) string { return fmt.Sprintf("%s db %d", o.Addr, o.DB) }

// SetLogger sends the Redis client's own messages (connection pool
// trouble, reconnects) to logger at warn level instead of the standard
// log package. The client's logger is process-wide: a program calls this
// once, at start-up.
func SetLogger(logger *slog.Logger) { goredis.SetLogger(slogAdapter{logger}) }

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(ctx context.Context, format string, v ...any) {
	a.l.WarnContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}

// Close closes the connections.
func (s *Store) Close() error { return s.c.Close() }

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error { return s.c.Ping(ctx).Err() }

// Keys: {prefix}m:{id} holds a definition; {prefix}lru is a sorted set of
// ids by last use (a counter, {prefix}tick); {prefix}sizes a hash of id -> bytes; {prefix}bytes
// the total of sizes. Entries of expired definitions stay in lru, sizes and
// bytes until evicted, so the counted bytes never undercount what is held.
func (s *Store) macroKey(id string) string { return s.prefix + "m:" + id }

// putScript stores one definition and evicts least recently used ones
// beyond the byte bound (never the one just stored).
// KEYS: macro, lru, sizes, bytes, tick. ARGV: data, ttl ms, unused, max bytes, id, macro key prefix.
var putScript = goredis.NewScript(`
local size = string.len(ARGV[1])
local old = redis.call('HGET', KEYS[3], ARGV[5])
if old then redis.call('DECRBY', KEYS[4], old) end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[3], ARGV[5], size)
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[5]), ARGV[5])
local total = redis.call('INCRBY', KEYS[4], size)
local max = tonumber(ARGV[4])
while total > max do
  local victim = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not victim or victim == ARGV[5] then break end
  local vs = tonumber(redis.call('HGET', KEYS[3], victim) or '0')
  redis.call('ZREM', KEYS[2], victim)
  redis.call('HDEL', KEYS[3], victim)
  redis.call('DEL', ARGV[6] .. victim)
  total = redis.call('DECRBY', KEYS[4], vs)
end
return total
`)

// getScript returns a definition and marks it used.
// KEYS: macro, lru, tick. ARGV: id.
var getScript = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then redis.call('ZADD', KEYS[2], 'XX', redis.call('INCR', KEYS[3]), ARGV[1]) end
return v
`)

// takeScript is a GCRA token bucket: the key holds the theoretical arrival
// time (ms). It returns 0 when allowed, else the ms to wait. The clock is
// Redis's own (TIME), so replicas whose clocks differ share one bucket
// correctly (Redis 5 and later replicate a script's effects, so reading
// the clock in a script that writes is allowed).
// KEYS: bucket. ARGV: emission interval ms, burst.
var takeScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local allowAt = tat + interval - burst * interval
if now < allowAt then return math.ceil(allowAt - now) end
local new = tat + interval
redis.call('SET', KEYS[1], tostring(new), 'PX', math.ceil(new - now) + 1000)
return 0
`)

// PutMacros stores definitions, sealed under the store's key for their
// Redis keys, one script call each, in one pipeline.
func (s *Store) PutMacros(ctx context.Context, macros []store.Macro) error {
	sealed := make([][]byte, len(macros))
	for i, m := range macros {
		sealed[i] = store.Seal(s.key, s.macroKey(m.ID), m.Data)
	}
	pipe := s.c.Pipeline()
	for i, m := range macros {
		ttl := max(m.TTL.Milliseconds(), 1)
		putScript.Run(ctx, pipe, s.putKeys(m.ID),
			sealed[i], ttl, 0, s.maxBytes, m.ID, s.prefix+"m:")
	}
	_, err := pipe.Exec(ctx)
	if isNoScript(err) { // scripts not loaded yet (new or flushed Redis): load and retry once
		for _, sc := range []*goredis.Script{putScript, getScript, takeScript} {
			if err := sc.Load(ctx, s.c).Err(); err != nil {
				return err
			}
		}
		pipe = s.c.Pipeline()
		for i, m := range macros {
			putScript.EvalSha(ctx, pipe, s.putKeys(m.ID),
				sealed[i], max(m.TTL.Milliseconds(), 1), 0, s.maxBytes, m.ID, s.prefix+"m:")
		}
		_, err = pipe.Exec(ctx)
	}
	return err
}

func (s *Store) putKeys(id string) []string {
	return []string{s.macroKey(id), s.prefix + "lru", s.prefix + "sizes", s.prefix + "bytes", s.prefix + "tick"}
}

func isNoScript(err error) bool {
	return err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT")
}

// GetMacro returns the definition of id, or nil when absent. A stored
// value whose seal does not verify for this key fails with an error
// matching [store.ErrRejected].
func (s *Store) GetMacro(ctx context.Context, id string) ([]byte, error) {
	key := s.macroKey(id)
	v, err := getScript.Run(ctx, s.c, []string{key, s.prefix + "lru", s.prefix + "tick"}, id).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	str, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("redis store: unexpected reply %T", v)
	}
	return store.Open(s.key, key, []byte(str))
}

// UseNonce records nonce with SET NX for ttl.
func (s *Store) UseNonce(ctx context.Context, nonce string, ttl time.Duration) (bool, error) {
	err := s.c.SetArgs(ctx, s.prefix+"n:"+nonce, "1", goredis.SetArgs{Mode: "NX", TTL: max(ttl, time.Millisecond)}).Err()
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	return err == nil, err
}

// Take applies the token bucket of key (GCRA) across all replicas, on
// Redis's clock: now is not used.
func (s *Store) Take(ctx context.Context, key string, limit store.RateLimit, _ time.Time) (time.Duration, error) {
	if limit.PerSecond <= 0 {
		return 0, nil
	}
	interval := 1000 / limit.PerSecond
	if math.IsInf(interval, 0) || math.IsNaN(interval) {
		return 0, nil
	}
	ms, err := takeScript.Run(ctx, s.c, []string{s.prefix + "r:" + key}, interval, max(1, limit.Burst)).Int64()
	if err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// MacroBytes reports the bytes the store counts against MaxBytes.
func (s *Store) MacroBytes(ctx context.Context) (int64, error) {
	n, err := s.c.Get(ctx, s.prefix+"bytes").Int64()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	return n, err
}
