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
	case "check":
		return check(ctx, args[1:], stdout, stderr)
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
  manglecp serve [--addr HOST:PORT | --stdio] [--rules DIR] [--config FILE] [--auth-token TOKEN]
  manglecp check DIR [--json] [--show-rules]
  manglecp version

Run 'manglecp serve -h' for the flags of serve.
`)
}
