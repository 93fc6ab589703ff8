package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// defaultMCPBudget is the default max_tokens_budget of manglecp mcp, in
// the server's estimate (JSON characters / 4 of the MangleCP macro-tool
// definitions): on the browser domain it keeps every turn of the scripted
// session of docs/TOKENS.md under a tenth of Playwright MCP's tool list.
const defaultMCPBudget = 550

const mcpUsage = "manglecp mcp [TARGET] [--http ADDR] [--tools auto|dynamic|meta] [--token-budget N] [--disclosure LEVEL] [--token T] [--confirm-key KEY] [--intent NAME [--facts FILE]] [--rules DIR] [--config FILE] [--auth-token TOKEN]"

// mcpCmd serves a MangleCP server to MCP hosts (package mcpbridge): over
// stdio by default, streamable HTTP with --http. Without TARGET it serves
// the embedded default domain in process, over the in-memory transport.
func mcpCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fl.SetOutput(stderr)
	httpAddr := fl.String("http", "", "serve MCP over streamable HTTP on HOST:PORT (path /mcp) instead of stdio")
	mode := fl.String("tools", "auto", "how macro-tools reach the host: auto, dynamic (tools/list_changed) or meta (one invoke_macro_tool)")
	budget := fl.Int64("token-budget", defaultMCPBudget, "max_tokens_budget of every evaluation: the server condenses the lowest-scored macro-tools until their definitions fit (0: no budget)")
	disclosure := fl.String("disclosure", "", "disclosure_preference of every evaluation: full, condensed, minimal or adaptive")
	token := fl.String("token", "", "credential for TARGET (bearer or API key); also MANGLECP_AUTH_TOKEN")
	confirmKey := fl.String("confirm-key", "", "the server's confirmation_key, to sign tokens after the user accepted (elicitation); also MANGLECP_CONFIRMATION_KEY")
	intent := fl.String("intent", "", "evaluate this intent when an MCP session starts, so its macro-tools are listed from the first tools/list")
	factsPath := fl.String("facts", "", "facts for --intent: a JSON file (array of facts or {\"facts\": [...]})")
	rules := fl.String("rules", "", "embedded domain only: directory with policy/ and domain/ .mg files (as serve)")
	config := fl.String("config", "", "embedded domain only: JSON configuration file (as serve)")
	authToken := fl.String("auth-token", "", "embedded domain only: require this token (as serve); the bridge presents it")
	target, ok := parseOptionalTarget(fl, args)
	if !ok {
		fmt.Fprintf(stderr, "usage: %s\n", mcpUsage)
		return exitUsage
	}
	if target != "" && (*rules != "" || *config != "" || *authToken != "") {
		fmt.Fprintln(stderr, "manglecp mcp: --rules, --config and --auth-token configure the embedded domain; with TARGET use --token")
		return exitUsage
	}
	if *factsPath != "" && *intent == "" {
		fmt.Fprintln(stderr, "manglecp mcp: --facts goes with --intent")
		return exitUsage
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := &mcpbridge.Options{
		Mode:        mcpbridge.Mode(*mode),
		TokenBudget: *budget,
		Disclosure:  *disclosure,
		Name:        "manglecp",
		Version:     manglecp.Version,
		Logger:      logger,
	}
	if *intent != "" {
		st := &mcpbridge.Start{Intent: *intent}
		if *factsPath != "" {
			facts, err := readFacts(*factsPath, stdin)
			if err != nil {
				fmt.Fprintf(stderr, "manglecp mcp: --facts: %v\n", err)
				return exitUsage
			}
			st.Facts = facts
		}
		opts.Start = st
	}

	var dial mcpbridge.Dialer
	if target == "" {
		key := []byte(nil)
		d, sopts, err := configure(*rules, *config, firstNonEmpty(*authToken, os.Getenv("MANGLECP_AUTH_TOKEN")), logger)
		if err != nil {
			fmt.Fprintf(stderr, "manglecp mcp: %v\n", err)
			return 1
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
		dial = memoryDialer(ctx, srv, firstNonEmpty(*authToken, os.Getenv("MANGLECP_AUTH_TOKEN")), logger)
	} else {
		tok := firstNonEmpty(*token, os.Getenv("MANGLECP_AUTH_TOKEN"))
		dial = func(ctx context.Context) (*client.Session, error) {
			return client.Dial(ctx, target, &client.Options{Token: tok})
		}
		opts.ConfirmationKey = []byte(firstNonEmpty(*confirmKey, os.Getenv("MANGLECP_CONFIRMATION_KEY")))
	}

	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	b, err := mcpbridge.New(dctx, dial, opts)
	cancel()
	if err != nil {
		var perr *protocol.Error
		if errors.As(err, &perr) && perr.Code == protocol.CodeBridgeInvalidArguments {
			fmt.Fprintf(stderr, "manglecp mcp: %s\n", perr.Message)
			return exitUsage
		}
		e := mcpbridge.ErrorOf(err)
		fmt.Fprintf(stderr, "manglecp mcp: %s: %s (%v)\n", e.Code, e.Message, err)
		if e.Code == protocol.CodeBridgeServerUnreachable || e.Code == protocol.CodeBridgeProtocolMismatch {
			return exitTransport
		}
		return exitProtocol
	}
	defer b.Close()

	if *httpAddr != "" {
		return serveMCPHTTP(ctx, b, *httpAddr, logger, stderr)
	}
	logger.Info("serving MCP over stdio", "domain", b.Manifest().Domain.ID, "tools", string(opts.Mode))
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := b.Run(ctx, t); err != nil && !hostGone(err) && ctx.Err() == nil {
		logger.Error("MCP session", "error", err.Error())
		return 1
	}
	return exitOK
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

// serveMCPHTTP serves streamable HTTP on addr until ctx ends.
func serveMCPHTTP(ctx context.Context, b *mcpbridge.Bridge, addr string, logger *slog.Logger, stderr io.Writer) int {
	if strings.HasPrefix(addr, ":") {
		// A bare ":port" listens on every interface; say so explicitly.
		fmt.Fprintln(stderr, "manglecp mcp: --http needs HOST:PORT (e.g. 127.0.0.1:8090); use 0.0.0.0:PORT to listen on every interface")
		return exitUsage
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp mcp: %v\n", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", b.HTTPHandler(nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	logger.Info("serving MCP over streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "domain", b.Manifest().Domain.ID)
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
	return exitOK
}

// parseOptionalTarget parses "[TARGET] [flags]" with flags before or
// after the target; an unquoted stdio:COMMAND takes the rest of the line.
func parseOptionalTarget(fl *flag.FlagSet, args []string) (string, bool) {
	if err := fl.Parse(args); err != nil {
		return "", false
	}
	rest := fl.Args()
	if len(rest) == 0 {
		return "", true
	}
	if strings.HasPrefix(rest[0], "stdio:") && !strings.Contains(rest[0], " ") {
		return strings.Join(rest, " "), true
	}
	if err := fl.Parse(rest[1:]); err != nil || fl.NArg() != 0 {
		return "", false
	}
	return rest[0], true
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// nopWriteCloser keeps the MCP transport from closing the command's
// stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
