package serve

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
	"github.com/manglecp/manglecp/transport"
)

// MCPTokenBudget is the max_tokens_budget of the evaluations [MCP] sends,
// as `manglecp mcp` does: the server condenses the lowest-scored
// macro-tools until their definitions fit.
const MCPTokenBudget = 900

// MCP serves the domain to one MCP host (Claude Desktop, Claude Code,
// Cursor, VS Code, the MCP Inspector, ...) over stdio: newline-delimited
// JSON-RPC on in and out, through the MCP bridge in process, exactly as
// `manglecp mcp` serves the embedded domains. The host's tool list never
// changes (one tool per intent, or one evaluate_intent tool past three
// intents, and invoke_macro_tool); a tool that requires confirmation runs
// only after the user accepted through MCP elicitation. Unless
// opts.Server has a confirmation key, the bridge and the server share a
// fresh random one. Logs go to the server's logger (stderr by default),
// never to out. It returns nil when the host closes its end or ctx ends,
// and the error of [manglecp.NewServer] when the rules do not load.
func MCP(ctx context.Context, d manglecp.Domain, opts *Options, in io.Reader, out io.Writer) error {
	o := opts.withDefaults()
	if len(o.Server.ConfirmationKey) == 0 {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		o.Server.ConfirmationKey = key
	}
	srv, err := manglecp.NewServer(d, o.Server)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Close() }() // the domain's resources, after the bridge
	log := o.logger()
	if o.Loaded != nil {
		o.Loaded(srv)
	}
	if o.Ready != nil {
		o.Ready(nil)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the in-process sessions
	dial := func(dctx context.Context) (*client.Session, error) {
		c, s := transport.NewMemoryPair()
		go func() {
			_ = transport.ServeSession(ctx, srv, s, &transport.SessionOptions{Peer: "mcp", Logger: log, Credentials: o.Credentials})
		}()
		return client.NewSession(dctx, c, nil)
	}
	b, err := mcpbridge.New(ctx, dial, &mcpbridge.Options{Name: srv.Manifest().Domain.ID, Version: manglecp.Version,
		TokenBudget: MCPTokenBudget, ConfirmationKey: o.Server.ConfirmationKey, Logger: log})
	if err != nil {
		return err
	}
	defer b.Close()
	log.Info("serving MCP over stdio", "domain", srv.Manifest().Domain.ID)
	err = b.Run(ctx, &mcpbridge.StdioTransport{Reader: in, Writer: out})
	if err == nil || ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		return nil // the host closed its end
	}
	return err
}
