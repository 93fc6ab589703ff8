package chrome

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// allowList is the parsed [Config.AllowedHosts]: host names and IP
// literals, each with every port or with one port.
type allowList struct {
	any bool
	// ports maps a normalized host to the ports it allows; a nil set
	// allows every port.
	ports map[string]map[string]bool
}

// ParseAllowedHost parses one allow-list entry: "host" or an IP literal
// (every port), "host:port" or "[v6]:port" (that port only), or "*"
// (every host and port). It returns the host (lower case, IP literals in
// their canonical form, v6 without brackets) and the port, "" for every
// port.
func ParseAllowedHost(entry string) (host, port string, err error) {
	e := strings.ToLower(strings.TrimSpace(entry))
	switch {
	case e == "":
		return "", "", fmt.Errorf("empty host")
	case e == "*":
		return "*", "", nil
	case strings.ContainsAny(e, "/?#@ "):
		return "", "", fmt.Errorf("%q is not a host or host:port (no scheme, path or credentials)", clip(entry, 100))
	case strings.HasPrefix(e, "["):
		if h, p, err := net.SplitHostPort(e); err == nil {
			host, port = h, p
		} else if strings.HasSuffix(e, "]") {
			host = strings.Trim(e, "[]")
		} else {
			return "", "", fmt.Errorf("%q: unbalanced brackets", clip(entry, 100))
		}
	case strings.Count(e, ":") == 1:
		host, port, _ = strings.Cut(e, ":")
	default: // a name, an IPv4 literal or a bare IPv6 literal
		host = e
	}
	if host == "" {
		return "", "", fmt.Errorf("%q has no host", clip(entry, 100))
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("%q: the port must be a number from 1 to 65535", clip(entry, 100))
		}
		port = strconv.Itoa(mustAtoi(port))
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	} else if strings.Contains(host, ":") {
		return "", "", fmt.Errorf("%q is not a host or host:port", clip(entry, 100))
	}
	return host, port, nil
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }

// newAllowList parses entries; entries that do not parse are returned as
// problems and left out (they allow nothing).
func newAllowList(entries []string) (*allowList, []error) {
	l := &allowList{ports: map[string]map[string]bool{}}
	var problems []error
	for _, e := range entries {
		host, port, err := ParseAllowedHost(e)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if host == "*" {
			l.any = true
			continue
		}
		set, seen := l.ports[host]
		switch {
		case port == "":
			l.ports[host] = nil // every port
		case seen && set == nil: // already every port
		default:
			if set == nil {
				set = map[string]bool{}
				l.ports[host] = set
			}
			set[port] = true
		}
	}
	return l, problems
}

// normalHost lower-cases host, strips brackets and renders IP literals
// canonically.
func normalHost(host string) string {
	host = strings.ToLower(strings.Trim(host, "[]"))
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

// hostAllowed reports whether some port of host is allowed.
func (l *allowList) hostAllowed(host string) bool {
	if l.any {
		return true
	}
	_, ok := l.ports[normalHost(host)]
	return ok
}

// allows reports whether host:port is allowed.
func (l *allowList) allows(host, port string) bool {
	if l.any {
		return true
	}
	set, ok := l.ports[normalHost(host)]
	return ok && (set == nil || set[port])
}

// defaultPort is the port a URL without one connects to.
func defaultPort(scheme string) string {
	switch scheme {
	case "https", "wss":
		return "443"
	}
	return "80"
}

// urlAllows reports whether u's host and port (explicit or the scheme's
// default) are allowed.
func (l *allowList) urlAllows(u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = defaultPort(strings.ToLower(u.Scheme))
	}
	return l.allows(u.Hostname(), port)
}
