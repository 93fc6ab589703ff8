package author

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/serverconf"
	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/upstream"
)

// Adopt is `manglecp adopt`: it connects to an MCP server and writes a starting rule pack for
// it (gateway.Adopt): manglecp adopt NAME [--out DIR] -- COMMAND ARGS...
// or manglecp adopt NAME [--out DIR] URL.
func Adopt(ctx context.Context, _ cmdline.Env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "adopt", Synopsis: "manglecp adopt NAME [--out DIR] -- COMMAND ARGS... | manglecp adopt NAME [--out DIR] URL",
		Description: "Connects to an MCP server, lists its tools and writes a starting rule pack for serving it\nthrough the gateway (manglecp serve --upstream NAME=... --rules DIR): DIR/domain/NAME.mg and\nDIR/policy/NAME.mg. Every tool is reachable from an intent, grouped read-only / destructive /\nother; destructive tools need confirmation. `manglecp check DIR` passes on what it writes."}
	var cmd []string
	for i, a := range args {
		if a == "--" {
			args, cmd = args[:i], args[i+1:]
			break
		}
	}
	fs := cmdline.NewFlagSet("adopt")
	out := fs.String("out", "", "directory to write the pack into (default ./NAME-rules)")
	pos, code, ok := cmdline.ParseArgs(h, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return cmdline.UsageError(stderr, h, "name the upstream: manglecp adopt NAME -- COMMAND")
	}
	c := upstream.Config{Name: pos[0], Command: cmd}
	switch {
	case len(pos) == 2 && len(cmd) == 0:
		c.URL = pos[1]
	case len(pos) > 1:
		return cmdline.UsageError(stderr, h, "unexpected argument %s", cmdline.Quote(pos[1]))
	}
	if err := c.Check(); err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	dir := *out
	if dir == "" {
		dir = c.Name + "-rules"
	}
	u, err := upstream.New(c)
	if err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
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
	serveArgs, err := adoptServeArgs(c, dir)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp adopt: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s (%d tools); check it, serve it over MangleCP, or serve it to an MCP host:\n  %s\n  %s\n  %s\n",
		dir, len(u.Tools()), shellJoin("manglecp", "check", dir, "--actions", c.Name),
		shellJoin(append([]string{"manglecp", "serve"}, serveArgs...)...), shellJoin(append([]string{"manglecp", "mcp"}, serveArgs...)...))
	return cmdline.ExitOK
}

// adoptServeArgs returns the flags that serve the adopted upstream with the
// pack in dir: --upstream NAME=COMMAND when the command splits back into
// its words at white space (as --upstream does), else an --upstream-config
// file written into dir, which keeps each word whole.
func adoptServeArgs(c upstream.Config, dir string) ([]string, error) {
	target := c.URL
	whole := true
	for _, w := range c.Command {
		whole = whole && w != "" && !strings.ContainsFunc(w, unicode.IsSpace)
	}
	if c.URL == "" {
		target = strings.Join(c.Command, " ")
	}
	if whole {
		return []string{"--upstream", c.Name + "=" + target, "--rules", dir}, nil
	}
	raw, err := json.MarshalIndent(serverconf.UpstreamFile{Upstreams: []serverconf.UpstreamEntry{{Name: c.Name, Command: c.Command}}}, "", "  ")
	if err != nil {
		return nil, err
	}
	// Not DIR/*.json: those are the sample requests of the rules in DIR.
	file := filepath.Join(dir, "upstreams", c.Name+".json")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(file, append(raw, '\n'), 0o644); err != nil {
		return nil, err
	}
	return []string{"--upstream-config", file, "--rules", dir}, nil
}

// shellJoin joins words into a command line that a POSIX shell (sh,
// bash, zsh) splits back into exactly these words.
func shellJoin(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shellQuote(w)
	}
	return strings.Join(q, " ")
}

// shellQuote quotes one word for a POSIX shell: as is when it has only
// characters no shell treats specially, else in single quotes (a ' inside
// written '\”).
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
