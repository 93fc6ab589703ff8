// Package serve is `manglecp serve`: a domain over HTTP and WebSocket (or
// one session over stdio) until SIGINT or SIGTERM, then a drain; with its
// own flags for the listener (TLS, per-IP connections, write timeout,
// trusted proxies), operations (logs, metrics, tracing, the shared store),
// the garbage collector and reloading changed rules. The domain and the
// server options come from package serverconf.
package serve

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/serverconf"
	"github.com/manglecp/manglecp/protocol"
	libserve "github.com/manglecp/manglecp/serve"
	"github.com/manglecp/manglecp/transport"
)

// Run is `manglecp serve`: it runs the HTTP server until SIGINT or
// SIGTERM, then drains: running requests finish, new ones get
// server_not_ready, and the process exits within the grace period.
func Run(ctx context.Context, env cmdline.Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "serve", Synopsis: "manglecp serve [--addr HOST:PORT | --stdio] [flags]",
		Description: "Serves the embedded browser-diagnostics domain (or the workspace domain over the files under\n--root DIR with --domain workspace, or the rules of --rules DIR) over HTTP and\nWebSocket on --addr, or one session over stdin/stdout with --stdio. SIGINT or SIGTERM drains:\nrunning requests finish, new ones get server_not_ready, and the process exits within --grace."}
	fs := cmdline.NewFlagSet("serve")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address HOST:PORT")
	rules := fs.String("rules", "", "directory with policy/ and domain/ .mg files replacing the embedded domain rules")
	config := fs.String("config", "", "JSON configuration file (limits, disclosure thresholds, cache sizes, auth)")
	grace := fs.Duration("grace", 10*time.Second, "how long draining may take on SIGTERM before the process exits")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS and WSS with this certificate (PEM); needs --tls-key")
	tlsKey := fs.String("tls-key", "", "the private key of --tls-cert (PEM)")
	stdio := fs.Bool("stdio", false, "serve one session over stdin/stdout (one JSON message per line) instead of HTTP; logs go to stderr")
	watch := fs.Duration("watch", time.Second, "how often to check --rules DIR for changed .mg files (SIGHUP also reloads)")
	token := fs.String("auth-token", "", "require this token (bearer or API key); also MANGLECP_AUTH_TOKEN. Over stdio the session presents it itself")
	var gc gcSettings
	fs.IntVar(&gc.percent, "gc-percent", -1, fmt.Sprintf("garbage collector target percentage (as GOGC); default GOGC from the environment, else %d", defaultGCPercent))
	fs.StringVar(&gc.limit, "memory-limit", "", "soft memory limit of the process, e.g. 512MiB (as GOMEMLIMIT); default GOMEMLIMIT from the environment, else 1GiB")
	var of opsFlags
	of.register(fs)
	perIP := fs.Int("max-conns-per-ip", transport.DefaultMaxConnsPerIP, "connections one client IP (IPv6: /64) may hold open at once; more are closed when accepted. Those of --trusted-proxies are not counted")
	writeTimeout := fs.Duration("write-timeout", transport.DefaultWriteTimeout, "how long writing one answer may take; a client that does not read for this long is disconnected and its queued work dropped")
	var pf proxyFlags
	pf.register(fs)
	allowedHosts := fs.String("allowed-hosts", "", "comma-separated Host names answered besides the loopback names (localhost, 127.0.0.1, ::1) when --addr is a loopback address; \"*\" answers any Host")
	dom := serverconf.AddDomainFlags(fs)
	serverconf.AddBrowserFlags(fs, &dom.Browser)
	ups := serverconf.AddUpstreamFlags(fs)
	pos, code, ok := cmdline.ParseArgs(h, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if err := dom.Check(); err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return cmdline.UsageError(stderr, h, "--tls-cert and --tls-key go together")
	}
	if *perIP <= 0 || *writeTimeout <= 0 {
		return cmdline.UsageError(stderr, h, "--max-conns-per-ip and --write-timeout must be positive")
	}
	if len(pos) > 0 {
		return cmdline.UsageError(stderr, h, "unexpected argument %s (serve takes only flags)", cmdline.Quote(pos[0]))
	}
	if err := cmdline.CheckListenAddr("--addr", *addr); err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	logger, err := of.logger(stderr)
	if err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	if err := gc.apply(env, logger); err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	if *token == "" {
		*token = env.Getenv("MANGLECP_AUTH_TOKEN")
	}
	dom.Gateway = ups.Enabled()
	d, opts, err := serverconf.Configure(env, *rules, *config, *token, logger, dom)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
		return 1
	}
	if ups.Enabled() { // the gateway domain (gateway.go) with --rules as its pack
		if d, err = ups.Gateway(ctx, rules, logger); err != nil {
			fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
			return 1
		}
	}
	// The domain's resources (the browser) are released on every way out.
	if d.Close != nil {
		defer func() { _ = d.Close() }()
	}
	if *config != "" {
		if c, err := serverconf.Load(*config); err == nil { // already checked by Configure
			of.storeKey = c.StoreKey
		}
	}
	// Before the local key file: with --store redis the key must be the
	// configured one every replica shares.
	ops, err := of.setupOps(ctx, env, opts, logger)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
		return 1
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ops.close(cctx)
	}()
	serverconf.UseLocalConfirmationKey(env, opts, logger)
	var origins []string
	if *config != "" {
		c, _ := serverconf.Load(*config) // already checked by Configure
		origins = c.CORSOrigins
		pf.fromConfig(c)
	}
	proxies, fwdHeader, err := pf.resolve()
	if err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	if *stdio {
		return serveStdio(ctx, d, opts, *token, stdin, stdout, stderr, logger)
	}
	so := &libserve.Options{
		Server:        opts,
		HTTP:          &transport.HTTPOptions{AllowedOrigins: origins, WriteTimeout: *writeTimeout, TrustedProxies: proxies, ForwardedHeader: fwdHeader},
		Grace:         *grace,
		MaxConnsPerIP: *perIP,
		AllowedHosts:  strings.Split(*allowedHosts, ","),
	}
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			fmt.Fprintf(stderr, "manglecp serve: --tls-cert/--tls-key: %v\n", err)
			return 1
		}
		so.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
		return 1
	}
	so.Metrics = ops.metrics
	if of.metricsAddr != "" {
		if so.OpsListener, err = listen(of.metricsAddr); err != nil {
			_ = ln.Close()
			fmt.Fprintf(stderr, "manglecp serve: --metrics-addr: %v\n", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	loaded := fingerprint(*rules) // what the server is about to load; later changes trigger a reload
	so.Loaded = func(srv *manglecp.Server) {
		ups.Loaded(srv) // a late upstream joins (gateway.go)
		go watchRules(ctx, srv, *rules, d.Rules, loaded, *watch, logger)
	}
	if err := libserve.Serve(ctx, ln, d, so); err != nil {
		fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
		return 1
	}
	return 0
}

// serveStdio serves one session on stdin and stdout until EOF (exit 0) or
// a signal. The session presents token, if any, as its credentials.
func serveStdio(ctx context.Context, d manglecp.Domain, opts *manglecp.Options, token string, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A reader that closes stdout must not kill the process with SIGPIPE:
	// with SIGPIPE notified, the write fails with EPIPE instead, the session
	// logs the answers it cannot deliver and ends (exit status 1).
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	so := &libserve.Options{Server: opts}
	if token != "" {
		so.Credentials = &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: token}
	}
	started := false
	so.Loaded = func(*manglecp.Server) { started = true }
	if err := libserve.Stdio(ctx, d, so, stdin, stdout); err != nil {
		if !started {
			fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
			return 1
		}
		logger.Error("stdio session ended: its answers cannot be delivered", "error", err.Error())
		return 1
	}
	return 0
}
