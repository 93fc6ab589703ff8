// Package freelist keeps a few large buffers for later requests to reuse.
//
// Unlike a sync.Pool, which the collector empties (a large request
// triggers collections itself, so its buffers rarely survive to the next
// one), a List keeps its buffers until they are taken. It holds at most
// its capacity, and Put refuses buffers larger than the list's byte
// limit, so what it keeps is bounded by capacity × limit. It imports only
// the standard library, so any layer may use it.
package freelist

import "runtime"

// List is a bounded list of free buffers of type T, safe for concurrent
// use.
type List[T any] struct {
	free  chan T
	limit int
	size  func(T) int
}

// MaxKept is the most buffers PerProcessor keeps: on a machine of
// many processors, one each would hold too much memory idle.
const MaxKept = 4

// PerProcessor is how many buffers a list keeps: one per processor
// (GOMAXPROCS), at most MaxKept.
func PerProcessor() int { return min(runtime.GOMAXPROCS(0), MaxKept) }

// New returns a list of at most n buffers of at most limit bytes each, as
// size measures them.
func New[T any](n, limit int, size func(T) int) *List[T] {
	return &List[T]{free: make(chan T, n), limit: limit, size: size}
}

// Get returns a kept buffer, or false when there is none.
func (l *List[T]) Get() (T, bool) {
	select {
	case b := <-l.free:
		return b, true
	default:
		var zero T
		return zero, false
	}
}

// Put keeps b for a later Get, unless the list is full or b is larger
// than its limit.
func (l *List[T]) Put(b T) {
	if l.size(b) > l.limit {
		return
	}
	select {
	case l.free <- b:
	default:
	}
}
