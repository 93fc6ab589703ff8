// Package store keeps entries in memory.
package store

import "example.com/nest/pkg/store/internal/cache"

// Store holds entries by key.
type Store struct{ c *cache.Cache }

// OpenStore returns an empty store.
func OpenStore() *Store { return &Store{c: cache.New()} }

// Put stores v under k.
func (s *Store) Put(k, v string) { s.c.Set(k, v) }

// Get returns the value under k.
func (s *Store) Get(k string) (string, bool) { return s.c.Get(k) }
