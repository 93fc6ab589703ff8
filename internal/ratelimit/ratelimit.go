// Package ratelimit holds token buckets per key (a caller's address, an
// identity) in bounded memory, for the server's abuse limits.
//
// A bucket is a GCRA (generic cell rate algorithm) bucket, the same
// arithmetic as the Redis store's: it is one number, the theoretical
// arrival time of the next request, and a bucket whose time has passed is
// full, so forgetting it changes nothing. [Buckets] therefore drops each
// bucket on its own once it is full again (least recently taken first),
// never all of them at once: a caller flooding the table with new keys
// cannot reset the limit of another. At capacity, what happens to a new key
// is the caller's choice ([Full]).
package ratelimit

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/peerkey"
)

// Limit is a token bucket: PerSecond sustained, Burst at once. A Limit
// with PerSecond <= 0 does not limit.
type Limit struct {
	PerSecond float64
	Burst     int
}

// interval is the time one token takes to come back, in nanoseconds; 0
// means no limit.
func (l Limit) interval() int64 {
	if l.PerSecond <= 0 {
		return 0
	}
	iv := float64(time.Second) / l.PerSecond
	if math.IsInf(iv, 0) || math.IsNaN(iv) || iv >= math.MaxInt64/4 {
		return 0
	}
	return max(1, int64(iv))
}

// take applies the GCRA step to tat (the theoretical arrival time, Unix
// nanoseconds): it takes one token and returns 0, or returns how long
// until one is free and takes nothing.
func take(tat *int64, l Limit, now int64) time.Duration {
	iv := l.interval()
	if iv == 0 {
		return 0
	}
	t := max(*tat, now)
	allowAt := t - int64(max(1, l.Burst)-1)*iv
	if now < allowAt {
		return time.Duration(allowAt - now)
	}
	*tat = t + iv
	return 0
}

// Bucket is one token bucket, safe for concurrent use. The zero value is
// a full bucket.
type Bucket struct {
	mu  sync.Mutex
	tat int64
}

// Take takes one token at now and returns 0, or returns how long until
// one is free (nothing is taken then).
func (b *Bucket) Take(l Limit, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return take(&b.tat, l, now.UnixNano())
}

// Full says what [Buckets.Take] does with a key it does not hold when it
// holds its maximum of buckets, none of them full again yet.
type Full int

const (
	// EvictOldest forgets the bucket used least recently, to hold the
	// new key: callers are never refused for lack of room, and a flood of
	// new keys can only reset buckets left alone for longer than every
	// other (never one that keeps being used, such as an attacker's). For limits on work that succeeds (requests per caller).
	EvictOldest Full = iota
	// Refuse answers the new key as limited until a bucket is full again:
	// no bucket is ever forgotten before it is full. For limits on
	// failures, which a refusal costs nothing legitimate.
	Refuse
)

// Buckets holds a token bucket per key, at most max of them. It is safe
// for concurrent use. Memory: about 100 bytes per key plus the key.
type Buckets struct {
	mu      sync.Mutex
	max     int
	full    Full
	entries map[string]*entry
	// head is the least recently used entry, tail the most; a bucket
	// that is full again is dropped from the head.
	head, tail *entry
}

type entry struct {
	key        string
	tat        int64
	prev, next *entry
}

// sweepPerTake bounds the full buckets one Take drops, so no call pays
// for a long quiet period at once.
const sweepPerTake = 16

// New returns buckets for at most size keys (at least 1), with full
// deciding what a new key gets at capacity.
func New(size int, full Full) *Buckets {
	return &Buckets{max: max(1, size), full: full, entries: map[string]*entry{}}
}

// Take takes one token from key's bucket at now and returns 0, or returns
// how long until one is free (nothing is taken then). Under [Refuse], a
// new key at capacity gets the time until the oldest bucket is full.
func (b *Buckets) Take(key string, l Limit, now time.Time) time.Duration {
	if l.interval() == 0 {
		return 0
	}
	ns := now.UnixNano()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := 0; i < sweepPerTake && b.head != nil && b.head.tat <= ns; i++ {
		b.remove(b.head)
	}
	e, ok := b.entries[key]
	if !ok {
		if len(b.entries) >= b.max {
			if b.full == Refuse && b.head.tat > ns {
				return time.Duration(b.head.tat - ns)
			}
			b.remove(b.head)
		}
		e = &entry{key: strings.Clone(key)}
		b.entries[e.key] = e
		b.pushBack(e)
	}
	if b.tail != e { // most recently used last, refused takes included
		b.unlink(e)
		b.pushBack(e)
	}
	return take(&e.tat, l, ns)
}

// Len reports the buckets held.
func (b *Buckets) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}

func (b *Buckets) remove(e *entry) {
	b.unlink(e)
	delete(b.entries, e.key)
}

func (b *Buckets) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		b.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		b.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (b *Buckets) pushBack(e *entry) {
	e.prev = b.tail
	if b.tail != nil {
		b.tail.next = e
	} else {
		b.head = e
	}
	b.tail = e
}

// ClientKey is the key that limits a caller by its address: an IPv4
// address as it is, an IPv6 address by its /64 (one host commonly holds a
// whole /64, so single IPv6 addresses would let it rotate past any
// limit), an IPv4-mapped IPv6 address as IPv4, and anything that is not an
// address (a transport's name such as "stdio") as it is. peer may carry
// brackets ("[2001:db8::1]") and a zone.
func ClientKey(peer string) string { return peerkey.Of(peer) }
