package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func TestBucketTake(t *testing.T) {
	tests := []struct {
		name  string
		limit Limit
		at    []time.Duration // offsets from t0 of successive takes
		want  []time.Duration // wait answered by each
	}{
		{"burst then refill", Limit{PerSecond: 1, Burst: 3},
			[]time.Duration{0, 0, 0, 0, 500 * time.Millisecond, time.Second, time.Second},
			[]time.Duration{0, 0, 0, time.Second, 500 * time.Millisecond, 0, time.Second}},
		{"burst below one is one", Limit{PerSecond: 2, Burst: 0},
			[]time.Duration{0, 0, 500 * time.Millisecond},
			[]time.Duration{0, 500 * time.Millisecond, 0}},
		{"no limit", Limit{PerSecond: 0, Burst: 1},
			[]time.Duration{0, 0, 0}, []time.Duration{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b Bucket
			for i, at := range tt.at {
				if got := b.Take(tt.limit, t0.Add(at)); got != tt.want[i] {
					t.Errorf("take %d at +%v: wait %v, want %v", i, at, got, tt.want[i])
				}
			}
		})
	}
}

// A bucket is dropped on its own once it is full again, not with others.
func TestBucketsExpireOneByOne(t *testing.T) {
	l := Limit{PerSecond: 1, Burst: 2}
	b := New(100, Refuse)
	b.Take("a", l, t0)
	b.Take("a", l, t0) // a is full again at +2s
	b.Take("b", l, t0.Add(time.Second))
	b.Take("b", l, t0.Add(time.Second)) // b at +3s
	if n := b.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	b.Take("c", l, t0.Add(2500*time.Millisecond)) // a is full: dropped; b is not
	if n := b.Len(); n != 2 {
		t.Fatalf("after a refilled: Len = %d, want 2 (b and c)", n)
	}
	b.Take("b", l, t0.Add(2500*time.Millisecond)) // the token that came back
	if w := b.Take("b", l, t0.Add(2500*time.Millisecond)); w != 500*time.Millisecond {
		t.Fatalf("b kept its state: wait %v, want 500ms", w)
	}
}

// Issue 30 / issue 26 item 5: a limiter under 200,000 distinct addresses
// keeps throttling the attacker's address. The old map was cleared
// wholesale at 100,000 keys, which reset it.
func TestBucketsFloodKeepsThrottling(t *testing.T) {
	l := Limit{PerSecond: 1, Burst: 10}
	for _, full := range []Full{Refuse, EvictOldest} {
		t.Run(map[Full]string{Refuse: "refuse", EvictOldest: "evict"}[full], func(t *testing.T) {
			b := New(100_000, full)
			now := t0
			for range 10 {
				b.Take("attacker", l, now)
			}
			if w := b.Take("attacker", l, now); w <= 0 {
				t.Fatal("attacker not limited after its burst")
			}
			for i := range 200_000 {
				b.Take(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), l, now)
				if i%1000 == 0 {
					now = now.Add(time.Millisecond) // 200 ms over the flood
					// The attacker keeps trying, as an attacker does.
					if w := b.Take("attacker", l, now); w <= 0 {
						t.Fatalf("after %d other addresses the attacker is no longer limited", i)
					}
				}
			}
			if w := b.Take("attacker", l, now); w <= 0 {
				t.Fatal("after 200,000 other addresses the attacker is no longer limited")
			}
			if n := b.Len(); n > 100_000 {
				t.Fatalf("Len = %d, beyond the bound 100,000", n)
			}
		})
	}
}

// Under Refuse, an idle limited key is not forgotten to make room: the
// flood is refused instead, until a bucket is full again.
func TestBucketsRefuseKeepsIdleLimitedKey(t *testing.T) {
	l := Limit{PerSecond: 1, Burst: 2}
	b := New(3, Refuse)
	b.Take("attacker", l, t0)
	b.Take("attacker", l, t0)
	b.Take("x", l, t0)
	b.Take("y", l, t0)
	if w := b.Take("z", l, t0); w <= 0 {
		t.Fatal("a new key at capacity was admitted under Refuse")
	}
	if w := b.Take("attacker", l, t0); w <= 0 {
		t.Fatal("the attacker's bucket was forgotten")
	}
	// Once the buckets are full again they go, one by one, and z fits.
	if w := b.Take("z", l, t0.Add(2*time.Second)); w != 0 {
		t.Fatalf("z refused after the buckets refilled: wait %v", w)
	}
}

func TestClientKey(t *testing.T) {
	tests := []struct{ peer, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"fe80::1%eth0", "fe80::/64"},
		{"stdio", "stdio"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := ClientKey(tt.peer); got != tt.want {
			t.Errorf("ClientKey(%q) = %q, want %q", tt.peer, got, tt.want)
		}
	}
}
