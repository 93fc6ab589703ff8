package manglecp

// freeList keeps a few buffers of large requests for later requests to
// reuse. Unlike a sync.Pool, which the collector empties (a large request
// triggers collections itself, so its buffers rarely survive to the next
// one), it keeps them until taken; it holds at most its capacity, and
// put refuses buffers larger than the list's byte limit, so what it keeps
// is bounded by capacity × limit.
type freeList[T any] struct {
	free  chan T
	limit int
	size  func(T) int
}

// newFreeList returns a list of at most n buffers of at most limit bytes
// each, as size measures them.
func newFreeList[T any](n, limit int, size func(T) int) *freeList[T] {
	return &freeList[T]{free: make(chan T, n), limit: limit, size: size}
}

// get returns a kept buffer, or false when there is none.
func (l *freeList[T]) get() (T, bool) {
	select {
	case b := <-l.free:
		return b, true
	default:
		var zero T
		return zero, false
	}
}

// put keeps b for a later get, unless the list is full or b is larger
// than its limit.
func (l *freeList[T]) put(b T) {
	if l.size(b) > l.limit {
		return
	}
	select {
	case l.free <- b:
	default:
	}
}
