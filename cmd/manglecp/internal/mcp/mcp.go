// Package mcp is `manglecp mcp`: a MangleCP server (TARGET, or a domain
// run in this process as serve would) served to MCP hosts over stdio or
// streamable HTTP through package mcpbridge.
package mcp

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
	"strings"
	"syscall"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/serverconf"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// defaultMCPBudget is the default max_tokens_budget of manglecp mcp, in
// the server's estimate (JSON characters / 4 of the MangleCP macro-tool
// definitions): on a live browser page it keeps the tools the rules made
// mandatory (click, the form, find) at full disclosure and condenses the
// others (docs/TOKENS.md, the browser jobs).
const defaultMCPBudget = 900

// Run is `manglecp mcp`: it serves a MangleCP server to MCP hosts (package mcpbridge): over
// stdio by default, streamable HTTP with --http. Without TARGET it serves
// the embedded default domain in process, over the in-memory transport.
func Run(ctx context.Context, env cmdline.Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "mcp", Synopsis: "manglecp mcp [TARGET] [flags]",
		Description: "Serves a MangleCP server to MCP hosts (Claude Desktop, Cursor, the MCP Inspector, ...) over stdio,\n" +
			"or MCP streamable HTTP with --http. The host's tool list never changes: one tool per intent (or,\n" +
			"past 3 intents, one evaluate_intent tool with an intent argument) and invoke_macro_tool. Calling\n" +
			"an intent answers with the macro-tools the rules select, as short signatures; the model calls\n" +
			"them through invoke_macro_tool, which checks the arguments first. Tools that need confirmation\n" +
			"are asked through MCP elicitation.\n" +
			"Without TARGET it serves an embedded domain in process (--domain browser, the default, or\n" +
			"--domain workspace --root DIR), configured as serve does. See docs/mcp.md.",
		Args: cmdline.TargetArg + "\n        (optional: without it, the embedded default domain)"}
	fl := cmdline.NewFlagSet("mcp")
	httpAddr := fl.String("http", "", "serve MCP over streamable HTTP on HOST:PORT (path /mcp) instead of stdio")
	sessionTimeout := fl.Duration("session-timeout", mcpbridge.DefaultSessionTimeout, "with --http: close an MCP session after this long without a request from its host (0: never; the session bounds still hold)")
	httpToken := fl.String("http-token", "", "with --http: the bearer token MCP hosts must present (Authorization: Bearer TOKEN; at least 16 characters); also MANGLECP_MCP_HTTP_TOKEN. Required when TARGET needs credentials or the address is not loopback")
	maxSessions := fl.Int("max-sessions", mcpbridge.DefaultMaxSessions, "with --http: the most MCP sessions open at once")
	maxSessionsPerPeer := fl.Int("max-sessions-per-peer", mcpbridge.DefaultMaxSessionsPerPeer, "with --http: the most MCP sessions one client address (IPv6: /64) may hold open")
	maxLine := fl.Int("max-line-bytes", mcpbridge.DefaultMaxLineBytes, "over stdio: the longest line accepted from the host; longer lines get a JSON-RPC error and are dropped unbuffered")
	var lim mcpbridge.Limits
	fl.Int64Var(&lim.MaxManifestBytes, "max-manifest-bytes", mcpbridge.DefaultMaxManifestBytes, "the largest manifest accepted from TARGET, in bytes of JSON")
	fl.Int64Var(&lim.MaxAnswerBytes, "max-answer-bytes", mcpbridge.DefaultMaxAnswerBytes, "the largest answer (evaluation, invocation) accepted from TARGET, in bytes of JSON")
	fl.IntVar(&lim.MaxIntents, "max-intents", mcpbridge.DefaultMaxIntents, "the most intents accepted in TARGET's manifest")
	fl.IntVar(&lim.MaxPredicates, "max-predicates", mcpbridge.DefaultMaxPredicates, "the most predicates accepted in TARGET's facts profile")
	fl.IntVar(&lim.MaxTools, "max-tools", mcpbridge.DefaultMaxTools, "the most macro-tools accepted in one evaluation's answer")
	fl.IntVar(&lim.MaxDescriptionBytes, "max-description-bytes", mcpbridge.DefaultMaxDescriptionBytes, "the longest description (domain, intent, predicate, macro-tool) accepted from TARGET")
	fl.IntVar(&lim.MaxSchemaBytes, "max-schema-bytes", mcpbridge.DefaultMaxSchemaBytes, "the largest macro-tool input schema accepted from TARGET, in bytes of JSON")
	mode := fl.String("tools", "auto", "how macro-tools reach the host: auto or meta (a tool list that never changes; the model calls them through invoke_macro_tool) or dynamic (opt-in: they join the tool list, tools/list_changed; refused on MCP 2026-07-28)")
	intentTools := fl.String("intent-tools", "auto", "how intents reach the host: per-intent (one tool each), single (one "+mcpbridge.IntentToolName+" tool with an intent argument) or auto (per-intent up to "+fmt.Sprint(mcpbridge.MaxPerIntentTools)+" intents, single beyond)")
	budget := fl.Int64("token-budget", defaultMCPBudget, "max_tokens_budget of every evaluation: the server condenses the lowest-scored macro-tools until their definitions fit (0: no budget)")
	disclosure := fl.String("disclosure", "", "disclosure_preference of every evaluation: full, condensed, minimal or adaptive")
	token := fl.String("token", "", "credential for TARGET (bearer or API key); also MANGLECP_AUTH_TOKEN")
	confirmKey := fl.String("confirm-key", "", "TARGET's confirmation_key, to sign tokens after the user accepted (elicitation); also MANGLECP_CONFIRMATION_KEY or the key file of a local 'manglecp serve' ("+cmdline.Keys(env).Hint()+")")
	intent := fl.String("intent", "", "evaluate this intent when an MCP session starts, so its macro-tools are listed from the first tools/list")
	factsPath := fl.String("facts", "", "facts for --intent: a JSON file (array of facts or {\"facts\": [...]})")
	rules := fl.String("rules", "", "embedded domain only: directory with policy/ and domain/ .mg files (as serve)")
	config := fl.String("config", "", "embedded domain only: JSON configuration file (as serve)")
	authToken := fl.String("auth-token", "", "embedded domain only: require this token (as serve); the bridge presents it")
	dom := serverconf.AddDomainFlags(fl) // embedded domain only: --domain, --root (as serve)
	serverconf.AddBrowserFlags(fl, &dom.Browser)
	ups := serverconf.AddUpstreamFlags(fl) // upstream MCP servers through the gateway domain, as serve (gateway.go)
	pos, code, ok := cmdline.ParseArgs(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	target := ""
	switch len(pos) {
	case 0:
	case 1:
		target = pos[0]
		if err := cmdline.CheckTarget(target); err != nil {
			return cmdline.UsageError(stderr, h, "%v", err)
		}
	default:
		return cmdline.UsageError(stderr, h, "at most one TARGET expected, got %d arguments (%s)", len(pos), cmdline.QuoteList(pos, 3))
	}
	if target != "" && (*rules != "" || *config != "" || *authToken != "" || dom.Name != "browser" || len(dom.Roots) > 0) {
		return cmdline.UsageError(stderr, h, "--domain, --root, --rules, --config and --auth-token configure the embedded domain; with TARGET use --token")
	}
	if err := dom.Check(); err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	if *factsPath != "" && *intent == "" {
		return cmdline.UsageError(stderr, h, "--facts goes with --intent")
	}
	switch mcpbridge.Mode(*mode) {
	case mcpbridge.ModeAuto, mcpbridge.ModeDynamic, mcpbridge.ModeMeta:
	default:
		return cmdline.UsageError(stderr, h, "--tools %s: use auto, dynamic or meta", cmdline.Quote(*mode))
	}
	switch mcpbridge.IntentTools(*intentTools) {
	case mcpbridge.IntentToolsAuto, mcpbridge.IntentToolsPerIntent, mcpbridge.IntentToolsSingle:
	default:
		return cmdline.UsageError(stderr, h, "--intent-tools %s: use auto, per-intent or single", cmdline.Quote(*intentTools))
	}
	if *sessionTimeout < 0 {
		return cmdline.UsageError(stderr, h, "--session-timeout must not be negative")
	}
	if *maxLine <= 0 {
		return cmdline.UsageError(stderr, h, "--max-line-bytes must be positive")
	}
	if lim.MaxManifestBytes <= 0 || lim.MaxAnswerBytes <= 0 || lim.MaxIntents <= 0 || lim.MaxPredicates <= 0 || lim.MaxTools <= 0 || lim.MaxDescriptionBytes <= 0 || lim.MaxSchemaBytes <= 0 {
		return cmdline.UsageError(stderr, h, "the --max-... bounds must be positive")
	}
	if *maxSessions <= 0 || *maxSessionsPerPeer <= 0 {
		return cmdline.UsageError(stderr, h, "--max-sessions and --max-sessions-per-peer must be positive")
	}
	bridgeToken := cmdline.FirstNonEmpty(*httpToken, env.Getenv("MANGLECP_MCP_HTTP_TOKEN"))
	if bridgeToken != "" && len(bridgeToken) < 16 {
		return cmdline.UsageError(stderr, h, "--http-token (or MANGLECP_MCP_HTTP_TOKEN) must be at least 16 characters")
	}
	if *httpAddr != "" && bridgeToken == "" && !loopbackAddr(*httpAddr) {
		return cmdline.UsageError(stderr, h, "--http %s listens beyond loopback: set --http-token (or MANGLECP_MCP_HTTP_TOKEN) so that only your MCP hosts can use the bridge", cmdline.Quote(*httpAddr))
	}
	if strings.HasPrefix(*httpAddr, ":") {
		// A bare ":port" listens on every interface; say so explicitly.
		return cmdline.UsageError(stderr, h, "--http needs HOST:PORT (e.g. 127.0.0.1:8090); use 0.0.0.0:PORT to listen on every interface")
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := &mcpbridge.Options{
		Mode:        mcpbridge.Mode(*mode),
		IntentTools: mcpbridge.IntentTools(*intentTools),
		TokenBudget: *budget,
		Disclosure:  *disclosure,
		Name:        "manglecp",
		Version:     manglecp.Version,
		Logger:      logger,
		Limits:      lim,
	}
	if *intent != "" {
		st := &mcpbridge.Start{Intent: *intent}
		if *factsPath != "" {
			facts, err := cmdline.ReadFacts(*factsPath, stdin)
			if err != nil {
				return cmdline.UsageError(stderr, h, "--facts: %v", err)
			}
			st.Facts = facts
		}
		opts.Start = st
	}

	var dial mcpbridge.Dialer
	if target == "" {
		key := []byte(nil)
		dom.Gateway = ups.Enabled()
		d, sopts, err := serverconf.Configure(env, *rules, *config, cmdline.FirstNonEmpty(*authToken, env.Getenv("MANGLECP_AUTH_TOKEN")), logger, dom)
		if err != nil {
			fmt.Fprintf(stderr, "manglecp mcp: %v\n", err)
			return 1
		}
		if ups.Enabled() {
			if d, err = ups.Gateway(ctx, rules, logger); err != nil {
				fmt.Fprintf(stderr, "manglecp mcp: %v\n", err)
				return 1
			}
		}
		if len(sopts.ConfirmationKey) == 0 {
			// The bridge and the in-process server share a fresh key: the
			// bridge signs a token only after the user accepted.
			key = make([]byte, 32)
			_, _ = rand.Read(key)
			sopts.ConfirmationKey = key
		} else {
			key = sopts.ConfirmationKey
		}
		opts.ConfirmationKey = key
		srv, err := manglecp.NewServer(d, sopts)
		if err != nil {
			fmt.Fprintf(stderr, "manglecp mcp: %v\n", err)
			return 1
		}
		ups.Loaded(srv)                    // a late upstream joins (gateway.go)
		defer func() { _ = srv.Close() }() // the domain's browser, after the bridge
		dial = memoryDialer(ctx, srv, cmdline.FirstNonEmpty(*authToken, env.Getenv("MANGLECP_AUTH_TOKEN")), logger)
	} else {
		tok := cmdline.FirstNonEmpty(*token, env.Getenv("MANGLECP_AUTH_TOKEN"))
		dial = func(ctx context.Context) (*client.Session, error) {
			// The client stops reading a message at the bridge's bound.
			return client.Dial(ctx, target, &client.Options{Token: tok, MaxReplyBytes: lim.ReplyBytes()})
		}
		key := cmdline.FirstNonEmpty(*confirmKey, env.Getenv("MANGLECP_CONFIRMATION_KEY"))
		if key != "" {
			opts.ConfirmationKey = []byte(key)
		} else if k, err := cmdline.Keys(env).Read(); err == nil {
			opts.ConfirmationKey = k // the key file of a local manglecp serve
		}
	}

	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	b, err := mcpbridge.New(dctx, dial, opts)
	cancel()
	if err != nil {
		e := mcpbridge.ErrorOf(err)
		fmt.Fprintf(stderr, "manglecp mcp: %s: %s (%v)\n", e.Code, e.Message, err)
		if e.Code == protocol.CodeBridgeServerUnreachable || e.Code == protocol.CodeBridgeProtocolMismatch {
			return cmdline.ExitTransport
		}
		return cmdline.ExitProtocol
	}
	defer b.Close()

	if *httpAddr != "" {
		if bridgeToken == "" && b.Manifest().Auth.Required {
			// The bridge holds TARGET's credential: without a token of
			// its own, any local process would act with it.
			fmt.Fprintf(stderr, "manglecp mcp: the server requires credentials, so --http needs --http-token (or MANGLECP_MCP_HTTP_TOKEN): without it any process that reaches %s would use the bridge's credential\n", *httpAddr)
			return cmdline.ExitUsage
		}
		ho := mcpbridge.HTTPOptions{Token: bridgeToken, SessionTimeout: *sessionTimeout, MaxSessions: *maxSessions, MaxSessionsPerPeer: *maxSessionsPerPeer}
		return serveMCPHTTP(ctx, b, *httpAddr, ho, logger, stderr)
	}
	logger.Info("serving MCP over stdio", "domain", b.Manifest().Domain.ID, "tools", string(opts.Mode))
	t := &mcpbridge.StdioTransport{Reader: stdin, Writer: stdout, MaxLineBytes: *maxLine}
	if err := b.Run(ctx, t); err != nil && !hostGone(err) && ctx.Err() == nil {
		logger.Error("MCP session", "error", err.Error())
		return 1
	}
	return cmdline.ExitOK
}

// hostGone reports whether err only says that the host closed its end of
// stdio, which ends the session normally.
func hostGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)
}

// memoryDialer connects the bridge to srv in process: each dial serves a
// new session over an in-memory pair until ctx ends.
func memoryDialer(ctx context.Context, srv *manglecp.Server, token string, logger *slog.Logger) mcpbridge.Dialer {
	return func(dctx context.Context) (*client.Session, error) {
		c, s := transport.NewMemoryPair()
		sopts := &transport.SessionOptions{Peer: "mcp", Logger: logger}
		if token != "" {
			sopts.Credentials = &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: token}
		}
		go func() { _ = transport.ServeSession(ctx, srv, s, sopts) }()
		return client.NewSession(dctx, c, nil)
	}
}

// serveMCPHTTP serves streamable HTTP on addr until ctx ends, closing
// MCP sessions idle for sessionTimeout (0: never).
func serveMCPHTTP(ctx context.Context, b *mcpbridge.Bridge, addr string, ho mcpbridge.HTTPOptions, logger *slog.Logger, stderr io.Writer) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp mcp: %v\n", err)
		return 1
	}
	mux := http.NewServeMux()
	if ho.SessionTimeout == 0 {
		ho.SessionTimeout = -1 // the bridge's "never"
	}
	mux.Handle("/mcp", b.HTTP(ho))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	logger.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "domain", b.Manifest().Domain.ID, "bearer_token", ho.Token != "")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "manglecp mcp: %v\n", err)
			return 1
		}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return cmdline.ExitOK
}

// loopbackAddr reports whether addr (HOST:PORT) listens on loopback only.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

//END
