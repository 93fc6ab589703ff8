package store_test

import (
	"testing"

	"example.com/nest/pkg/store"
)

func TestOpenStore(t *testing.T) {
	s := store.OpenStore()
	s.Put("a", "1")
	if v, ok := s.Get("a"); !ok || v != "1" {
		t.Fatalf("OpenStore: Get = %q %v", v, ok)
	}
}
