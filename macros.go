package manglecp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/manglecp/manglecp/internal/kernel"
	"github.com/manglecp/manglecp/internal/lru"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/store"
)

// macroDef is a synthesized macro-tool kept for invocation: the tool as the
// rules derived it and the facts it was built from. A definition is never
// changed once built; a later identical evaluation builds a new one under
// the same id.
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

// macroCache keeps decoded definitions, in front of the shared store when
// there is one (Options.Store): the replica that evaluated a macro-tool
// invokes it without decoding, and one that decoded it once does not
// again. Without a shared store the cache is where macro-tools live.
// Definitions are kept until their retention ends or, beyond maxBytes
// (Options.MacroCacheBytes, counted in real memory: macroDef.size), until
// they are the least recently used; the definitions of one evaluation are
// stored together and stay together.
type macroCache struct {
	shared store.Store // nil: this process only

	mu  sync.Mutex
	lru *lru.Cache[string, *macroDef]
}

func newMacroCache(shared store.Store, maxBytes int64) *macroCache {
	return &macroCache{shared: shared, lru: lru.New[string, *macroDef](maxBytes)}
}

// put keeps defs, replacing equal ids (identical evaluations share ids and
// refresh retention), then drops expired and least recently used
// definitions, never those of defs.
func (c *macroCache) put(defs []*macroDef, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range defs {
		c.lru.Add(d.id, d, d.size)
	}
	for c.lru.Len() > len(defs) {
		id, d, _ := c.lru.Oldest()
		if d.expires.After(now) {
			break
		}
		c.lru.Remove(id)
	}
	c.lru.Trim(len(defs))
}

// get returns the definition of id unless it is past its retention.
func (c *macroCache) get(id string, now time.Time) *macroDef {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.lru.Get(id)
	if !ok {
		return nil
	}
	if !d.expires.After(now) {
		c.lru.Remove(id)
		return nil
	}
	return d
}

func (c *macroCache) stats() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.lru.Bytes()
}

// saveMacros stores the definitions an evaluation synthesized: in the
// shared store, encoded, when there is one, and decoded in this process.
func (s *Server) saveMacros(ctx context.Context, defs []*macroDef) error {
	if len(defs) == 0 {
		return nil
	}
	ctx, end := s.span(ctx, "manglecp.store.put_macros")
	defer end()
	if s.macros.shared != nil {
		recs, err := encodeMacros(defs, s.now())
		if err != nil {
			return err
		}
		if err := s.macros.shared.PutMacros(ctx, recs); err != nil {
			s.metrics.storeError("put_macros")
			return &storeError{op: "storing macro-tools", cause: err}
		}
		for _, r := range recs {
			s.metrics.macroStored(len(r.Data))
		}
	} else {
		for _, d := range defs {
			s.metrics.macroStored(int(d.size))
		}
	}
	s.macros.put(defs, s.now())
	return nil
}

// loadMacro returns the definition of id, or nil when it is unknown,
// evicted or past its retention on this server's clock. A stored record
// this replica cannot authenticate or does not understand is treated as
// unknown, and logged.
func (s *Server) loadMacro(ctx context.Context, id string, now time.Time) (*macroDef, error) {
	ctx, end := s.span(ctx, "manglecp.store.get_macro")
	defer end()
	if d := s.macros.get(id, now); d != nil {
		s.metrics.macroLookup("hit")
		return d, nil
	}
	if s.macros.shared == nil {
		s.metrics.macroLookup("miss")
		return nil, nil
	}
	raw, err := s.macros.shared.GetMacro(ctx, id)
	var d *macroDef
	if err == nil && raw != nil {
		d, err = decodeMacro(raw, id)
	}
	if errors.Is(err, store.ErrRejected) {
		s.metrics.macroLookup("rejected")
		rid, _ := ctx.Value(requestIDKey{}).(string)
		s.log.Warn("stored macro-tool rejected: answered macro_not_found", "request_id", rid,
			"macro_id", protocol.Clip(id), "reason", err.Error())
		return nil, nil
	}
	if err != nil {
		s.metrics.storeError("get_macro")
		s.metrics.macroLookup("error")
		return nil, &storeError{op: "loading a macro-tool", cause: err}
	}
	if d == nil || !d.expires.After(now) {
		s.metrics.macroLookup("miss")
		return nil, nil
	}
	s.macros.put([]*macroDef{d}, now)
	s.metrics.macroLookup("hit")
	return d, nil
}

// encodeMacros encodes definitions as store records. Definitions of one
// evaluation share their facts, which are encoded once.
func encodeMacros(defs []*macroDef, now time.Time) ([]store.Macro, error) {
	out := make([]store.Macro, 0, len(defs))
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
		raw, err := store.EncodeRecord(toRecord(d, factsJSON))
		if err != nil {
			return nil, fmt.Errorf("encoding macro-tool %s: %w", d.id, err)
		}
		out = append(out, store.Macro{ID: d.id, Data: raw, TTL: max(d.expires.Sub(now), time.Second)})
	}
	return out, nil
}

func sameFacts(a, b []protocol.Fact) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// decodeMacro decodes the record stored under id. A record of another
// version, or one that names another id, is rejected (store.ErrRejected).
func decodeMacro(raw []byte, id string) (*macroDef, error) {
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
	d := &macroDef{id: r.ID, tool: fromRecordTool(r.Tool), intent: r.Intent, facts: facts, schema: r.Schema, output: r.Output,
		created: r.Created, expires: r.Expires}
	if r.Owner != "" {
		d.caller = &caller{name: r.Owner, anonymous: r.OwnerAnonymous}
	}
	d.size = decodedMacroSize(d)
	return d, nil
}

func toRecord(d *macroDef, facts json.RawMessage) *store.Record {
	t := d.tool
	r := &store.Record{ID: d.id, Intent: d.intent, Facts: facts, Schema: d.schema, Output: d.output, Created: d.created, Expires: d.expires,
		Tool: store.Tool{Name: t.Name, Score: t.Score, Phase: t.Phase, Description: t.Description, Summary: t.Summary,
			Action: t.Action, Instructions: t.Instructions, SideEffects: t.SideEffects,
			RequiresConfirmation: t.RequiresConfirmation, Reversible: t.Reversible, Idempotent: t.Idempotent,
			Evidence: t.Evidence, Skills: t.Skills, ValidFrom: t.ValidFrom, ValidUntil: t.ValidUntil}}
	for _, p := range t.Params {
		r.Tool.Params = append(r.Tool.Params, store.Param{Name: p.Name, Type: p.Type, Description: p.Description,
			Required: p.Required, Enum: p.Enum, Default: p.Default})
	}
	for _, n := range t.NextIntents {
		r.Tool.NextIntents = append(r.Tool.NextIntents, store.NextIntent{Name: n.Name, Description: n.Description})
	}
	for _, res := range t.Resources {
		r.Tool.Resources = append(r.Tool.Resources, store.Resource{URI: res.URI, Relevance: res.Relevance, Priority: res.Priority})
	}
	if d.caller != nil {
		r.Owner, r.OwnerAnonymous = d.caller.name, d.caller.anonymous
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
	for _, n := range t.NextIntents {
		k.NextIntents = append(k.NextIntents, kernel.NextIntent{Name: n.Name, Description: n.Description})
	}
	for _, res := range t.Resources {
		k.Resources = append(k.Resources, kernel.Resource{URI: res.URI, Relevance: res.Relevance, Priority: res.Priority})
	}
	return k
}
