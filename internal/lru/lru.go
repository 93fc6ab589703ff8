// Package lru is a least-recently-used cache bounded by bytes: each entry
// is added with its size (whatever its owner counts: encoded bytes, an
// estimate of heap memory) and the least recently used entries are
// evicted once the sizes add up to more than the bound. The server's
// result cache, its decoded macro-tool cache and the in-memory store's
// macro-tools all use it.
//
// A Cache is not safe for concurrent use: its owner holds its own lock
// around every call, usually together with state of its own.
package lru

// Cache maps keys to values, most recently used first.
type Cache[K comparable, V any] struct {
	max   int64
	bytes int64
	byKey map[K]*entry[K, V]
	// root is the sentinel of a circular list: root.next is the most
	// recently used entry, root.prev the least recently used.
	root entry[K, V]
}

type entry[K comparable, V any] struct {
	prev, next *entry[K, V]
	key        K
	value      V
	size       int64
}

// An entry costs, besides what its key and value point to, its list node
// (two pointers, the key, the value and the size) and its map slot (the
// key and a pointer); owners that count real memory add that to sizes.

// New returns an empty cache bounded by maxBytes.
func New[K comparable, V any](maxBytes int64) *Cache[K, V] {
	c := &Cache[K, V]{max: maxBytes, byKey: map[K]*entry[K, V]{}}
	c.root.next, c.root.prev = &c.root, &c.root
	return c
}

// Get returns the value of key and marks it most recently used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	e, ok := c.byKey[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.moveToFront(e)
	return e.value, true
}

// Add stores value under key as the most recently used entry, replacing
// an equal key, without evicting anything: a caller adding several
// entries that must stay together calls Trim once after them.
func (c *Cache[K, V]) Add(key K, value V, size int64) {
	if e, ok := c.byKey[key]; ok {
		c.bytes += size - e.size
		e.value, e.size = value, size
		c.moveToFront(e)
		return
	}
	e := &entry[K, V]{key: key, value: value, size: size}
	c.byKey[key] = e
	c.insertFront(e)
	c.bytes += size
}

// Put adds value under key and evicts least recently used entries until
// the cache is within its bound again, never the entry just put. A value
// larger than the whole bound is not stored (and an older value of key is
// dropped).
func (c *Cache[K, V]) Put(key K, value V, size int64) {
	if size > c.max {
		c.Remove(key)
		return
	}
	c.Add(key, value, size)
	c.Trim(1)
}

// Trim evicts least recently used entries until the cache is within its
// bound, sparing the keep most recently used ones (which may leave it over
// the bound). It returns how many entries it evicted.
func (c *Cache[K, V]) Trim(keep int) int {
	evicted := 0
	for c.bytes > c.max && len(c.byKey) > keep {
		c.remove(c.root.prev)
		evicted++
	}
	return evicted
}

// Oldest returns the least recently used entry without marking it used;
// ok is false when the cache is empty.
func (c *Cache[K, V]) Oldest() (key K, value V, ok bool) {
	if len(c.byKey) == 0 {
		return key, value, false
	}
	e := c.root.prev
	return e.key, e.value, true
}

// Remove drops key; it reports whether key was there.
func (c *Cache[K, V]) Remove(key K) bool {
	e, ok := c.byKey[key]
	if ok {
		c.remove(e)
	}
	return ok
}

// Clear drops every entry.
func (c *Cache[K, V]) Clear() {
	clear(c.byKey)
	c.root.next, c.root.prev = &c.root, &c.root
	c.bytes = 0
}

// Len is the number of entries.
func (c *Cache[K, V]) Len() int { return len(c.byKey) }

// Bytes is the sum of the entries' sizes.
func (c *Cache[K, V]) Bytes() int64 { return c.bytes }

// MaxBytes is the bound.
func (c *Cache[K, V]) MaxBytes() int64 { return c.max }

func (c *Cache[K, V]) remove(e *entry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	delete(c.byKey, e.key)
	c.bytes -= e.size
}

func (c *Cache[K, V]) insertFront(e *entry[K, V]) {
	e.prev, e.next = &c.root, c.root.next
	c.root.next.prev = e
	c.root.next = e
}

func (c *Cache[K, V]) moveToFront(e *entry[K, V]) {
	if c.root.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	c.insertFront(e)
}
