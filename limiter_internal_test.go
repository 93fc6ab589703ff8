package manglecp

import "testing"

// TestShareKeyPerPrefix: anonymous callers share evaluation slots by
// client as the limits count them (IPv6 per /64, issue 30), identities by
// name.
func TestShareKeyPerPrefix(t *testing.T) {
	tests := []struct {
		a, b *caller
		same bool
	}{
		{&caller{anonymous: true, peer: "2001:db8:1:2::1"}, &caller{anonymous: true, peer: "2001:db8:1:2::ffff"}, true},
		{&caller{anonymous: true, peer: "[2001:db8:1:2::1]"}, &caller{anonymous: true, peer: "2001:db8:1:3::1"}, false},
		{&caller{anonymous: true, peer: "192.0.2.1"}, &caller{anonymous: true, peer: "192.0.2.2"}, false},
		{&caller{name: "bot"}, &caller{name: "bot"}, true},
		{&caller{name: "192.0.2.1"}, &caller{anonymous: true, peer: "192.0.2.1"}, false},
	}
	for _, tt := range tests {
		if got := tt.a.shareKey() == tt.b.shareKey(); got != tt.same {
			t.Errorf("%q vs %q: same %v, want %v", tt.a.shareKey(), tt.b.shareKey(), got, tt.same)
		}
	}
}
