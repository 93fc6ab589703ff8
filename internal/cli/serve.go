package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

func versionString() string {
	return fmt.Sprintf("manglecp %s (protocol %s, conformance level %d)", manglecp.Version, protocol.Version, manglecp.ConformanceLevel)
}

// serve runs the HTTP server until SIGINT or SIGTERM, then drains: running
// requests finish, new ones get server_not_ready, and the process exits
// within the grace period.
func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := cmdHelp{name: "serve", synopsis: "manglecp serve [--addr HOST:PORT | --stdio] [flags]",
		description: "Serves the embedded browser-diagnostics domain (or the workspace domain over the files under\n--root DIR with --domain workspace, or the rules of --rules DIR) over HTTP and\nWebSocket on --addr, or one session over stdin/stdout with --stdio. SIGINT or SIGTERM drains:\nrunning requests finish, new ones get server_not_ready, and the process exits within --grace."}
	fs := newFlagSet("serve")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address HOST:PORT")
	rules := fs.String("rules", "", "directory with policy/ and domain/ .mg files replacing the embedded domain rules")
	config := fs.String("config", "", "JSON configuration file (limits, disclosure thresholds, cache sizes, auth)")
	grace := fs.Duration("grace", 10*time.Second, "how long draining may take on SIGTERM before the process exits")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS and WSS with this certificate (PEM); needs --tls-key")
	tlsKey := fs.String("tls-key", "", "the private key of --tls-cert (PEM)")
	stdio := fs.Bool("stdio", false, "serve one session over stdin/stdout (one JSON message per line) instead of HTTP; logs go to stderr")
	watch := fs.Duration("watch", time.Second, "how often to check --rules DIR for changed .mg files (SIGHUP also reloads)")
	token := fs.String("auth-token", "", "require this token (bearer or API key); also MANGLECP_AUTH_TOKEN. Over stdio the session presents it itself")
	var of opsFlags
	of.register(fs)
	perIP := fs.Int("max-conns-per-ip", transport.DefaultMaxConnsPerIP, "connections one client IP may hold open at once; more are closed when accepted")
	writeTimeout := fs.Duration("write-timeout", transport.DefaultWriteTimeout, "how long writing one answer may take; a client that does not read for this long is disconnected and its queued work dropped")
	allowedHosts := fs.String("allowed-hosts", "", "comma-separated Host names answered besides the loopback names (localhost, 127.0.0.1, ::1) when --addr is a loopback address; \"*\" answers any Host")
	dom := addDomainFlags(fs)
	addBrowserFlags(fs, &dom.browser)
	pos, code, ok := parseArgs(h, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if err := dom.check(); err != nil {
		return usageError(stderr, h, "%v", err)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usageError(stderr, h, "--tls-cert and --tls-key go together")
	}
	if *perIP <= 0 || *writeTimeout <= 0 {
		return usageError(stderr, h, "--max-conns-per-ip and --write-timeout must be positive")
	}
	if len(pos) > 0 {
		return usageError(stderr, h, "unexpected argument %s (serve takes only flags)", quote(pos[0]))
	}
	logger, err := of.logger(stderr)
	if err != nil {
		return usageError(stderr, h, "%v", err)
	}
	if *token == "" {
		*token = os.Getenv("MANGLECP_AUTH_TOKEN")
	}
	d, opts, err := configure(*rules, *config, *token, logger, dom)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
		return 1
	}
	// The domain's resources (the browser) are released on every way out.
	if d.Close != nil {
		defer func() { _ = d.Close() }()
	}
	// Before the local key file: with --store redis the key must be the
	// configured one every replica shares.
	ops, err := of.setupOps(ctx, opts, logger)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
		return 1
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ops.close(cctx)
	}()
	useLocalConfirmationKey(opts, logger)
	var origins []string
	if *config != "" {
		c, _ := loadConfig(*config) // already checked by configure
		origins = c.CORSOrigins
	}
	if *stdio {
		srv, err := manglecp.NewServer(d, opts)
		if err != nil {
			fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
			return 1
		}
		return serveStdio(ctx, srv, *token, stdin, stdout, logger)
	}
	var tlsConfig *tls.Config
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			fmt.Fprintf(stderr, "manglecp serve: --tls-cert/--tls-key: %v\n", err)
			return 1
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
		return 1
	}
	ln = transport.LimitListener(ln, *perIP)
	// Answer from the first moment: "booting" until the rules are loaded.
	sw := &switchHandler{}
	sw.set(manglecp.NewBooting(d, opts))
	drain := transport.NewDrain()
	httpOpts := &transport.HTTPOptions{
		AllowedOrigins: origins,
		AllowedHosts:   hostAllowList(*addr, *allowedHosts),
		WriteTimeout:   *writeTimeout,
		Budget:         transport.NewBudget(transport.DefaultBudgetBytes),
		Drain:          drain,
	}
	httpSrv := &http.Server{
		Handler:           of.withOps(sw, transport.NewHTTPHandler(sw, httpOpts), ops),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		// No ReadTimeout/WriteTimeout: WebSocket sessions are long-lived; the
		// HTTP binding sets per-request deadlines itself.
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		TLSConfig:      tlsConfig,
	}
	loaded := fingerprint(*rules) // what NewServer is about to load; later changes trigger a reload
	errc := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			errc <- httpSrv.ServeTLS(ln, "", "") // TLS 1.2 or newer
			return
		}
		errc <- httpSrv.Serve(ln)
	}()
	srv, err := manglecp.NewServer(d, opts)
	if err != nil {
		_ = httpSrv.Close()
		fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
		return 1
	}
	sw.set(srv)
	metricsSrv, err := of.serveMetrics(sw, ops, logger)
	if err != nil {
		_ = httpSrv.Close()
		fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
		return 1
	}
	if metricsSrv != nil {
		defer metricsSrv.Close()
	}
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
	}
	logger.Info("serving MangleCP", "addr", ln.Addr().String(), "domain", srv.Manifest().Domain.ID,
		"manifest", scheme+"://"+ln.Addr().String()+transport.ManifestPath)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watchRules(watchCtx, srv, *rules, d.Rules, loaded, *watch, logger)
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "manglecp serve: %v\n", err)
			return 1
		}
	case <-ctx.Done():
	}
	return drainAndStop(srv, httpSrv, ln, drain, *grace, logger)
}

// drainAndStop stops serving gracefully. First the listener closes (a new
// client is refused at connect, so it knows its request never arrived),
// requests on open connections get server_not_ready and every HTTP answer
// closes its connection (a keep-alive client gets an answer, never a
// connection closed under its next request), WebSocket sessions close
// with 1001 once their requests are answered. As soon as every admitted
// request is answered, the remaining idle connections close. It returns
// then, or when the grace period ends (closing what is left).
func drainAndStop(srv *manglecp.Server, httpSrv *http.Server, ln net.Listener, drain *transport.Drain, grace time.Duration, logger *slog.Logger) int {
	start := time.Now()
	logger.Info("draining", "grace", grace.String(), "in_flight", srv.InFlight(), "sessions", drain.Sessions())
	srv.Drain()
	drain.Start()
	_ = ln.Close() // Serve returns; Shutdown below still waits for the open connections
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	werr := srv.Wait(ctx)
	derr := drain.Wait(ctx)
	serr := httpSrv.Shutdown(ctx)
	if err := errors.Join(werr, derr, serr); err != nil {
		logger.Warn("grace period over; closing what is left", "in_flight", srv.InFlight(), "sessions", drain.Sessions(), "error", err.Error())
		_ = httpSrv.Close()
		return 0
	}
	logger.Info("drained", "took", time.Since(start).Round(time.Millisecond).String())
	return 0
}

// hostAllowList is the Host allow-list of a listener on addr: the loopback
// names plus extra when addr is a loopback address (a web page must not
// reach a local server through DNS rebinding), none otherwise unless extra
// names hosts. "*" in extra turns the check off.
func hostAllowList(addr, extra string) []string {
	var hosts []string
	for _, h := range strings.Split(extra, ",") {
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

// serveStdio serves one session on stdin and stdout until EOF (exit 0) or
// a signal. The session presents token, if any, as its credentials.
func serveStdio(ctx context.Context, srv *manglecp.Server, token string, stdin io.Reader, stdout io.Writer, logger *slog.Logger) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = protocol.WithTransport(ctx, "stdio")
	defer srv.SessionOpened()()
	// A reader that closes stdout must not kill the process with SIGPIPE:
	// with SIGPIPE notified, the write fails with EPIPE instead, the session
	// logs the answers it cannot deliver and ends (exit status 1).
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	conn := transport.NewStdioConn(stdin, stdout, srv.MaxMessageBytes(), nil)
	opts := &transport.SessionOptions{Peer: "stdio", Logger: logger}
	if token != "" {
		opts.Credentials = &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: token}
	}
	logger.Info("serving MangleCP over stdio", "domain", srv.Manifest().Domain.ID)
	if err := transport.ServeSession(ctx, srv, conn, opts); err != nil {
		logger.Error("stdio session ended: its answers cannot be delivered", "error", err.Error())
		return 1
	}
	return 0
}

// newServer builds and loads the server from flags.
func newServer(rulesDir, configPath, token string, logger *slog.Logger) (*manglecp.Server, error) {
	d, opts, err := configure(rulesDir, configPath, token, logger, nil)
	if err != nil {
		return nil, err
	}
	return manglecp.NewServer(d, opts)
}

// configure turns flags into a domain and options: the domain dom chooses
// (nil: the embedded browser domain), or its actions with the rules of
// dir; options from the config file and the token.
func configure(rulesDir, configPath, token string, logger *slog.Logger, dom *domainFlags) (manglecp.Domain, *manglecp.Options, error) {
	opts := &manglecp.Options{Logger: logger}
	if token != "" {
		if len(token) < 16 {
			return manglecp.Domain{}, nil, fmt.Errorf("--auth-token must be at least 16 characters")
		}
		opts.AuthTokens = []string{token}
	}
	dcfg := browser.Config{Logger: logger}
	if configPath != "" {
		c, err := loadConfig(configPath)
		if err != nil {
			return manglecp.Domain{}, nil, err
		}
		c.apply(opts)
		dcfg.ReportDir = c.ReportDir
		dcfg.BrowserPath, dcfg.AllowedHosts, dcfg.MaxPageBytes = c.Browser.Path, c.Browser.AllowedHosts, c.Browser.MaxPageBytes
	}
	if dom != nil {
		dom.browser.apply(&dcfg)
	}
	d, err := dom.domain(dcfg)
	if err != nil {
		return manglecp.Domain{}, nil, err
	}
	if rulesDir != "" {
		st, err := os.Stat(rulesDir)
		if err != nil {
			return manglecp.Domain{}, nil, fmt.Errorf("--rules: %w", err)
		}
		if !st.IsDir() {
			return manglecp.Domain{}, nil, fmt.Errorf("--rules: %s is not a directory", rulesDir)
		}
		d.Rules, d.RulesName = os.DirFS(rulesDir), rulesDir
	}
	return d, opts, nil
}
