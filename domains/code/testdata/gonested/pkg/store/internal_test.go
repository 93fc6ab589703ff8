package store

import "testing"

func TestOpenStoreEmpty(t *testing.T) {
	if _, ok := OpenStore().Get("x"); ok {
		t.Fatal("a new store holds x")
	}
}
