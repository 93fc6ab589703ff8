package memstore

import (
	"container/heap"
	"sync"
	"time"
)

// nonceSet records used confirmation-token nonces until they expire. Each
// use first drops the nonces that have expired, oldest first, from a heap
// ordered by expiry: a use costs O(log n) amortized, however many nonces
// are held (the set no longer sweeps every entry on every use). The zero
// value is ready.
type nonceSet struct {
	mu     sync.Mutex
	expiry map[string]time.Time
	queue  nonceQueue
}

// use records nonce until now+ttl; it reports false when the nonce is
// already recorded and has not expired.
func (s *nonceSet) use(nonce string, now time.Time, ttl time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 && !now.Before(s.queue[0].expiry) {
		n := heap.Pop(&s.queue).(queuedNonce)
		// A nonce recorded again after it expired has a later expiry in
		// the map than this entry of the queue: it stays.
		if e, ok := s.expiry[n.nonce]; ok && !now.Before(e) {
			delete(s.expiry, n.nonce)
		}
	}
	if e, seen := s.expiry[nonce]; seen && now.Before(e) {
		return false
	}
	if s.expiry == nil {
		s.expiry = map[string]time.Time{}
	}
	at := now.Add(ttl)
	s.expiry[nonce] = at
	heap.Push(&s.queue, queuedNonce{nonce: nonce, expiry: at})
	return true
}

// size is the number of nonces held.
func (s *nonceSet) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.expiry)
}

type queuedNonce struct {
	nonce  string
	expiry time.Time
}

// nonceQueue is a min-heap of nonces by expiry (container/heap).
type nonceQueue []queuedNonce

func (q nonceQueue) Len() int           { return len(q) }
func (q nonceQueue) Less(i, j int) bool { return q[i].expiry.Before(q[j].expiry) }
func (q nonceQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *nonceQueue) Push(x any)        { *q = append(*q, x.(queuedNonce)) }
func (q *nonceQueue) Pop() any {
	old := *q
	n := old[len(old)-1]
	*q = old[:len(old)-1]
	return n
}
