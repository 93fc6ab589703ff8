package manglecp

import "testing"

// TestFreeList: a free list hands back what was put, holds at most its
// capacity and refuses buffers over its limit.
func TestFreeList(t *testing.T) {
	l := newFreeList(2, 100, func(b []byte) int { return cap(b) })
	if _, ok := l.get(); ok {
		t.Fatal("an empty list gave a buffer")
	}
	tests := []struct {
		name string
		put  []int // capacities put, in order
		want []int // capacities got back, in order
	}{
		{"one", []int{10}, []int{10}},
		{"at the limit", []int{100}, []int{100}},
		{"over the limit", []int{101}, nil},
		{"more than it holds", []int{1, 2, 3}, []int{1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range tc.put {
				l.put(make([]byte, 0, c))
			}
			for _, c := range tc.want {
				b, ok := l.get()
				if !ok || cap(b) != c {
					t.Fatalf("got cap %d (%v), want %d", cap(b), ok, c)
				}
			}
			if b, ok := l.get(); ok {
				t.Errorf("left over: cap %d", cap(b))
			}
		})
	}
}
