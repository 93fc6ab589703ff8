package freelist_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/manglecp/manglecp/internal/freelist"
)

// TestList: a free list hands back what was put, holds at most its
// capacity and refuses buffers over its limit.
func TestList(t *testing.T) {
	l := freelist.New(2, 100, func(b []byte) int { return cap(b) })
	if _, ok := l.Get(); ok {
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
				l.Put(make([]byte, 0, c))
			}
			for _, c := range tc.want {
				b, ok := l.Get()
				if !ok || cap(b) != c {
					t.Fatalf("got cap %d (%v), want %d", cap(b), ok, c)
				}
			}
			if b, ok := l.Get(); ok {
				t.Errorf("left over: cap %d", cap(b))
			}
		})
	}
}

// A request reads into a buffer an earlier one gave back, or a new one.
func ExampleList() {
	bodies := freelist.New(4, 1<<20, func(b []byte) int { return cap(b) })
	for range 2 {
		buf, ok := bodies.Get()
		if !ok {
			buf = make([]byte, 0, 4096)
		}
		buf = append(buf[:0], "a request"...)
		fmt.Println(ok, string(buf))
		bodies.Put(buf[:0])
	}
	// Output:
	// false a request
	// true a request
}

// TestPerProcessor: one buffer per processor, never more than
// MaxKept.
func TestPerProcessor(t *testing.T) {
	if n := freelist.PerProcessor(); n < 1 || n > freelist.MaxKept || n > runtime.GOMAXPROCS(0) {
		t.Errorf("PerProcessor() = %d with GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
}
