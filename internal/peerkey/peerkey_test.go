package peerkey_test

import (
	"net"
	"testing"

	"github.com/manglecp/manglecp/internal/peerkey"
)

func TestOf(t *testing.T) {
	for _, tc := range [][2]string{
		{"192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]", "2001:db8:1:2::/64"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"fe80::1%eth0", "fe80::/64"},
		{"stdio", "stdio"},
	} {
		if got := peerkey.Of(tc[0]); got != tc[1] {
			t.Errorf("Of(%q) = %q, want %q", tc[0], got, tc[1])
		}
	}
}

func TestAddr(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 1}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::9"), Port: 1}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 1}, "192.0.2.7"},
		{&net.UDPAddr{IP: net.ParseIP("2001:db8:1:3::1"), Port: 1}, "2001:db8:1:3::/64"},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, "/tmp/s"},
	} {
		if got := peerkey.Addr(tc.addr); got != tc.want {
			t.Errorf("Addr(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
