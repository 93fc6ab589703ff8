// Package macros keeps synthesized macro-tools: the definition (Def) as
// the rules derived it, its store record (Encode, Decode: the versioned
// store.Record, whose unknown versions are refused), the decoded cache in
// front of any store (Cache, byte-weighted, counted in real memory) and
// the memory accounting the caches use. It knows the kernel's tool type,
// the protocol layer and the store contract; never the server.
package macros

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/lru"
	"github.com/manglecp/manglecp/internal/schema"
	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/store"
)

// Def is a synthesized macro-tool kept for invocation: the tool as the
// rules derived it and the facts it was built from. A definition is never
// changed once built (only its compiled schema is filled in, once); a
// later identical evaluation builds a new one under the same id.
type Def struct {
	ID      string
	Tool    kernel.Tool
	Intent  protocol.Intent
	Facts   []protocol.Fact
	Schema  map[string]any // the input schema
	Output  map[string]any // the action's output schema
	Created time.Time
	Expires time.Time // retention: max(validity window, MacroTTL)
	Size    int64     // memory, for the cache's bound
	Owner   *Owner    // who evaluated it; with auth on, only they may invoke it

	compileOnce sync.Once
	compiled    *schema.Schema
	compileErr  error
}

// Owner is the caller that evaluated a definition.
type Owner struct {
	Name      string
	Anonymous bool
}

// Validator compiles the input schema once per definition.
func (d *Def) Validator() (*schema.Schema, error) {
	d.compileOnce.Do(func() {
		d.compiled, d.compileErr = schema.Compile(d.Schema, schema.Limits{})
	})
	return d.compiled, d.compileErr
}

// Cache keeps decoded definitions, in front of the shared store when
// there is one (Options.Store): the replica that evaluated a macro-tool
// invokes it without decoding, and one that decoded it once does not
// again. Without a shared store the cache is where macro-tools live.
// Definitions are kept until their retention ends or, beyond maxBytes
// (the server's Options.MacroCacheBytes, counted in real memory: Def.Size), until
// they are the least recently used; the definitions of one evaluation are
// stored together and stay together.
// It is safe for concurrent use.
type Cache struct {
	// Shared is the store behind the cache; nil: this process only.
	Shared store.Store

	mu  sync.Mutex
	lru *lru.Cache[string, *Def]
}

// NewCache returns a cache of at most maxBytes of definitions in front of
// shared (nil: none).
func NewCache(shared store.Store, maxBytes int64) *Cache {
	return &Cache{Shared: shared, lru: lru.New[string, *Def](maxBytes)}
}

// Put keeps defs, replacing equal ids (identical evaluations share ids and
// refresh retention), then drops expired and least recently used
// definitions, never those of defs.
func (c *Cache) Put(defs []*Def, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range defs {
		c.lru.Add(d.ID, d, d.Size)
	}
	for c.lru.Len() > len(defs) {
		id, d, _ := c.lru.Oldest()
		if d.Expires.After(now) {
			break
		}
		c.lru.Remove(id)
	}
	c.lru.Trim(len(defs))
}

// Get returns the definition of id unless it is past its retention.
func (c *Cache) Get(id string, now time.Time) *Def {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.lru.Get(id)
	if !ok {
		return nil
	}
	if !d.Expires.After(now) {
		c.lru.Remove(id)
		return nil
	}
	return d
}

// Stats reports the definitions held and their bytes.
func (c *Cache) Stats() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.lru.Bytes()
}

// Encode encodes definitions as store records. Definitions of one
// evaluation share their facts, which are encoded once.
func Encode(defs []*Def, now time.Time) ([]store.Macro, error) {
	out := make([]store.Macro, 0, len(defs))
	var lastFacts []protocol.Fact
	var factsJSON json.RawMessage
	for _, d := range defs {
		if factsJSON == nil || !sameFacts(d.Facts, lastFacts) {
			raw, err := json.Marshal(d.Facts)
			if err != nil {
				return nil, fmt.Errorf("encoding facts of %s: %w", d.ID, err)
			}
			factsJSON, lastFacts = raw, d.Facts
		}
		raw, err := store.EncodeRecord(toRecord(d, factsJSON))
		if err != nil {
			return nil, fmt.Errorf("encoding macro-tool %s: %w", d.ID, err)
		}
		out = append(out, store.Macro{ID: d.ID, Data: raw, TTL: max(d.Expires.Sub(now), time.Second)})
	}
	return out, nil
}

func sameFacts(a, b []protocol.Fact) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Decode decodes the record stored under id. A record of another
// version, or one that names another id, is rejected (store.ErrRejected).
func Decode(raw []byte, id string) (*Def, error) {
	r, err := store.DecodeRecord(raw)
	if err != nil {
		return nil, err
	}
	if r.ID != id {
		return nil, fmt.Errorf("%w: the record under %s is %s", store.ErrRejected, protocol.Clip(id), protocol.Clip(r.ID))
	}
	var facts []protocol.Fact
	if len(r.Facts) > 0 {
		if err := json.Unmarshal(r.Facts, &facts); err != nil {
			return nil, fmt.Errorf("%w: facts: %v", store.ErrRejected, err)
		}
	}
	d := &Def{ID: r.ID, Tool: fromRecordTool(r.Tool), Intent: r.Intent, Facts: facts, Schema: r.Schema, Output: r.Output,
		Created: r.Created, Expires: r.Expires}
	if r.Owner != "" {
		d.Owner = &Owner{Name: r.Owner, Anonymous: r.OwnerAnonymous}
	}
	d.Size = decodedSize(d)
	return d, nil
}

func toRecord(d *Def, facts json.RawMessage) *store.Record {
	t := d.Tool
	r := &store.Record{ID: d.ID, Intent: d.Intent, Facts: facts, Schema: d.Schema, Output: d.Output, Created: d.Created, Expires: d.Expires,
		Tool: store.Tool{Name: t.Name, Score: t.Score, Phase: t.Phase, Description: t.Description, Summary: t.Summary,
			Action: t.Action, Instructions: t.Instructions, SideEffects: t.SideEffects,
			RequiresConfirmation: t.RequiresConfirmation, Reversible: t.Reversible, Idempotent: t.Idempotent,
			Evidence: t.Evidence, Skills: t.Skills, ValidFrom: t.ValidFrom, ValidUntil: t.ValidUntil}}
	for _, p := range t.Params {
		r.Tool.Params = append(r.Tool.Params, store.Param{Name: p.Name, Type: p.Type, Description: p.Description,
			Required: p.Required, Enum: p.Enum, Default: p.Default})
	}
	for _, p := range t.Pairs {
		r.Tool.Pairs = append(r.Tool.Pairs, store.Pair{Param: p.Param, Value: p.Value, Other: p.Other, OtherValue: p.OtherValue})
	}
	for _, n := range t.NextIntents {
		r.Tool.NextIntents = append(r.Tool.NextIntents, store.NextIntent{Name: n.Name, Description: n.Description})
	}
	for _, res := range t.Resources {
		r.Tool.Resources = append(r.Tool.Resources, store.Resource{URI: res.URI, Relevance: res.Relevance, Priority: res.Priority})
	}
	if d.Owner != nil {
		r.Owner, r.OwnerAnonymous = d.Owner.Name, d.Owner.Anonymous
	}
	return r
}

func fromRecordTool(t store.Tool) kernel.Tool {
	k := kernel.Tool{Name: t.Name, Score: t.Score, Phase: t.Phase, Description: t.Description, Summary: t.Summary,
		Action: t.Action, Instructions: t.Instructions, SideEffects: t.SideEffects,
		RequiresConfirmation: t.RequiresConfirmation, Reversible: t.Reversible, Idempotent: t.Idempotent,
		Evidence: t.Evidence, Skills: t.Skills, ValidFrom: t.ValidFrom, ValidUntil: t.ValidUntil}
	for _, p := range t.Params {
		k.Params = append(k.Params, kernel.Param{Name: p.Name, Type: p.Type, Description: p.Description,
			Required: p.Required, Enum: p.Enum, Default: p.Default})
	}
	for _, p := range t.Pairs {
		k.Pairs = append(k.Pairs, kernel.ParamPair{Param: p.Param, Value: p.Value, Other: p.Other, OtherValue: p.OtherValue})
	}
	for _, n := range t.NextIntents {
		k.NextIntents = append(k.NextIntents, kernel.NextIntent{Name: n.Name, Description: n.Description})
	}
	for _, res := range t.Resources {
		k.Resources = append(k.Resources, kernel.Resource{URI: res.URI, Relevance: res.Relevance, Priority: res.Priority})
	}
	return k
}
