package inspector

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestHistoryBounds: the history keeps the newest entries within its
// count and byte limits, numbering them on.
func TestHistoryBounds(t *testing.T) {
	h := newHistory(3)
	now := time.Unix(0, 0)
	for i := 0; i < 5; i++ {
		h.add(&entry{Kind: "evaluate", Summary: strings.Repeat("x", 10)}, now)
	}
	got := h.list()
	if len(got) != 3 || got[0].ID != 3 || got[2].ID != 5 {
		t.Fatalf("kept %d entries starting at %d", len(got), got[0].ID)
	}
	h = newHistory(100)
	h.maxBytes = 500
	for i := 0; i < 10; i++ {
		h.add(&entry{Kind: "evaluate", Summary: strings.Repeat("y", 100)}, now)
	}
	if got := h.list(); len(got) >= 10 || h.bytes > h.maxBytes || got[len(got)-1].ID != 10 {
		t.Errorf("byte bound: %d entries, %d bytes", len(got), h.bytes)
	}
	// One entry larger than the bound is still kept: the last request is
	// always visible.
	h.add(&entry{Kind: "evaluate", Summary: strings.Repeat("z", 1000)}, now)
	if got := h.list(); len(got) != 1 || got[0].ID != 11 {
		t.Errorf("oversized entry: %d entries", len(got))
	}
}

// TestURL: the printed URL carries the token in its fragment, and a
// listener on every interface is shown as loopback.
func TestURL(t *testing.T) {
	in := &Inspector{token: "tok"}
	for addr, want := range map[net.Addr]string{
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8090}: "http://127.0.0.1:8090/#token=tok",
		&net.TCPAddr{IP: net.IPv4zero, Port: 8090}:           "http://127.0.0.1:8090/#token=tok",
		&net.TCPAddr{IP: net.IPv6loopback, Port: 9}:          "http://[::1]:9/#token=tok",
	} {
		if got := in.URL(addr); got != want {
			t.Errorf("URL(%v) = %q, want %q", addr, got, want)
		}
	}
}
