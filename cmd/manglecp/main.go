// Command manglecp serves MangleCP and talks to MangleCP servers.
//
//	manglecp serve                      # the embedded browser-diagnostics domain on 127.0.0.1:8080
//	manglecp serve --rules DIR --config FILE
package main

import (
	"context"
	"os"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.LookupEnv, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
