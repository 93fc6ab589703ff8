package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/upstream"
)

// adoptCmd connects to an MCP server and writes a starting rule pack for
// it (gateway.Adopt): manglecp adopt NAME [--out DIR] -- COMMAND ARGS...
// or manglecp adopt NAME [--out DIR] URL.
func adoptCmd(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	h := cmdHelp{name: "adopt", synopsis: "manglecp adopt NAME [--out DIR] -- COMMAND ARGS... | manglecp adopt NAME [--out DIR] URL",
		description: "Connects to an MCP server, lists its tools and writes a starting rule pack for serving it\nthrough the gateway (manglecp serve --upstream NAME=... --rules DIR): DIR/domain/NAME.mg and\nDIR/policy/NAME.mg. Every tool is reachable from an intent, grouped read-only / destructive /\nother; destructive tools need confirmation. `manglecp check DIR` passes on what it writes."}
	var cmd []string
	for i, a := range args {
		if a == "--" {
			args, cmd = args[:i], args[i+1:]
			break
		}
	}
	fs := newFlagSet("adopt")
	out := fs.String("out", "", "directory to write the pack into (default ./NAME-rules)")
	pos, code, ok := parseArgs(h, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(stderr, h, "name the upstream: manglecp adopt NAME -- COMMAND")
	}
	c := upstream.Config{Name: pos[0], Command: cmd}
	switch {
	case len(pos) == 2 && len(cmd) == 0:
		c.URL = pos[1]
	case len(pos) > 1:
		return usageError(stderr, h, "unexpected argument %s", quote(pos[1]))
	}
	if err := c.Check(); err != nil {
		return usageError(stderr, h, "%v", err)
	}
	dir := *out
	if dir == "" {
		dir = c.Name + "-rules"
	}
	u, err := upstream.New(c)
	if err != nil {
		return usageError(stderr, h, "%v", err)
	}
	defer u.Close()
	if err := u.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "manglecp adopt: %v\n", err)
		return 1
	}
	domain, policy := gateway.Adopt(c.Name, u.Tools())
	for _, f := range []struct{ layer, text string }{{"domain", domain}, {"policy", policy}} {
		p := filepath.Join(dir, f.layer, c.Name+".mg")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintf(stderr, "manglecp adopt: %v\n", err)
			return 1
		}
		if err := os.WriteFile(p, []byte(f.text), 0o644); err != nil {
			fmt.Fprintf(stderr, "manglecp adopt: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "wrote %s (%d tools): check it with `manglecp check %s --actions %s`, serve it with `manglecp serve --upstream %s=%s --rules %s`\n",
		dir, len(u.Tools()), dir, c.Name, c.Name, strings.TrimSpace(strings.Join(cmd, " ")+" "+c.URL), dir)
	return exitOK
}
