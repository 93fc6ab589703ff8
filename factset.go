package manglecp

import (
	"bytes"
	"hash/maphash"

	"github.com/manglecp/manglecp/protocol"
)

// factSet keeps the first of equal facts (equal by factKey) in order and
// their keys, each followed by a newline, in one buffer: the text
// digestFacts hashes, so the keys are built once per request. A few facts
// are compared one by one; beyond smallSet, finding a duplicate hashes the
// key into a map of integers. Either way a fact costs no allocation of its
// own.
type factSet struct {
	facts []protocol.Fact
	keys  []byte           // the kept facts' keys, each followed by '\n'
	ends  []int32          // ends[i]: where fact i's key ends in keys (before its '\n')
	first map[uint64]int32 // hash -> the last kept fact with it; nil while the set is small
	next  []int32          // next[i]: the previous kept fact whose key has fact i's hash, or -1
	seed  maphash.Seed
}

// newFactSet returns a set that keeps its facts in facts[:0]: facts may be
// the slice the set's facts come from, in order (each kept fact is written
// at or before the index it is read from).
func newFactSet(facts []protocol.Fact, keyBytes int) *factSet {
	n := len(facts)
	return &factSet{
		facts: facts[:0],
		keys:  make([]byte, 0, keyBytes),
		ends:  make([]int32, 0, n),
	}
}

// smallSet is the most facts a factSet compares one by one, without
// hashing.
const smallSet = 16

// add keeps f unless an equal fact is kept already, and reports whether
// it kept f.
func (s *factSet) add(f protocol.Fact) bool {
	start := len(s.keys)
	s.keys = appendFactKey(s.keys, f)
	key := s.keys[start:]
	if s.first == nil {
		if len(s.facts) < smallSet {
			for j := range int32(len(s.facts)) {
				if bytes.Equal(s.key(j), key) {
					s.keys = s.keys[:start]
					return false
				}
			}
			s.facts = append(s.facts, f)
			s.ends = append(s.ends, int32(len(s.keys)))
			s.keys = append(s.keys, '\n')
			return true
		}
		// Many facts: index the kept ones by hash from now on.
		s.seed = maphash.MakeSeed()
		s.first = make(map[uint64]int32, cap(s.facts))
		s.next = make([]int32, 0, cap(s.facts))
		for j := range int32(len(s.facts)) {
			h := maphash.Bytes(s.seed, s.key(j))
			head, ok := s.first[h]
			if !ok {
				head = -1
			}
			s.next = append(s.next, head)
			s.first[h] = j
		}
	}
	h := maphash.Bytes(s.seed, key)
	head, ok := s.first[h]
	for j := head; ok && j >= 0; j = s.next[j] {
		if bytes.Equal(s.key(j), key) {
			s.keys = s.keys[:start]
			return false
		}
	}
	i := int32(len(s.facts))
	s.facts = append(s.facts, f)
	s.ends = append(s.ends, int32(len(s.keys)))
	s.keys = append(s.keys, '\n')
	if ok {
		s.next = append(s.next, head)
	} else {
		s.next = append(s.next, -1)
	}
	s.first[h] = i
	return true
}

// key is the key of kept fact i.
func (s *factSet) key(i int32) []byte {
	start := int32(0)
	if i > 0 {
		start = s.ends[i-1] + 1
	}
	return s.keys[start:s.ends[i]]
}
