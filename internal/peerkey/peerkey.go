// Package peerkey is the one key that limits a caller by its address: an
// IPv4 address as it is, an IPv6 address by its /64 (one host commonly
// holds a whole /64, so single IPv6 addresses would let it rotate past any
// limit). The rate limits, failed-login budgets and the transports'
// per-IP connection limit all count under it. It is a leaf of the
// standard library, so every layer may use it.
package peerkey

import (
	"net"
	"net/netip"
)

// Of is the key of peer, a host as a transport reports it: an IPv4
// address as it is, an IPv6 address by its /64, an IPv4-mapped IPv6
// address as IPv4, and anything that is not an address (a transport's
// name such as "stdio") as it is. peer may carry brackets
// ("[2001:db8::1]") and a zone.
func Of(peer string) string {
	s := peer
	if len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']' {
		s = s[1 : len(s)-1]
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return peer
	}
	return key(a)
}

// Addr is [Of] a connection's address (host and port, as
// net.Conn.RemoteAddr gives it). An address that is not IP (a Unix
// socket's path) is its own key.
func Addr(a net.Addr) string {
	var ip netip.Addr
	switch v := a.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(v.IP)
	case *net.UDPAddr:
		ip, _ = netip.AddrFromSlice(v.IP)
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return a.String()
		}
		ip = ap.Addr()
	}
	return key(ip)
}

// key is the one place an address becomes its key: IPv4 (also when
// mapped into IPv6) as it is, IPv6 by its /64, zones dropped.
func key(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if !a.Is6() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}
