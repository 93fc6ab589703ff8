// Package inspect is `manglecp inspect`: the inspector's web page on
// loopback for TARGET, or for a domain run in this process as serve
// would.
package inspect

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/serverconf"
	"github.com/manglecp/manglecp/inspector"
	"github.com/manglecp/manglecp/transport"
)

const inspectUsage = "manglecp inspect [TARGET] [--addr HOST:PORT] [--allow-remote] [--token T] [--confirm-key K] [--domain browser|workspace --root DIR...] [--rules DIR] [--config FILE]"

// Run is `manglecp inspect`: it serves the inspector page for TARGET, or for the embedded
// default domain run in this process when there is no TARGET, until
// SIGINT or SIGTERM.
func Run(ctx context.Context, env cmdline.Env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "inspect", Synopsis: inspectUsage,
		Description: "Serves a web page on loopback to explore a server: its manifest, a facts editor, evaluation\n" +
			"with proof trees and rule coverage, invocation with the confirmation step, every error\n" +
			"envelope, and the session's history as a replayable curl or manglecp script. Without TARGET\n" +
			"it runs a server in this process: the default domain, or --domain/--root, --rules and\n" +
			"--config as for serve.\n" +
			"It prints the URL to open, which carries a random session token. See docs/inspector.md.",
		Args: cmdline.TargetArg + "\n        (optional: without it, the embedded default domain in-process)"}
	fl := cmdline.NewFlagSet("inspect")
	addr := fl.String("addr", "127.0.0.1:0", "where the page listens, HOST:PORT (port 0: a free port); loopback only unless --allow-remote")
	allowRemote := fl.Bool("allow-remote", false, "allow --addr on a non-loopback interface (the session token still guards every call)")
	token := fl.String("token", "", "credential for TARGET (bearer or API key); also MANGLECP_AUTH_TOKEN")
	confirmKey := fl.String("confirm-key", "", "the server's confirmation key, to sign confirmation tokens (default: MANGLECP_CONFIRMATION_KEY, then the local key file; in-process: a fresh key)")
	rules := fl.String("rules", "", "in-process only: directory with policy/ and domain/ .mg files replacing the embedded domain rules")
	config := fl.String("config", "", "in-process only: the JSON configuration file of manglecp serve")
	dom := serverconf.AddDomainFlags(fl)
	pos, code, ok := cmdline.ParseArgs(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	target := ""
	switch len(pos) {
	case 0:
	case 1:
		if err := cmdline.CheckTarget(pos[0]); err != nil {
			return cmdline.UsageError(stderr, h, "%v", err)
		}
		target = pos[0]
	default:
		return cmdline.UsageError(stderr, h, "at most one TARGET expected, got %d arguments (%s)", len(pos), cmdline.QuoteList(pos, 3))
	}
	if target != "" && (*rules != "" || *config != "" || dom.Name != "browser" || len(dom.Roots) > 0) {
		return cmdline.UsageError(stderr, h, "--domain, --root, --rules and --config configure the in-process server: use them without TARGET")
	}
	if err := dom.Check(); err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	if *token == "" {
		*token = env.Getenv("MANGLECP_AUTH_TOKEN")
	}
	key := *confirmKey
	if key == "" {
		key = env.Getenv("MANGLECP_CONFIRMATION_KEY")
	}
	if key == "" && target != "" {
		if k, err := cmdline.Keys(env).Read(); err == nil { // a local 'manglecp serve'
			key = string(k)
		}
	}
	ln, err := inspector.Listen(*addr, *allowRemote)
	if err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	defer ln.Close()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	var sess *client.Session
	if target == "" {
		var stopServer func()
		var keyBytes []byte
		sess, keyBytes, stopServer, err = inProcessSession(ctx, env, *rules, *config, *token, []byte(key), dom, logger)
		if err != nil {
			fmt.Fprintf(stderr, "manglecp inspect: %v\n", err)
			return 1
		}
		defer stopServer()
		key = string(keyBytes)
	} else {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		sess, err = client.Dial(dctx, target, &client.Options{Token: *token})
		cancel()
		if err != nil {
			return cmdline.Fail(err, false, stdout, stderr)
		}
		defer sess.Close()
	}

	in, err := inspector.New(sess, &inspector.Options{
		Target:          target,
		ConfirmationKey: []byte(key),
		AllowedHosts:    allowedHosts(*addr, ln.Addr(), *allowRemote),
		Logger:          logger,
	})
	if err != nil {
		fmt.Fprintf(stderr, "manglecp inspect: %v\n", err)
		return 1
	}
	srv := &http.Server{
		Handler:           in.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	what := target
	if what == "" {
		what = "the embedded default domain (in-process)"
	}
	m := sess.Manifest()
	fmt.Fprintf(stdout, "manglecp inspect: %s, domain %s, over %s\n", what, m.Domain.ID, sess.Transport())
	fmt.Fprintf(stdout, "open %s\n", in.URL(ln.Addr()))

	code = cmdline.ExitOK
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "manglecp inspect: %v\n", err)
			code = 1
		}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return code
}

// allowedHosts are the Host headers the page accepts: loopback names by
// default (nil); with --allow-remote also the listen address as given and
// as bound.
func allowedHosts(addr string, bound net.Addr, allowRemote bool) []string {
	if !allowRemote {
		return nil
	}
	hosts := []string{"127.0.0.1", "::1", "[::1]", "localhost", addr, bound.String()}
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	return hosts
}

// inProcessSession runs the server of `manglecp serve` (the embedded
// default domain, or --domain/--root, --rules, --config) in this process and connects a
// client session to it through the in-memory transport. It returns the
// confirmation key the server uses (key, the config file's, or a random
// one) and a function that closes the session and stops the server.
func inProcessSession(ctx context.Context, env cmdline.Env, rulesDir, configPath, token string, key []byte, dom *serverconf.DomainFlags, logger *slog.Logger) (*client.Session, []byte, func(), error) {
	d, opts, err := serverconf.Configure(env, rulesDir, configPath, token, logger, dom)
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case len(key) > 0:
		opts.ConfirmationKey = key
	case len(opts.ConfirmationKey) == 0:
		opts.ConfirmationKey = make([]byte, 32)
		if _, err := rand.Read(opts.ConfirmationKey); err != nil {
			return nil, nil, nil, err
		}
	}
	srv, err := manglecp.NewServer(d, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	clientConn, serverConn := transport.NewMemoryPair()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := transport.ServeSession(sctx, srv, serverConn, &transport.SessionOptions{Peer: "inspector", Logger: logger}); err != nil {
			logger.Warn("in-process session ended", "error", err.Error())
		}
	}()
	octx, ocancel := context.WithTimeout(ctx, 30*time.Second)
	defer ocancel()
	sess, err := client.NewSession(octx, clientConn, &client.Options{Token: token})
	if err != nil {
		cancel()
		<-done
		return nil, nil, nil, err
	}
	stop := func() {
		_ = sess.Close()
		select {
		case <-done: // the server saw the end of the session
		case <-time.After(5 * time.Second):
			cancel()
			<-done
		}
		cancel()
	}
	return sess, opts.ConfirmationKey, stop, nil
}
