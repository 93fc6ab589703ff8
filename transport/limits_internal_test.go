package transport

import (
	"net"
	"testing"
	"time"
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

// TestLimitListenerExemptsTrustedProxies: connections from a trusted
// proxy carry every client behind it and are not counted; others are.
func TestLimitListenerExemptsTrustedProxies(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trusted, _ := ParseTrustedProxies([]string{"127.0.0.1"})
	ln := LimitListenerExempting(inner, 1, trusted)
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func(from string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Skipf("cannot dial from %s here: %v", from, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	wantAccepted := func(n int) {
		t.Helper()
		for i := range n {
			select {
			case c := <-accepted:
				t.Cleanup(func() { c.Close() }) // held open: it counts
			case <-time.After(3 * time.Second):
				t.Fatalf("connection %d of %d not accepted", i+1, n)
			}
		}
	}
	for range 3 {
		dial("127.0.0.1") // the proxy: beyond the limit of 1
	}
	wantAccepted(3)
	dial("127.0.0.2")
	wantAccepted(1)
	dial("127.0.0.2") // a client's second connection: closed on accept
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("a client's second connection was accepted with a limit of 1")
	case <-time.After(200 * time.Millisecond):
	}
}
