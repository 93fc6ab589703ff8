package lru

import (
	"fmt"
	"slices"
	"testing"
)

// keys lists the cache's keys, most recently used first.
func keys[K comparable, V any](c *Cache[K, V]) []K {
	var out []K
	for e := c.root.next; e != &c.root; e = e.next {
		out = append(out, e.key)
	}
	return out
}

func TestCache(t *testing.T) {
	type op struct {
		do   string // put, add, get, remove, trim
		key  string
		size int64
	}
	for _, tc := range []struct {
		name      string
		max       int64
		ops       []op
		wantKeys  []string
		wantBytes int64
	}{
		{"evicts the least recently used", 10, []op{{"put", "a", 4}, {"put", "b", 4}, {"put", "c", 4}}, []string{"c", "b"}, 8},
		{"get refreshes", 10, []op{{"put", "a", 4}, {"put", "b", 4}, {"get", "a", 0}, {"put", "c", 4}}, []string{"c", "a"}, 8},
		{"replace adjusts bytes", 10, []op{{"put", "a", 4}, {"put", "a", 6}, {"put", "b", 4}}, []string{"b", "a"}, 10},
		{"never the entry just put", 10, []op{{"put", "a", 4}, {"put", "b", 9}}, []string{"b"}, 9},
		{"larger than the bound: not stored, old value dropped", 10, []op{{"put", "a", 4}, {"put", "b", 4}, {"put", "a", 11}}, []string{"b"}, 4},
		{"add keeps a batch, trim spares it", 10, []op{{"put", "x", 4}, {"add", "a", 4}, {"add", "b", 4}, {"add", "c", 4}, {"trim", "", 3}}, []string{"c", "b", "a"}, 12},
		{"trim evicts down to the bound", 10, []op{{"add", "a", 4}, {"add", "b", 4}, {"add", "c", 4}, {"trim", "", 1}}, []string{"c", "b"}, 8},
		{"remove", 10, []op{{"put", "a", 4}, {"put", "b", 4}, {"remove", "a", 0}}, []string{"b"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New[string, string](tc.max)
			for _, o := range tc.ops {
				switch o.do {
				case "put":
					c.Put(o.key, "v"+o.key, o.size)
				case "add":
					c.Add(o.key, "v"+o.key, o.size)
				case "get":
					if v, ok := c.Get(o.key); !ok || v != "v"+o.key {
						t.Fatalf("get %s: %q %v", o.key, v, ok)
					}
				case "remove":
					c.Remove(o.key)
				case "trim":
					c.Trim(int(o.size))
				}
			}
			if got := keys(c); !slices.Equal(got, tc.wantKeys) {
				t.Errorf("keys %v, want %v", got, tc.wantKeys)
			}
			if c.Bytes() != tc.wantBytes || c.Len() != len(tc.wantKeys) {
				t.Errorf("bytes %d len %d, want %d %d", c.Bytes(), c.Len(), tc.wantBytes, len(tc.wantKeys))
			}
		})
	}
}

func TestOldestAndClear(t *testing.T) {
	c := New[int, int](100)
	if _, _, ok := c.Oldest(); ok {
		t.Fatal("oldest of an empty cache")
	}
	for i := range 5 {
		c.Put(i, i*i, 10)
	}
	c.Get(0)
	if k, v, ok := c.Oldest(); !ok || k != 1 || v != 1 {
		t.Errorf("oldest %d %d %v, want 1 1", k, v, ok)
	}
	c.Clear()
	if c.Len() != 0 || c.Bytes() != 0 || len(keys(c)) != 0 {
		t.Errorf("after Clear: len %d bytes %d", c.Len(), c.Bytes())
	}
	c.Put(7, 49, 10)
	if v, ok := c.Get(7); !ok || v != 49 {
		t.Errorf("after Clear and Put: %d %v", v, ok)
	}
}

// TestBoundUnderChurn: whatever the order of puts and gets, the bytes stay
// within the bound and match the entries.
func TestBoundUnderChurn(t *testing.T) {
	c := New[string, []byte](1000)
	for i := range 10000 {
		k := fmt.Sprint(i % 97)
		if i%3 == 0 {
			c.Get(fmt.Sprint((i * 7) % 97))
		}
		c.Put(k, nil, int64(i%50+1))
		var sum int64
		for e := c.root.next; e != &c.root; e = e.next {
			sum += e.size
		}
		if c.Bytes() > 1000 || sum != c.Bytes() || len(keys(c)) != c.Len() {
			t.Fatalf("step %d: bytes %d (sum %d) len %d/%d", i, c.Bytes(), sum, c.Len(), len(keys(c)))
		}
	}
}
