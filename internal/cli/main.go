// Package cli implements the manglecp command.
package cli

import (
	"context"
	"fmt"
	"io"
)

// Main runs the command with args (without the program name) and returns
// the process exit code: 0 success, 1 failure, 2 usage error.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdin, stdout, stderr)
	case "manifest":
		return manifestCmd(ctx, args[1:], stdout, stderr)
	case "eval":
		return evalCmd(ctx, args[1:], stdin, stdout, stderr)
	case "invoke":
		return invokeCmd(ctx, args[1:], stdin, stdout, stderr)
	case "check":
		return check(ctx, args[1:], stdout, stderr)
	case "conformance":
		return conformanceCmd(ctx, args[1:], stdout, stderr)
	case "mcp":
		return mcpCmd(ctx, args[1:], stdin, stdout, stderr)
	case "inspect":
		return inspectCmd(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, versionString())
		return 0
	}
	fmt.Fprintf(stderr, "manglecp: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `manglecp: a MangleCP server and tools (protocol 2026-02-draft)

Usage:
  manglecp serve [--addr HOST:PORT | --stdio] [--domain browser | --domain workspace --root DIR...]
                 [--rules DIR] [--config FILE] [--auth-token TOKEN]
  manglecp manifest TARGET [--json] [--token T]
  manglecp eval TARGET --intent NAME [--facts FILE|-] [--params JSON] [--eval-time T] [--proof] [--json]
  manglecp invoke TARGET --macro ID --args JSON [--confirm [--confirm-key K]] [--eval-time T] [--json]
  manglecp check DIR [--json] [--show-rules]
  manglecp conformance TARGET [--level 1|2|3] [--json] [--fixture FILE|browser|workspace] [--token T]
  manglecp mcp [TARGET] [--http ADDR] [--tools auto|dynamic|meta] [--token T] [--confirm-key K]
  manglecp inspect [TARGET] [--addr HOST:PORT] [--token T] [--confirm-key K]
  manglecp version

TARGET is a URL (http://, https://, ws://, wss://) or stdio:COMMAND ARGS...
Exit codes: 0 ok, 1 the server answered with an error, 2 usage, 3 unreachable.
Run 'manglecp COMMAND -h' for the flags of a command.
`)
}
