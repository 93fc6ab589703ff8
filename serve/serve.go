// Package serve runs a MangleCP domain as a network service in one call:
// [ListenAndServe] (HTTP and WebSocket on one listener) and [Stdio] (one
// session on a reader and a writer). It does what `manglecp serve` does for
// the embedded domain: the listener answers from the first moment (the
// manifest says "booting" while the rules load), and when ctx ends the
// server drains: the status becomes "draining", running requests finish,
// new ones get server_not_ready, and the call returns once admitted work
// is done or the grace period has passed.
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
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// Options configure [ListenAndServe], [Serve] and [Stdio]. A nil *Options
// means the defaults.
type Options struct {
	// Server configures the MangleCP server (limits, auth, logger, ...);
	// nil means its defaults.
	Server *manglecp.Options
	// HTTP configures the HTTP binding (base path, CORS, WebSocket).
	HTTP *transport.HTTPOptions
	// TLS, when set, serves HTTPS and WSS with this configuration.
	TLS *tls.Config
	// Grace bounds draining after ctx ends; default 10 seconds.
	Grace time.Duration
	// Credentials are presented by the stdio session itself (Spec 08: a
	// token from the environment or a flag); ignored by HTTP.
	Credentials *protocol.Credentials
	// Ready, when set, is called once the rules are loaded and the server
	// is ready, with the listener's address (nil for stdio).
	Ready func(addr net.Addr)
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Grace <= 0 {
		c.Grace = 10 * time.Second
	}
	return c
}

func (o *Options) logger() *slog.Logger {
	if o.Server != nil && o.Server.Logger != nil {
		return o.Server.Logger
	}
	return slog.New(slog.DiscardHandler)
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
// /healthz and /readyz and accepts W3C trace context ([transport.WithOps]). It returns an error, after closing ln, when
// the domain's rules do not load (naming file and line) or the listener
// fails.
func Serve(ctx context.Context, ln net.Listener, d manglecp.Domain, opts *Options) error {
	o := opts.withDefaults()
	log := o.logger()
	sw := newSwitch(manglecp.NewBooting(d, o.Server))
	hs := &http.Server{
		Handler:           transport.WithOps(sw, transport.NewHTTPHandler(sw, o.HTTP), opsOptions(o.HTTP)), // /healthz, /readyz, trace context
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		TLSConfig:         o.TLS,
	}
	errc := make(chan error, 1)
	go func() {
		if o.TLS != nil {
			errc <- hs.ServeTLS(ln, "", "")
			return
		}
		errc <- hs.Serve(ln)
	}()
	srv, err := manglecp.NewServer(d, o.Server)
	if err != nil {
		_ = hs.Close()
		<-errc
		return err
	}
	defer func() { _ = srv.Close() }() // the domain's resources, after draining
	sw.set(srv)
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
	srv.Drain()
	sctx, cancel := context.WithTimeout(context.Background(), o.Grace)
	defer cancel()
	_ = srv.Wait(sctx)
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("shutdown", "error", err.Error())
	}
	_ = hs.Close()
	<-errc
	return nil
}

// Stdio serves one session of the domain on in and out (one JSON message
// per line, the manifest first) until in reaches EOF, when pending answers
// are written and it returns nil, or ctx ends.
func Stdio(ctx context.Context, d manglecp.Domain, opts *Options, in io.Reader, out io.Writer) error {
	o := opts.withDefaults()
	srv, err := manglecp.NewServer(d, o.Server)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Close() }()
	if o.Ready != nil {
		o.Ready(nil)
	}
	conn := transport.NewStdioConn(in, out, srv.MaxMessageBytes(), nil)
	return transport.ServeSession(ctx, srv, conn, &transport.SessionOptions{
		Peer: "stdio", Logger: o.logger(), Credentials: o.Credentials,
	})
}

// opsOptions tells transport.WithOps the base path of the endpoints.
func opsOptions(h *transport.HTTPOptions) *transport.OpsOptions {
	if h == nil {
		return nil
	}
	return &transport.OpsOptions{BasePath: h.BasePath}
}
