package manglecp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/lru"
	"github.com/manglecp/manglecp/internal/macros"
	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// The result cache answers an identical deterministic intent request
// without evaluating it again. Identical means the same payload bytes
// (intent, parameters, facts, eval_time, constraints and options), the same
// identity (name and permissions) and the same rule version. Deterministic
// means the request names its eval_time (neither absent nor "now": the
// server clock is not an input that repeats) and every external predicate
// of the domain is declared Deterministic (a predicate that reads the world
// may answer differently the next time). Anything else is evaluated every
// time. A hit re-stores the macro-tools of the answer for a full retention
// period, exactly as a new evaluation would, so a cached answer's macro_ids
// stay invokable as long as a fresh answer's would. The cache is per
// process; the macro-tools themselves are in the shared Store.
//
// An entry is the encoded payload of the answer, so its memory is the
// length of a byte slice and a few fixed headers, counted in real bytes
// (resultEntryOverhead; TestResultCacheAccounting checks it against the
// heap). Beyond Options.ResultCacheBytes the least recently used entries
// are evicted.
type resultCache struct {
	mu     sync.Mutex
	prog   *kernel.Program // the rule version every entry was computed with
	lru    *lru.Cache[resultKey, *resultEntry]
	hits   int64
	misses int64
}

type resultKey [sha256.Size]byte

// resultEntry is one cached answer: the payload with eval_duration_ms left
// out at split (it is written per answer), and the macro_ids of its
// macro-tools, whose definitions live in the macro-tool cache.
type resultEntry struct {
	data  []byte
	split int
	ids   []string
	size  int64
}

// resultEntryOverhead is the memory of an entry besides its payload and
// ids: the entry struct (64 bytes), its LRU node (two pointers, the key,
// the value and the size: 64) and its map slot (key, node pointer and the
// map's share of control bytes and load-factor slack, about 64).
// TestResultCacheAccounting checks the total against the heap.
const resultEntryOverhead = 64 + 64 + 64

func newResultCache(maxBytes int64) *resultCache {
	return &resultCache{lru: lru.New[resultKey, *resultEntry](maxBytes)}
}

// keyFor is the cache key of a request: a digest of the payload bytes and
// the caller's identity.
func keyFor(payload []byte, who *caller) resultKey {
	h := sha256.New()
	h.Write([]byte("manglecp result\x00"))
	h.Write([]byte(who.name))
	h.Write([]byte{0})
	if who.anonymous {
		h.Write([]byte("anonymous\x00"))
	}
	for _, p := range who.permissions {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	h.Write([]byte{1})
	h.Write(payload)
	var k resultKey
	h.Sum(k[:0])
	return k
}

// get returns the entry of key computed with prog, or nil.
func (c *resultCache) get(key resultKey, prog *kernel.Program) *resultEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(key)
	if !ok || c.prog != prog {
		c.misses++
		return nil
	}
	c.hits++
	return e
}

// put stores e under key for prog. A new rule version empties the cache
// first: no answer of old rules is ever served, and none pins an old
// program.
func (c *resultCache) put(key resultKey, e *resultEntry, prog *kernel.Program) {
	if e.size > c.lru.MaxBytes() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prog != prog {
		c.lru.Clear()
		c.prog = prog
	}
	c.lru.Put(key, e, e.size)
}

// stats reports entries, accounted bytes, hits and misses.
func (c *resultCache) stats() (entries int, bytes, hits, misses int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.lru.Bytes(), c.hits, c.misses
}

// cachedResult answers an intent request from the result cache, or returns
// nil when it is not there (the caller then evaluates it). It also returns
// the request's key, for rememberResult to store the answer under without
// hashing the payload again; nil when the cache is off.
func (s *Server) cachedResult(ctx context.Context, env *protocol.Envelope) (json.RawMessage, *resultKey) {
	if s.results == nil {
		return nil, nil
	}
	start := time.Now()
	who := callerFrom(ctx)
	key := keyFor(env.Payload, who)
	e := s.results.get(key, s.prog.Load())
	if e == nil {
		return nil, &key
	}
	// The answer's macro-tools must stay invokable for a full retention
	// period, as after a new evaluation. If the store has lost one (evicted,
	// expired, or unreachable), evaluate again: that stores them anew, or
	// reports the store's failure.
	now := s.now()
	fresh := make([]*macros.Def, len(e.ids))
	for i, id := range e.ids {
		m, err := s.loadMacro(ctx, id, now)
		if err != nil || m == nil {
			return nil, &key
		}
		def := &macros.Def{ID: m.ID, Tool: m.Tool, Intent: m.Intent, Facts: m.Facts, Schema: m.Schema, Output: m.Output,
			Created: now, Expires: now.Add(s.opts.MacroTTL), Size: m.Size, Owner: ownerRecord(who)}
		if t := m.Tool.ValidUntil; t != nil && t.After(def.Expires) {
			def.Expires = *t
		}
		fresh[i] = def
	}
	if err := s.saveMacros(ctx, fresh); err != nil {
		return nil, &key
	}
	ms := strconv.AppendInt(nil, time.Since(start).Milliseconds(), 10)
	out := make([]byte, 0, len(e.data)+len(ms))
	out = append(append(append(out, e.data[:e.split]...), ms...), e.data[e.split:]...)
	return out, &key
}

// rememberResult caches the answer of a deterministic request under key,
// the one cachedResult looked it up by (nil: the cache is off).
func (s *Server) rememberResult(key *resultKey, ev *evaluation, resp *protocol.IntentResponse) {
	if key == nil || !ev.fixedTime {
		return
	}
	ids := make([]string, len(resp.MacroTools))
	idBytes := int64(16 * len(ids))
	for i, t := range resp.MacroTools {
		ids[i] = t.MacroID
		idBytes += int64(len(t.MacroID))
	}
	cp := *resp
	cp.EvalDurationMS = 0
	enc, err := json.Marshal(&cp)
	if err != nil {
		return
	}
	// The first match is the field itself: only scalars are encoded
	// before it (TestEvalDurationPrecedesObjects).
	marker := []byte(`"eval_duration_ms":0`)
	i := bytes.Index(enc, marker)
	if i < 0 {
		return
	}
	split := i + len(marker) - 1
	// append allocates a whole size class and says so in cap, so the
	// accounting below counts what the allocator really handed out.
	data := append([]byte(nil), enc[:split]...)
	data = append(data[:split:split], enc[split+1:]...)
	e := &resultEntry{data: data, split: split, ids: ids}
	e.size = int64(cap(data)) + idBytes + resultEntryOverhead
	s.results.put(*key, e, ev.program)
}

// ResultCacheStats describe the result cache.
type ResultCacheStats struct {
	// Entries and Bytes are what the cache holds; Bytes counts real
	// memory (payload, ids and per-entry overhead).
	Entries int
	Bytes   int64
	// Hits and Misses count lookups since the server started.
	Hits, Misses int64
}

// ResultCacheStats reports the result cache (zero when it is disabled).
func (s *Server) ResultCacheStats() ResultCacheStats {
	if s.results == nil {
		return ResultCacheStats{}
	}
	e, b, h, m := s.results.stats()
	return ResultCacheStats{Entries: e, Bytes: b, Hits: h, Misses: m}
}

// deterministicExternals reports whether every external predicate of d
// gives equal answers to equal requests, so that answers may be cached.
func deterministicExternals(d Domain) bool {
	for _, e := range d.External {
		if !e.Deterministic {
			return false
		}
	}
	return true
}
