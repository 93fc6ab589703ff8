// Package serve runs a MangleCP domain as a network service in one call:
// [ListenAndServe] and [Serve] (HTTP and WebSocket on one listener) and
// [Stdio] (one session on a reader and a writer). It is what `manglecp
// serve` runs, with the same protections by default:
//
//   - the listener answers from the first moment (the manifest says
//     "booting" while the rules load);
//   - one client IP holds at most [transport.DefaultMaxConnsPerIP]
//     connections; more are closed when accepted;
//   - request bodies and session messages held server-wide are bounded
//     ([transport.DefaultBudgetBytes]); a peer that does not read its
//     answer within the write timeout is disconnected;
//   - on a loopback address only the loopback Host names are answered, so
//     a web page cannot reach the server through DNS rebinding;
//   - /healthz and /readyz answer probes, /metrics serves Options.Metrics,
//     optionally on a separate operations listener;
//   - when ctx ends the server drains: the status becomes "draining"
//     (sessions receive the new manifest), the listener closes, admitted
//     requests finish, new ones on open connections get server_not_ready,
//     HTTP answers close their connection and WebSocket sessions close with
//     status 1001 after their last answer; the call returns once that is
//     done or the grace period has passed.
//
// The package sits above the server and the transports: it imports both,
// so neither has to know the other.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// Options configure [ListenAndServe], [Serve] and [Stdio]. A nil *Options
// means the defaults.
type Options struct {
	// Server configures the MangleCP server (limits, auth, logger, ...);
	// nil means its defaults: among them the confirmation key of
	// MANGLECP_CONFIRMATION_KEY or the user's key file (the one `manglecp
	// invoke --confirm` signs with) and a logger on stderr at info. Its
	// Logger also receives the start-up ("serving MangleCP", with the
	// address) and drain messages.
	Server *manglecp.Options
	// HTTP configures the HTTP binding (base path, CORS, WebSocket, write
	// timeout). Serve fills what it leaves unset: the Host allow-list (see
	// AllowedHosts), a server-wide byte budget of
	// [transport.DefaultBudgetBytes] and the drain.
	HTTP *transport.HTTPOptions
	// TLS, when set, serves HTTPS and WSS with this configuration.
	TLS *tls.Config
	// Grace bounds draining after ctx ends; default 10 seconds.
	Grace time.Duration
	// MaxConnsPerIP bounds the connections one client IP may hold open at
	// once; more are closed when accepted. Default
	// [transport.DefaultMaxConnsPerIP]; negative means no bound. The
	// connections of HTTP.TrustedProxies are not counted.
	MaxConnsPerIP int
	// AllowedHosts are Host names answered besides the loopback names
	// (localhost, 127.0.0.1, ::1) when the listener is on a loopback
	// address; on another address, when set, they are the only names
	// answered. "*" answers any Host. Unused when HTTP.AllowedHosts is set.
	AllowedHosts []string
	// Credentials are presented by the stdio session itself (Spec 08: a
	// token from the environment or a flag); ignored by HTTP.
	Credentials *protocol.Credentials
	// Loaded, when set, is called once the rules are loaded, before Ready,
	// with the server: a host that reloads rules ([manglecp.Server.Reload])
	// or watches the server keeps it.
	Loaded func(srv *manglecp.Server)
	// Ready, when set, is called once the rules are loaded and the server
	// is ready, with the listener's address (nil for stdio).
	Ready func(addr net.Addr)
	// Metrics, when set, is served at /metrics (for example
	// promhttp.HandlerFor(registry, promhttp.HandlerOpts{}) with the
	// registry of Server.Metrics): on OpsListener when set, otherwise on the
	// main listener.
	Metrics http.Handler
	// OpsListener, when set, serves /metrics, /healthz and /readyz apart
	// from the public listener (e.g. on an internal address), from the
	// first moment; Serve closes it when it returns. The main listener
	// answers /healthz and /readyz either way ([transport.WithOps]).
	OpsListener net.Listener
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Grace <= 0 {
		c.Grace = 10 * time.Second
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = transport.DefaultMaxConnsPerIP
	}
	// One logger for the server and the start-up and drain messages:
	// by default text on stderr at info, so where it listens is printed.
	var so manglecp.Options
	if c.Server != nil {
		so = *c.Server
	}
	if so.Logger == nil {
		so.Logger = manglecp.DefaultLogger()
	}
	c.Server = &so
	return c
}

func (o *Options) logger() *slog.Logger { return o.Server.Logger }

// httpOptions completes o.HTTP for a listener on addr.
func (o *Options) httpOptions(addr net.Addr) *transport.HTTPOptions {
	var h transport.HTTPOptions
	if o.HTTP != nil {
		h = *o.HTTP
	}
	if len(h.AllowedHosts) == 0 {
		h.AllowedHosts = HostAllowList(addr.String(), o.AllowedHosts)
	}
	if h.Budget == nil {
		h.Budget = transport.NewBudget(transport.DefaultBudgetBytes)
	}
	if h.Drain == nil {
		h.Drain = transport.NewDrain()
	}
	return &h
}

// opsOptions are the operations endpoints of the main listener (with
// /metrics when metrics) or of OpsListener.
func (o *Options) opsOptions(srv *manglecp.Server, h *transport.HTTPOptions, metrics bool) *transport.OpsOptions {
	oo := &transport.OpsOptions{BasePath: h.BasePath, SessionOpened: srv.SessionOpened}
	if metrics {
		oo.Metrics = o.Metrics
	}
	return oo
}

// HostAllowList is the Host allow-list of a listener on addr (HOST:PORT):
// the loopback names plus extra when addr is a loopback address (a web
// page must not reach a local server through DNS rebinding), extra alone
// otherwise (nil: any Host). "*" in extra turns the check off.
func HostAllowList(addr string, extra []string) []string {
	var hosts []string
	for _, h := range extra {
		if h = strings.TrimSpace(h); h == "*" {
			return nil
		} else if h != "" {
			hosts = append(hosts, h)
		}
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) {
		hosts = append(hosts, "localhost", "127.0.0.1", "::1")
		if ip != nil {
			hosts = append(hosts, ip.String())
		}
	}
	return hosts
}

// ListenAndServe listens on the TCP address addr and calls [Serve].
func ListenAndServe(ctx context.Context, addr string, d manglecp.Domain, opts *Options) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return Serve(ctx, ln, d, opts)
}

// Serve serves the domain over HTTP and WebSocket on ln until ctx ends,
// then drains and returns nil. The listener also answers the probes
// /healthz and /readyz, /metrics when Options.Metrics is set (and
// OpsListener is not), and accepts W3C trace context ([transport.WithOps]).
// It returns an error, after closing ln, when the domain's rules do not
// load (naming file and line) or the listener fails.
func Serve(ctx context.Context, ln net.Listener, d manglecp.Domain, opts *Options) error {
	o := opts.withDefaults()
	log := o.logger()
	if o.MaxConnsPerIP > 0 {
		var proxies []netip.Prefix // their connections carry many clients: uncounted
		if o.HTTP != nil {
			proxies = o.HTTP.TrustedProxies
		}
		ln = transport.LimitListenerExempting(ln, o.MaxConnsPerIP, proxies)
	}
	ho := o.httpOptions(ln.Addr())
	// The server answers "booting" from the first moment and becomes ready
	// when Load is done; sessions opened meanwhile are told.
	srv := manglecp.New(d, o.Server)
	hs := &http.Server{
		Handler:           transport.WithOps(srv, transport.NewHTTPHandler(srv, ho), o.opsOptions(srv, ho, o.OpsListener == nil)),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		// No ReadTimeout/WriteTimeout: WebSocket sessions are long-lived; the
		// HTTP binding sets per-request deadlines itself.
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		TLSConfig:      o.TLS,
	}
	if o.OpsListener != nil {
		ops := &http.Server{
			Handler:           transport.NewOpsHandler(srv, o.opsOptions(srv, ho, true)),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		opsDone := make(chan struct{})
		go func() { defer close(opsDone); _ = ops.Serve(o.OpsListener) }()
		log.Info("serving metrics and probes", "addr", o.OpsListener.Addr().String())
		defer func() { _ = ops.Close(); <-opsDone }()
	}
	errc := make(chan error, 1)
	go func() {
		if o.TLS != nil {
			errc <- hs.ServeTLS(ln, "", "")
			return
		}
		errc <- hs.Serve(ln)
	}()
	if err := srv.Load(ctx); err != nil {
		_ = hs.Close()
		<-errc
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil // ctx ended while loading: nothing to drain
		}
		return err
	}
	defer func() { _ = srv.Close() }() // the domain's resources, after draining
	scheme := "http"
	if o.TLS != nil {
		scheme = "https"
	}
	log.Info("serving MangleCP", "addr", ln.Addr().String(), "domain", srv.Manifest().Domain.ID,
		"manifest", scheme+"://"+ln.Addr().String()+transport.ManifestPath)
	if o.Loaded != nil {
		o.Loaded(srv)
	}
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	case <-ctx.Done():
	}
	drainAndStop(srv, hs, ln, ho.Drain, o.Grace, log)
	<-errc
	return nil
}

// drainAndStop stops serving gracefully. First the listener closes (a new
// client is refused at connect, so it knows its request never arrived),
// requests on open connections get server_not_ready and every HTTP answer
// closes its connection (a keep-alive client gets an answer, never a
// connection closed under its next request), WebSocket sessions close
// with 1001 once their requests are answered. As soon as every admitted
// request is answered, the remaining idle connections close. It returns
// then, or when the grace period ends (closing what is left).
func drainAndStop(srv *manglecp.Server, hs *http.Server, ln net.Listener, drain *transport.Drain, grace time.Duration, log *slog.Logger) {
	start := time.Now()
	log.Info("draining", "grace", grace.String(), "in_flight", srv.InFlight(), "sessions", drain.Sessions())
	srv.Drain()
	drain.Start()
	_ = ln.Close() // Serve returns; Shutdown below still waits for the open connections
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	werr := srv.Wait(ctx)
	derr := drain.Wait(ctx)
	serr := hs.Shutdown(ctx)
	if err := errors.Join(werr, derr, serr); err != nil {
		log.Warn("grace period over; closing what is left", "in_flight", srv.InFlight(), "sessions", drain.Sessions(), "error", err.Error())
		_ = hs.Close()
		return
	}
	log.Info("drained", "took", time.Since(start).Round(time.Millisecond).String())
}

// Stdio serves one session of the domain on in and out (one JSON message
// per line, the manifest first) until in reaches EOF, when pending answers
// are written and it returns nil, or ctx ends. It returns the error of
// [manglecp.NewServer] when the rules do not load (Loaded is not called
// then), or the session's when its answers cannot be written.
func Stdio(ctx context.Context, d manglecp.Domain, opts *Options, in io.Reader, out io.Writer) error {
	o := opts.withDefaults()
	srv, err := manglecp.NewServer(d, o.Server)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Close() }() // the domain's resources, after the session
	log := o.logger()
	log.Info("serving MangleCP over stdio", "domain", srv.Manifest().Domain.ID)
	if o.Loaded != nil {
		o.Loaded(srv)
	}
	if o.Ready != nil {
		o.Ready(nil)
	}
	ctx = protocol.WithTransport(ctx, "stdio")
	defer srv.SessionOpened()()
	conn := transport.NewStdioConn(in, out, srv.MaxMessageBytes(), nil)
	return transport.ServeSession(ctx, srv, conn, &transport.SessionOptions{
		Peer: "stdio", Logger: log, Credentials: o.Credentials,
	})
}
