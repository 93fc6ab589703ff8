package memstore

import (
	"context"
	"testing"
	"time"

	"github.com/manglecp/manglecp/store"
)

// TestMacros: a macro-tool is kept until its TTL, the least recently used
// goes first beyond the byte bound, and the macro-tools just stored stay
// even when they alone exceed it.
func TestMacros(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1000, 0)
	now := t0
	s := New(30, func() time.Time { return now })
	put := func(ids ...string) {
		t.Helper()
		var ms []store.Macro
		for _, id := range ids {
			ms = append(ms, store.Macro{ID: id, Data: []byte("0123456789"), TTL: time.Minute})
		}
		if err := s.PutMacros(ctx, ms); err != nil {
			t.Fatal(err)
		}
	}
	held := func(id string) bool {
		t.Helper()
		b, err := s.GetMacro(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return b != nil
	}
	put("a", "b", "c")
	if !held("a") || !held("b") || !held("c") {
		t.Fatal("three within the bound were not all kept")
	}
	held("a") // b is now the least recently used
	put("d")
	if held("b") || !held("a") || !held("d") {
		t.Errorf("beyond the bound: b should go first (a %v, b %v, d %v)", held("a"), held("b"), held("d"))
	}
	put("e", "f", "g", "h")
	if n, bytes := s.MacroStats(); n != 4 || bytes != 40 {
		t.Errorf("one larger put: %d entries, %d bytes; want the 4 just stored", n, bytes)
	}
	now = t0.Add(time.Minute)
	if held("e") {
		t.Error("a macro-tool past its TTL was returned")
	}
}

// TestNoncesAndTake: a nonce is used once within its TTL; Take's buckets
// are per key.
func TestNoncesAndTake(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	s := New(0, func() time.Time { return now })
	for i, want := range []bool{true, false} {
		if ok, err := s.UseNonce(ctx, "n", time.Minute); err != nil || ok != want {
			t.Errorf("use %d: %v, %v; want %v", i, ok, err, want)
		}
	}
	limit := store.RateLimit{PerSecond: 1, Burst: 2}
	for i, want := range []bool{false, false, true} {
		wait, err := s.Take(ctx, "k", limit, now)
		if err != nil || (wait > 0) != want {
			t.Errorf("take %d: wait %v, %v; want refused %v", i, wait, err, want)
		}
	}
	if wait, _ := s.Take(ctx, "other", limit, now); wait != 0 {
		t.Errorf("another key: wait %v", wait)
	}
}
