package manglecp

import (
	"container/list"
	"encoding/json"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/manglecp/manglecp/internal/kernel"
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

// macroCache holds definitions until they expire or, beyond maxBytes, until
// they are the least recently used. Evicted ids answer macro_not_found.
type macroCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	lru      *list.List // front = most recently used; values *macroDef
	byID     map[string]*list.Element
}

func newMacroCache(maxBytes int64) *macroCache {
	return &macroCache{maxBytes: maxBytes, lru: list.New(), byID: map[string]*list.Element{}}
}

// put stores d, replacing an equal id (identical evaluations share ids and
// refresh retention), then evicts expired and least recently used entries.
func (c *macroCache) put(d *macroDef, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[d.id]; ok {
		old := el.Value.(*macroDef)
		c.bytes -= old.size
		el.Value = d
		c.lru.MoveToFront(el)
	} else {
		c.byID[d.id] = c.lru.PushFront(d)
	}
	c.bytes += d.size
	for el := c.lru.Back(); el != nil && (c.bytes > c.maxBytes || !el.Value.(*macroDef).expires.After(now)); {
		prev := el.Prev()
		if el.Value.(*macroDef) != d {
			c.remove(el)
		}
		el = prev
	}
}

// get returns the definition of id, or nil when unknown, evicted or past
// its retention.
func (c *macroCache) get(id string, now time.Time) *macroDef {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return nil
	}
	d := el.Value.(*macroDef)
	if !d.expires.After(now) {
		c.remove(el)
		return nil
	}
	c.lru.MoveToFront(el)
	return d
}

func (c *macroCache) remove(el *list.Element) {
	d := el.Value.(*macroDef)
	c.lru.Remove(el)
	delete(c.byID, d.id)
	c.bytes -= d.size
}

// stats reports entries and bytes, for tests and metrics.
func (c *macroCache) stats() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}
