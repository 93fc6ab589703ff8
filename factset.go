package manglecp

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/manglecp/manglecp/internal/parallel"
	"github.com/manglecp/manglecp/protocol"
)

// factSet keeps the first of equal facts (equal by factKey) in order and
// their keys, each followed by a newline: the text digestFacts hashes, so
// the keys are built once per request. The key text is in chunks, one per
// part of the facts: a long list has its keys built and hashed in parts,
// one per processor, and only the check for duplicates runs in order. A
// few facts are compared one by one; beyond smallSet, finding a duplicate
// looks the key's hash up in an open-addressing table of fact indexes.
// Either way a fact costs no allocation of its own.
type factSet struct {
	facts  []protocol.Fact
	chunks [][]byte  // the kept facts' keys, each followed by '\n', in order
	spans  []keySpan // spans[i]: where kept fact i's key is (without its '\n')
	hashes []uint64  // hashes[i]: the hash of kept fact i's key; nil for a small set
	table  []int32   // kept fact index + 1 by hash, linear probing (0: free); len a power of two above twice the facts
}

// keySpan is where a key is: chunks[chunk][start:end].
type keySpan struct{ chunk, start, end int32 }

// smallSet is the most facts a factSet compares one by one, without
// hashing.
const smallSet = 16

// A long list has its keys built on several goroutines
// (internal/parallel): one per keysPerWorker facts at most, in
// keyPartsPerWorker parts per goroutine, which they take in turn.
const (
	keysPerWorker     = 2048
	keyPartsPerWorker = 4
)

// keyPart is the keys of one run of facts, built on its own: each key
// followed by '\n' in keys, ending at ends[j], with its hash in hashes[j]
// (only for a set beyond smallSet).
type keyPart struct {
	lo, hi int
	keys   []byte
	ends   []int32
	hashes []uint64
}

// newFactSet returns the set of facts, keeping them in facts[:0] (each
// kept fact is written at or before the index it is read from). keyBytes
// estimates the length of all their keys.
func newFactSet(facts []protocol.Fact, keyBytes int) *factSet {
	return newFactSetParts(facts, keyBytes, runtime.GOMAXPROCS(0), nil)
}

// factSetBuffers are the buffers a factSet is built in, for another set
// to reuse once this one's keys are no longer read (see
// evaluation.summarized): a large request then allocates none of them.
type factSetBuffers struct {
	table  []int32
	hashes []uint64
	spans  []keySpan
	parts  []keyPart
}

// bytes is the memory of b's buffers.
func (b *factSetBuffers) bytes() int {
	n := cap(b.table)*4 + cap(b.hashes)*8 + cap(b.spans)*int(unsafe.Sizeof(keySpan{}))
	for _, p := range b.parts[:cap(b.parts)] {
		n += cap(p.keys) + cap(p.ends)*4 + cap(p.hashes)*8
	}
	return n
}

// newFactSetParts is newFactSet building the keys on at most procs
// goroutines, in buf's buffers when buf is not nil.
func newFactSetParts(facts []protocol.Fact, keyBytes, procs int, buf *factSetBuffers) *factSet {
	if buf == nil {
		buf = &factSetBuffers{}
	}
	n := len(facts)
	s := &factSet{facts: facts[:0], spans: grow(buf.spans, n)}
	hashed := n > smallSet
	var seed maphash.Seed
	if hashed {
		seed = maphash.MakeSeed()
		s.hashes = grow(buf.hashes, n)
		size := 1 << bits.Len(uint(2*n))
		if cap(buf.table) >= size {
			s.table = buf.table[:size]
			clear(s.table)
		} else {
			s.table = make([]int32, size)
		}
	}
	k, workers := parallel.Plan(n, procs, keysPerWorker, keyPartsPerWorker)
	old := buf.parts[:cap(buf.parts)] // their buffers are reused
	parts := make([]keyPart, k)
	for i := range parts {
		if i < len(old) {
			parts[i] = old[i]
		}
		parts[i].lo, parts[i].hi = n*i/k, n*(i+1)/k
	}
	build := func(p *keyPart) {
		m := p.hi - p.lo
		p.keys = grow(p.keys, keyBytes/k+m)
		p.ends = grow(p.ends, m)
		if hashed {
			p.hashes = grow(p.hashes, m)
		}
		for _, f := range facts[p.lo:p.hi] {
			start := len(p.keys)
			p.keys = appendFactKey(p.keys, f)
			if hashed {
				p.hashes = append(p.hashes, maphash.Bytes(seed, p.keys[start:]))
			}
			p.keys = append(p.keys, '\n')
			p.ends = append(p.ends, int32(len(p.keys)))
		}
	}
	parallel.Run(len(parts), workers, func(i int) { build(&parts[i]) })
	for c := range parts {
		s.keep(facts, &parts[c], int32(c))
	}
	*buf = factSetBuffers{table: s.table, hashes: s.hashes, spans: s.spans, parts: parts}
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
func (s *factSet) keep(facts []protocol.Fact, p *keyPart, c int32) {
	s.chunks = append(s.chunks, nil)
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
		i := int32(len(s.facts))
		if at := p.lo + j; at == len(s.facts) {
			s.facts = s.facts[:at+1] // kept where it is
		} else {
			s.facts = append(s.facts, facts[at])
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
		s.chunks[c] = p.keys[:w]
	}
}

// has reports whether key is a kept fact's, comparing it with each (a
// small set).
func (s *factSet) has(key []byte) bool {
	for j := range int32(len(s.facts)) {
		if bytes.Equal(s.key(j), key) {
			return true
		}
	}
	return false
}

// find looks key, whose hash is h, up in the table: whether a kept fact
// has it, and otherwise the free slot where it goes.
func (s *factSet) find(key []byte, h uint64) (slot int, found bool) {
	mask := uint64(len(s.table) - 1)
	for at := h & mask; ; at = (at + 1) & mask {
		i := s.table[at] - 1
		if i < 0 {
			return int(at), false
		}
		if s.hashes[i] == h && bytes.Equal(s.key(i), key) {
			return 0, true
		}
	}
}

// key is the key of kept fact i.
func (s *factSet) key(i int32) []byte {
	sp := s.spans[i]
	return s.chunks[sp.chunk][sp.start:sp.end]
}
