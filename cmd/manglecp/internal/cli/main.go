// Package cli is the manglecp command line: Main finds the subcommand
// and runs it. The commands live in one package per group: serve; remote
// (manifest, eval, invoke, conformance); author (new, adopt, check); mcp;
// inspect. What they share is in cmdline (arguments, help, exit codes, the
// environment) and serverconf (the server that serve, mcp and inspect
// build from flags and the config file).
package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/author"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/inspect"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/mcp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/remote"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/serve"
	"github.com/manglecp/manglecp/protocol"
)

// commands are the subcommands, in the order usage lists them; each
// package has one group of them.
var commands = []struct {
	name string
	run  cmdline.Command
}{
	{"serve", serve.Run},
	{"manifest", remote.Manifest},
	{"eval", remote.Eval},
	{"invoke", remote.Invoke},
	{"check", author.Check},
	{"conformance", remote.Conformance},
	{"mcp", mcp.Run},
	{"new", author.New},
	{"adopt", author.Adopt},
	{"inspect", inspect.Run},
	{"help", func(_ context.Context, _ cmdline.Env, _ []string, _ io.Reader, stdout, _ io.Writer) int {
		usage(stdout)
		return cmdline.ExitOK
	}},
	{"version", func(_ context.Context, _ cmdline.Env, _ []string, _ io.Reader, stdout, _ io.Writer) int {
		fmt.Fprintln(stdout, versionString())
		return cmdline.ExitOK
	}},
}

func versionString() string {
	return fmt.Sprintf("manglecp %s (protocol %s, conformance level %d)", manglecp.Version, protocol.Version, manglecp.ConformanceLevel)
}

// Main runs the command with args (without the program name) in the
// environment env and returns the process exit code: 0 success, 1
// failure, 2 usage error. An unknown command is a usage error that names
// the command meant, when one is close.
func Main(ctx context.Context, env cmdline.Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "--help":
		name = "help"
	case "--version":
		name = "version"
	}
	names := make([]string, len(commands))
	for i, c := range commands {
		if c.name == name {
			return c.run(ctx, env, args[1:], stdin, stdout, stderr)
		}
		names[i] = c.name
	}
	hint := ""
	if c := protocol.Closest(strings.TrimLeft(name, "-"), names); c != "" {
		hint = fmt.Sprintf("; did you mean %q?", c)
	}
	fmt.Fprintf(stderr, "manglecp: unknown command %s%s\n\n", cmdline.Quote(name), hint)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `manglecp: a MangleCP server and tools (protocol 2026-02-draft)

Usage:
  manglecp serve [--addr HOST:PORT | --stdio] [--domain browser | --domain workspace|code --root DIR...]
                 [--rules DIR] [--config FILE] [--auth-token TOKEN]
  manglecp manifest TARGET [--json] [--token T]
  manglecp eval TARGET --intent NAME [--facts FILE|-] [--params JSON] [--eval-time T] [--proof] [--json]
  manglecp invoke TARGET --macro ID --args JSON [--confirm [--confirm-key K]] [--eval-time T] [--json]
  manglecp check DIR [--json] [--show-rules]
  manglecp new domain NAME [--dir DIR]
  manglecp conformance TARGET [--level 1|2|3] [--json] [--fixture FILE|browser|workspace] [--token T]
  manglecp mcp [TARGET] [--http ADDR] [--tools auto|dynamic|meta] [--token T] [--confirm-key K]
  manglecp inspect [TARGET] [--addr HOST:PORT] [--token T] [--confirm-key K]
  manglecp version

TARGET is a URL (http://, https://, ws://, wss://) or stdio:COMMAND ARGS...
Exit codes: 0 ok, 1 the server answered with an error, 2 usage, 3 unreachable.
Run 'manglecp COMMAND -h' for the flags of a command.
`)
}
