// Package factset keeps the first of equal facts of a request (equal by
// protocol.FactKey), in order, with their keys: the text macro_ids hash
// (macroid.KeyedFacts), built once per request, in parts, on the goroutines
// that check the facts. It is a step of request decoding; it knows the
// protocol layer only.
package factset

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"unsafe"

	"github.com/manglecp/manglecp/protocol"
)

// Set keeps the first of equal facts (equal by protocol.FactKey) in order and
// their keys, each followed by a newline: the text macroid.Facts hashes, so
// the keys are built once per request. The keys are built in parts by a
// Builder, on the goroutines that check the facts (protocol.FactsCheck),
// and only the check for duplicates runs in order. A few facts are
// compared one by one; beyond smallSet, finding a duplicate looks the
// key's hash up in an open-addressing table of fact indexes. Either way a
// fact costs no allocation of its own.
type Set struct {
	Facts  []protocol.Fact
	Chunks [][]byte  // the kept facts' keys, each followed by '\n', in order
	spans  []keySpan // spans[i]: where kept fact i's key is (without its '\n')
	hashes []uint64  // hashes[i]: the hash of kept fact i's key; nil for a small set
	table  []int32   // kept fact index + 1 by hash, linear probing (0: free); len a power of two above twice the facts
}

// keySpan is where a key is: chunks[chunk][start:end].
type keySpan struct{ chunk, start, end int32 }

// smallSet is the most facts a Set compares one by one, without
// hashing.
const smallSet = 16

// keyPart is the keys of one run of facts, built on its own: each key
// followed by '\n' in keys, ending at ends[j], with its hash in hashes[j]
// (only for a set beyond smallSet). The run is the set's facts[lo:hi].
type keyPart struct {
	lo, hi int
	keys   []byte
	ends   []int32
	hashes []uint64
	all    bool // every fact of the run was keyed (none set aside)
}

// Buffers are the buffers a Set is built in, for another set to reuse
// once this one's keys are no longer read (the server keeps a few in a
// free list and gives them back once a request's keys are hashed): a large
// request then allocates none of them.
type Buffers struct {
	table  []int32
	hashes []uint64
	spans  []keySpan
	parts  []keyPart
}

// Bytes is the memory of b's buffers.
func (b *Buffers) Bytes() int {
	n := cap(b.table)*4 + cap(b.hashes)*8 + cap(b.spans)*int(unsafe.Sizeof(keySpan{}))
	for _, p := range b.parts[:cap(b.parts)] {
		n += cap(p.keys) + cap(p.ends)*4 + cap(p.hashes)*8
	}
	return n
}

// Builder builds the keys of up to n facts in parts, each part on its
// own (Add may run for different parts at once), for Set to keep the
// first of equal facts among them in order.
type Builder struct {
	n, keyBytes int
	hashed      bool
	seed        maphash.Seed
	parts       []keyPart
	buf         *Buffers
}

// NewBuilder prepares the keys of up to n facts in the given number of
// parts, in buf's buffers. keyBytes estimates the length of all the keys.
func NewBuilder(n, parts, keyBytes int, buf *Buffers) *Builder {
	b := &Builder{n: n, keyBytes: keyBytes, hashed: n > smallSet, buf: buf}
	if b.hashed {
		b.seed = maphash.MakeSeed()
	}
	old := buf.parts[:cap(buf.parts)] // their buffers are reused
	b.parts = make([]keyPart, parts)
	for i := range b.parts {
		if i < len(old) {
			b.parts[i] = old[i]
		}
	}
	return b
}

// Add builds part k's keys: those of facts for which keep is true (every
// fact, for a nil keep), in order.
func (b *Builder) Add(k int, facts []protocol.Fact, keep func(*protocol.Fact) bool) {
	p := &b.parts[k]
	m := len(facts)
	p.keys = grow(p.keys, b.keyBytes/len(b.parts)+m)
	p.ends = grow(p.ends, m)
	if b.hashed {
		p.hashes = grow(p.hashes, m)
	}
	p.all = true
	for i := range facts {
		f := &facts[i]
		if keep != nil && !keep(f) {
			p.all = false
			continue
		}
		start := len(p.keys)
		p.keys = protocol.AppendFactKey(p.keys, *f)
		if b.hashed {
			p.hashes = append(p.hashes, maphash.Bytes(b.seed, p.keys[start:]))
		}
		p.keys = append(p.keys, '\n')
		p.ends = append(p.ends, int32(len(p.keys)))
	}
}

// KeyedAll reports whether Add kept every fact of every part.
func (b *Builder) KeyedAll() bool {
	for _, p := range b.parts {
		if !p.all {
			return false
		}
	}
	return true
}

// Set returns the set of facts, whose keys the parts hold in order (part
// k's facts right after part k-1's), keeping them in facts[:0] (each kept
// fact is written at or before the index it is read from). Every part
// must have been added.
func (b *Builder) Set(facts []protocol.Fact) *Set {
	n, buf := len(facts), b.buf
	s := &Set{Facts: facts[:0], spans: grow(buf.spans, n)}
	if b.hashed {
		s.hashes = grow(buf.hashes, n)
		size := 1 << bits.Len(uint(2*b.n))
		if cap(buf.table) >= size {
			s.table = buf.table[:size]
			clear(s.table)
		} else {
			s.table = make([]int32, size)
		}
	}
	lo := 0
	for c := range b.parts {
		p := &b.parts[c]
		p.lo, p.hi = lo, lo+len(p.ends)
		lo = p.hi
		s.keep(facts, p, int32(c))
	}
	*buf = Buffers{table: s.table, hashes: s.hashes, spans: s.spans, parts: b.parts}
	return s
}

// grow returns b emptied, with room for n items: b's own array when it
// has the room.
func grow[T any](b []T, n int) []T {
	if cap(b) >= n {
		return b[:0]
	}
	return make([]T, 0, n)
}

// keep adds part c's facts in order, leaving out those equal to a kept
// one. Its keys move down over the left-out ones (never over a kept key).
func (s *Set) keep(facts []protocol.Fact, p *keyPart, c int32) {
	s.Chunks = append(s.Chunks, nil)
	w, start := int32(0), int32(0)
	for j, end := range p.ends {
		from := start
		key := p.keys[from : end-1]
		start = end
		var h uint64
		slot := -1
		if s.table != nil {
			h = p.hashes[j]
			var dup bool
			if slot, dup = s.find(key, h); dup {
				continue
			}
		} else if s.has(key) {
			continue
		}
		i := int32(len(s.Facts))
		if at := p.lo + j; at == len(s.Facts) {
			s.Facts = s.Facts[:at+1] // kept where it is
		} else {
			s.Facts = append(s.Facts, facts[at])
		}
		n := end - from // the key and its '\n'
		if w != from {
			copy(p.keys[w:], p.keys[from:end])
		}
		s.spans = append(s.spans, keySpan{c, w, w + n - 1})
		if s.table != nil {
			s.hashes = append(s.hashes, h)
			s.table[slot] = i + 1
		}
		w += n
		s.Chunks[c] = p.keys[:w]
	}
}

// has reports whether key is a kept fact's, comparing it with each (a
// small set).
func (s *Set) has(key []byte) bool {
	for j := range int32(len(s.Facts)) {
		if bytes.Equal(s.Key(j), key) {
			return true
		}
	}
	return false
}

// find looks key, whose hash is h, up in the table: whether a kept fact
// has it, and otherwise the free slot where it goes.
func (s *Set) find(key []byte, h uint64) (slot int, found bool) {
	mask := uint64(len(s.table) - 1)
	for at := h & mask; ; at = (at + 1) & mask {
		i := s.table[at] - 1
		if i < 0 {
			return int(at), false
		}
		if s.hashes[i] == h && bytes.Equal(s.Key(i), key) {
			return 0, true
		}
	}
}

// Key is the key of kept fact i, without its newline.
func (s *Set) Key(i int32) []byte {
	sp := s.spans[i]
	return s.Chunks[sp.chunk][sp.start:sp.end]
}
