package transport

import (
	"net"
	"testing"
)

// TestRemoteIPPerPrefix: the per-IP connection limit counts IPv4 callers by
// address and IPv6 callers by /64 (issue 26 item 5, issue 30), so a host
// rotating through its /64 does not get perIP connections per address.
func TestRemoteIPPerPrefix(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2::1"), Port: 1}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::9"), Port: 1}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 1}, "192.0.2.7"},
		{&net.UDPAddr{IP: net.ParseIP("2001:db8:1:3::1"), Port: 1}, "2001:db8:1:3::/64"},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, "/tmp/s"},
	}
	for _, tt := range tests {
		if got := remoteIP(tt.addr); got != tt.want {
			t.Errorf("remoteIP(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
