package manglecp

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/manglecp/manglecp/internal/kernel"
	"github.com/manglecp/manglecp/internal/ratelimit"
	"github.com/manglecp/manglecp/protocol"
)

// macroDef is a synthesized macro-tool kept for invocation: the tool as the
// rules derived it and the facts it was built from.
type macroDef struct {
	id      string
	tool    kernel.Tool
	intent  protocol.Intent
	facts   []protocol.Fact
	schema  map[string]any
	output  map[string]any
	created time.Time
	expires time.Time // retention: max(validity window, MacroTTL)
	size    int64
	caller  *caller // who evaluated it; with auth on, only they may invoke it

	compileOnce sync.Once
	compiled    *jsonschema.Schema
	compileErr  error
}

// validator compiles the input schema once per definition.
func (d *macroDef) validator() (*jsonschema.Schema, error) {
	d.compileOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		raw, err := json.Marshal(d.schema)
		if err != nil {
			d.compileErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytesReader(raw))
		if err != nil {
			d.compileErr = err
			return
		}
		if err := c.AddResource("mem://input.json", doc); err != nil {
			d.compileErr = err
			return
		}
		d.compiled, d.compileErr = c.Compile("mem://input.json")
	})
	return d.compiled, d.compileErr
}

// macroRecord is a macroDef as stored: everything invocation needs, so a
// replica that did not evaluate it invokes it exactly as the one that did
// (owner, validity window, confirmation, schema, facts).
type macroRecord struct {
	ID      string          `json:"id"`
	Tool    kernel.Tool     `json:"tool"`
	Intent  protocol.Intent `json:"intent"`
	Facts   json.RawMessage `json:"facts"`
	Schema  map[string]any  `json:"schema"`
	Output  map[string]any  `json:"output,omitempty"`
	Created time.Time       `json:"created"`
	Expires time.Time       `json:"expires"`
	// Owner is the identity that evaluated the tool; OwnerAnonymous is set
	// when authentication was off.
	Owner          string `json:"owner,omitempty"`
	OwnerAnonymous bool   `json:"owner_anonymous,omitempty"`
}

// encodeMacros encodes definitions for the store. Definitions of one
// evaluation share their facts, which are encoded once.
func encodeMacros(defs []*macroDef, now time.Time) ([]StoredMacro, error) {
	out := make([]StoredMacro, 0, len(defs))
	var lastFacts []protocol.Fact
	var factsJSON json.RawMessage
	for _, d := range defs {
		if factsJSON == nil || !sameFacts(d.facts, lastFacts) {
			raw, err := json.Marshal(d.facts)
			if err != nil {
				return nil, fmt.Errorf("encoding facts of %s: %w", d.id, err)
			}
			factsJSON, lastFacts = raw, d.facts
		}
		r := macroRecord{ID: d.id, Tool: d.tool, Intent: d.intent, Facts: factsJSON, Schema: d.schema, Output: d.output,
			Created: d.created, Expires: d.expires}
		if d.caller != nil {
			r.Owner, r.OwnerAnonymous = d.caller.name, d.caller.anonymous
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encoding macro-tool %s: %w", d.id, err)
		}
		out = append(out, StoredMacro{ID: d.id, Data: raw, TTL: max(d.expires.Sub(now), time.Second), def: d})
	}
	return out, nil
}

func sameFacts(a, b []protocol.Fact) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// decodeMacro decodes a stored definition. Numbers decode as json.Number,
// as arguments from the wire do.
func decodeMacro(raw []byte) (*macroDef, error) {
	var r macroRecord
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	var facts []protocol.Fact
	if len(r.Facts) > 0 {
		if err := json.Unmarshal(r.Facts, &facts); err != nil {
			return nil, fmt.Errorf("facts: %w", err)
		}
	}
	d := &macroDef{id: r.ID, tool: r.Tool, intent: r.Intent, facts: facts, schema: r.Schema, output: r.Output,
		created: r.Created, expires: r.Expires, size: int64(len(raw))}
	if r.Owner != "" {
		d.caller = &caller{name: r.Owner, anonymous: r.OwnerAnonymous}
	}
	return d, nil
}

// saveMacros stores the definitions an evaluation synthesized.
func (s *Server) saveMacros(ctx context.Context, defs []*macroDef) error {
	if len(defs) == 0 {
		return nil
	}
	ctx, end := s.span(ctx, "manglecp.store.put_macros")
	defer end()
	var recs []StoredMacro
	if _, inProcess := s.store.(*memoryStore); inProcess {
		// Kept decoded in this process: nothing to encode.
		for _, d := range defs {
			recs = append(recs, StoredMacro{ID: d.id, TTL: max(d.expires.Sub(s.now()), time.Second), def: d})
		}
	} else {
		var err error
		if recs, err = encodeMacros(defs, s.now()); err != nil {
			return err
		}
	}
	if err := s.store.PutMacros(ctx, recs); err != nil {
		s.metrics.storeError("put_macros")
		return &storeError{op: "storing macro-tools", cause: err}
	}
	for _, r := range recs {
		s.metrics.macroStored(int(r.size()))
	}
	return nil
}

// loadMacro returns the definition of id, or nil when it is unknown,
// evicted or past its retention on this server's clock.
func (s *Server) loadMacro(ctx context.Context, id string, now time.Time) (*macroDef, error) {
	ctx, end := s.span(ctx, "manglecp.store.get_macro")
	defer end()
	if ms, ok := s.store.(*memoryStore); ok {
		// In one process the decoded definition is kept: no decoding, and
		// its compiled input schema is reused.
		if d := ms.getDef(id); d != nil && d.expires.After(now) {
			s.metrics.macroLookup("hit")
			return d, nil
		}
		s.metrics.macroLookup("miss")
		return nil, nil
	}
	raw, err := s.store.GetMacro(ctx, id)
	if err != nil {
		s.metrics.storeError("get_macro")
		s.metrics.macroLookup("error")
		return nil, &storeError{op: "loading a macro-tool", cause: err}
	}
	if raw == nil {
		s.metrics.macroLookup("miss")
		return nil, nil
	}
	d, err := decodeMacro(raw)
	if err != nil {
		s.metrics.macroLookup("error")
		return nil, fmt.Errorf("decoding stored macro-tool %s: %w", id, err)
	}
	if d.id != id || !d.expires.After(now) {
		s.metrics.macroLookup("miss")
		return nil, nil
	}
	s.metrics.macroLookup("hit")
	return d, nil
}

// memoryStore is the default [Store]: one process's memory. Macro-tools are
// kept until their TTL or, beyond maxBytes, until they are the least
// recently used.
type memoryStore struct {
	now      func() time.Time
	maxBytes int64

	mu    sync.Mutex
	bytes int64
	lru   *list.List // front = most recently used; values *memEntry
	byID  map[string]*list.Element

	nonceMu sync.Mutex
	nonces  map[string]time.Time // nonce -> expiry

	limiters *ratelimit.Buckets // Take's buckets (limiter.go)
}

type memEntry struct {
	id      string
	data    []byte
	def     *macroDef // set when a server of this process stored it
	expires time.Time
}

// NewMemoryStore returns the in-memory [Store] every server uses unless
// Options.Store names another: state is not shared between processes.
// maxBytes bounds the stored macro-tools (default 64 MiB when <= 0).
func NewMemoryStore(maxBytes int64) Store { return newMemoryStore(maxBytes, time.Now) }

func newMemoryStore(maxBytes int64, now func() time.Time) *memoryStore {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	return &memoryStore{now: now, maxBytes: maxBytes, lru: list.New(), byID: map[string]*list.Element{},
		nonces: map[string]time.Time{}, limiters: newRequestLimiters()}
}

// PutMacros stores each definition, replacing an equal id (identical
// evaluations share ids and refresh retention), then evicts expired and
// least recently used entries; the entries just stored stay.
func (c *memoryStore) PutMacros(_ context.Context, macros []StoredMacro) error {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := map[*memEntry]bool{}
	for _, m := range macros {
		e := &memEntry{id: m.ID, data: m.Data, def: m.def, expires: now.Add(m.TTL)}
		keep[e] = true
		if el, ok := c.byID[m.ID]; ok {
			c.bytes -= el.Value.(*memEntry).size()
			el.Value = e
			c.lru.MoveToFront(el)
		} else {
			c.byID[m.ID] = c.lru.PushFront(e)
		}
		c.bytes += e.size()
	}
	for el := c.lru.Back(); el != nil && (c.bytes > c.maxBytes || !el.Value.(*memEntry).expires.After(now)); {
		prev := el.Prev()
		if !keep[el.Value.(*memEntry)] {
			c.remove(el)
		}
		el = prev
	}
	return nil
}

// GetMacro returns the stored definition, or nil when unknown, evicted or
// past its TTL. A definition a server of this process stored decoded is
// encoded on demand.
func (c *memoryStore) GetMacro(_ context.Context, id string) ([]byte, error) {
	e := c.get(id)
	if e == nil {
		return nil, nil
	}
	if e.data == nil && e.def != nil {
		recs, err := encodeMacros([]*macroDef{e.def}, c.now())
		if err != nil {
			return nil, err
		}
		return recs[0].Data, nil
	}
	return e.data, nil
}

// getDef returns the decoded definition of id, decoding it only when it
// was stored without one.
func (c *memoryStore) getDef(id string) *macroDef {
	e := c.get(id)
	if e == nil {
		return nil
	}
	if e.def != nil {
		return e.def
	}
	d, err := decodeMacro(e.data)
	if err != nil || d.id != id {
		return nil
	}
	return d
}

func (c *memoryStore) get(id string) *memEntry {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return nil
	}
	e := el.Value.(*memEntry)
	if !e.expires.After(now) {
		c.remove(el)
		return nil
	}
	c.lru.MoveToFront(el)
	return e
}

func (c *memoryStore) remove(el *list.Element) {
	e := el.Value.(*memEntry)
	c.lru.Remove(el)
	delete(c.byID, e.id)
	c.bytes -= e.size()
}

// size is the bytes an entry counts against the bound: its encoding, or
// the estimate of a definition kept decoded.
func (e *memEntry) size() int64 { return (&StoredMacro{Data: e.data, def: e.def}).size() }

func (m *StoredMacro) size() int64 {
	if m.Data == nil && m.def != nil {
		return m.def.size
	}
	return int64(len(m.Data))
}

// MacroStats reports entries and bytes.
func (c *memoryStore) MacroStats() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}

// UseNonce records nonce until ttl passes; false when already recorded.
func (c *memoryStore) UseNonce(_ context.Context, nonce string, ttl time.Duration) (bool, error) {
	now := c.now()
	c.nonceMu.Lock()
	defer c.nonceMu.Unlock()
	for n, e := range c.nonces {
		if !now.Before(e) {
			delete(c.nonces, n)
		}
	}
	if _, seen := c.nonces[nonce]; seen {
		return false, nil
	}
	c.nonces[nonce] = now.Add(ttl)
	return true, nil
}

// Take applies a token bucket per key, in bounded memory (see
// newRequestLimiters).
func (c *memoryStore) Take(_ context.Context, key string, limit RateLimit, now time.Time) (time.Duration, error) {
	return c.limiters.Take(key, ratelimit.Limit{PerSecond: limit.PerSecond, Burst: limit.Burst}, now), nil
}
