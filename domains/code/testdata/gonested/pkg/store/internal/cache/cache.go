// Package cache is a map with a name.
package cache

// Cache maps keys to values.
type Cache struct{ m map[string]string }

// New returns an empty cache.
func New() *Cache { return &Cache{m: map[string]string{}} }

// Set sets k.
func (c *Cache) Set(k, v string) { c.m[k] = v }

// Get gets k.
func (c *Cache) Get(k string) (string, bool) { v, ok := c.m[k]; return v, ok }
