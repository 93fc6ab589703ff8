package macros

import (
	"unsafe"

	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// Memory accounting of the caches in real bytes: sizes of what a cached
// value holds on the heap, from the layouts of the Go types involved (a
// string's or slice's backing array, an interface's boxed value, a map's
// header and groups). TestCacheAccounting checks them against the growth
// of the live heap.

// Layout constants of the Go runtime (64-bit): the header of a map, one
// group of the swiss-table map (8 control bytes and 8 slots), a string
// header and an interface.
const (
	mapHeaderBytes = 48
	mapGroupSlots  = 8
	stringHeader   = 16
	ifaceBytes     = 16
)

// roundAlloc rounds n up to the allocator's granularity (8 bytes for tiny
// objects, 16 beyond); it ignores size classes above that, which differ
// by at most 12.5%.
func roundAlloc(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if n <= 16 {
		return (n + 7) &^ 7
	}
	return (n + 15) &^ 15
}

// mapBytes is the memory of a map of n entries whose slots are slot bytes:
// the header and enough groups to hold n at the 7/8 load factor.
func mapBytes(n int, slot int64) int64 {
	groups := int64((n*8/7)/mapGroupSlots + 1)
	return mapHeaderBytes + groups*(8+mapGroupSlots*slot)
}

// jsonValueBytes is the heap memory of a decoded-JSON-like value held in
// an interface: maps, slices, strings and numbers, recursively.
func jsonValueBytes(v any) int64 {
	switch x := v.(type) {
	case nil, bool:
		return 0
	case string:
		return roundAlloc(stringHeader) + roundAlloc(int64(len(x)))
	case float64, int64, int:
		return 8
	case []any:
		n := roundAlloc(24) + roundAlloc(int64(cap(x))*ifaceBytes)
		for _, e := range x {
			n += jsonValueBytes(e)
		}
		return n
	case []string:
		n := roundAlloc(24) + roundAlloc(int64(cap(x))*stringHeader)
		for _, e := range x {
			n += roundAlloc(int64(len(e)))
		}
		return n
	case map[string]any:
		n := mapBytes(len(x), stringHeader+ifaceBytes)
		for k, e := range x {
			n += roundAlloc(int64(len(k))) + jsonValueBytes(e)
		}
		return n
	default:
		return 32 // an unknown small value
	}
}

// factBytes is the memory of a decoded fact.
func factBytes(f protocol.Fact) int64 {
	n := roundAlloc(int64(len(f.Pred))) + roundAlloc(int64(cap(f.Args))*ifaceBytes)
	for _, a := range f.Args {
		n += jsonValueBytes(a)
	}
	if f.NamedArgs != nil {
		n += jsonValueBytes(f.NamedArgs)
	}
	if f.T != nil {
		n += 96
	}
	if f.Source != nil {
		n += 96
	}
	return n
}

// Size is the memory of a macro-tool definition: the definition and its
// tool, the tool's parameters, the input schema generated for it and the
// request's facts (factsBytes, FactsBytes of them), which are counted in
// full for each definition (the definitions of one evaluation share them,
// so this errs high).
func Size(t kernel.Tool, schema map[string]any, intent protocol.Intent, factsBytes int64) int64 {
	n := roundAlloc(int64(unsafe.Sizeof(Def{}))) + jsonValueBytes(schema)
	n += roundAlloc(int64(cap(t.Params)) * int64(unsafe.Sizeof(kernel.Param{})))
	n += roundAlloc(int64(cap(t.Pairs)) * int64(unsafe.Sizeof(kernel.ParamPair{})))
	n += roundAlloc(int64(len(intent.Name)))
	if intent.Params != nil {
		n += jsonValueBytes(intent.Params)
	}
	return n + factsBytes
}

// decodedSize is the memory of a definition decoded from a stored
// record: like Size, with the output schema (a copy of its own, not
// the action's) and the tool's strings.
func decodedSize(d *Def) int64 {
	n := roundAlloc(int64(unsafe.Sizeof(Def{}))) + jsonValueBytes(d.Schema) + jsonValueBytes(d.Output)
	n += roundAlloc(int64(cap(d.Tool.Params)) * int64(unsafe.Sizeof(kernel.Param{})))
	n += roundAlloc(int64(cap(d.Tool.Pairs)) * int64(unsafe.Sizeof(kernel.ParamPair{})))
	for _, s := range []string{d.ID, d.Tool.Name, d.Tool.Description, d.Tool.Summary, d.Tool.Instructions, d.Intent.Name} {
		n += roundAlloc(int64(len(s)))
	}
	if d.Intent.Params != nil {
		n += jsonValueBytes(d.Intent.Params)
	}
	return n + FactsBytes(d.Facts)
}

// FactsBytes is the memory of a request's facts. The server computes it
// once per evaluation: every definition of it holds the same facts.
func FactsBytes(facts []protocol.Fact) int64 {
	n := roundAlloc(int64(cap(facts)) * int64(unsafe.Sizeof(protocol.Fact{})))
	for _, f := range facts {
		n += factBytes(f)
	}
	return n
}
