package chrome

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"time"
)

// A gate is the only way out of a browser context to the network: a
// forward proxy on a loopback port that Chromium is told to send every
// request of the context through (Target.createBrowserContext proxyServer,
// with the implicit loopback bypass removed). It connects only to hosts
// and ports on the allow-list, so every target of the context is held to
// it, whatever created the target and whether or not DevTools is attached
// to it: the tab, its frames (also out-of-process ones), popups, dedicated,
// shared and service workers, and WebSocket, EventSource, beacons and
// prefetches, which request interception (Fetch) does not see. Request
// interception on the tab stays, to fail the tab's own requests early and
// name them; the gate is what holds.
//
// A gate records the refused destinations (host:port, at most
// maxGateBlocked) for the observation of its context. It is reusable for
// any browser context: [Browser.Run] opens one per run.
type gate struct {
	allow *allowList
	log   *slog.Logger
	ln    net.Listener
	srv   *http.Server
	proxy *httputil.ReverseProxy

	mu      sync.Mutex
	closed  bool
	tunnels map[net.Conn]struct{} // hijacked client and upstream connections
	blocked []string
	refused int
}

// maxGateBlocked bounds the refused destinations a gate records.
const maxGateBlocked = 20

// gateDialTimeout bounds one upstream connection attempt.
const gateDialTimeout = 10 * time.Second

// openGate starts a gate on a loopback port.
func openGate(allow *allowList, log *slog.Logger) (*gate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &gate{allow: allow, log: log, ln: ln, tunnels: map[net.Conn]struct{}{}}
	tr := &http.Transport{
		Proxy:                 nil, // never the environment's proxy
		DialContext:           g.dial,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: time.Minute,
		ForceAttemptHTTP2:     false,
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL // absolute-form request: already the target
			pr.Out.Host = pr.In.Host
		},
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "the server's browser could not reach this host", http.StatusBadGateway)
		},
	}
	g.srv = &http.Server{Handler: http.HandlerFunc(g.serve), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

// URL is the gate's proxy address, for Chromium's proxy settings.
func (g *gate) URL() string { return "http://" + g.ln.Addr().String() }

// refuse records a refused destination.
func (g *gate) refuse(dest string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refused++
	if len(g.blocked) < maxGateBlocked {
		g.blocked = append(g.blocked, clip(dest, maxURL))
	}
}

// Blocked returns the refused destinations and how many attempts were
// refused.
func (g *gate) Blocked() ([]string, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.blocked...), g.refused
}

// dial connects to an allowed host:port only (checked again here, so no
// path through the proxy reaches another).
func (g *gate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !g.allow.allows(host, port) {
		return nil, errors.New("host not allowed")
	}
	d := net.Dialer{Timeout: gateDialTimeout}
	return d.DialContext(ctx, network, addr)
}

func (g *gate) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		g.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || (r.URL.Scheme != "http" && r.URL.Scheme != "ws") {
		http.Error(w, "not a proxy request", http.StatusBadRequest)
		return
	}
	port := r.URL.Port()
	if port == "" {
		port = defaultPort(r.URL.Scheme)
	}
	if !g.allow.allows(r.URL.Hostname(), port) {
		g.refuse(r.URL.Scheme + "://" + net.JoinHostPort(normalHost(r.URL.Hostname()), port))
		// Close without an answer: the page sees a failed request, not a
		// response it could take for the host's.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		http.Error(w, "host not allowed", http.StatusForbidden)
		return
	}
	g.proxy.ServeHTTP(w, r)
}

// connect tunnels https and WebSocket connections to allowed hosts.
func (g *gate) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil || !g.allow.allows(host, port) {
		g.refuse(clip(strings.ToLower(r.Host), maxURL))
		http.Error(w, "host not allowed", http.StatusForbidden)
		return
	}
	up, err := g.dial(r.Context(), "tcp", r.Host)
	if err != nil {
		http.Error(w, "the server's browser could not reach this host", http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "no tunnels", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	if !g.track(down, up) {
		return
	}
	_, _ = down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n"))
	go g.pipe(up, io.MultiReader(buf, down), down)
	g.pipe(down, up, up)
}

// track registers a tunnel's connections, or closes them when the gate
// is closed.
func (g *gate) track(cs ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		g.tunnels[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst, then closes both ends of the tunnel (src's
// connection is from).
func (g *gate) pipe(dst net.Conn, src io.Reader, from net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = from.Close()
	g.mu.Lock()
	delete(g.tunnels, dst)
	delete(g.tunnels, from)
	g.mu.Unlock()
}

// Close stops the gate and ends its tunnels.
func (g *gate) Close() {
	g.mu.Lock()
	g.closed = true
	for c := range g.tunnels {
		_ = c.Close()
	}
	g.mu.Unlock()
	_ = g.srv.Close()
	if tr, ok := g.proxy.Transport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
}
