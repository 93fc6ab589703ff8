package cmdline

import (
	"context"
	"io"

	"github.com/manglecp/manglecp/internal/confirmkey"
)

// Command is one subcommand of manglecp: it runs with the arguments after
// its name, in the environment env, and returns the exit code.
type Command func(ctx context.Context, env Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// Keys finds the local confirmation key (the key file of a local
// 'manglecp serve', MANGLECP_CONFIRMATION_KEY) in env.
func Keys(env Env) confirmkey.Keys { return confirmkey.Keys{Getenv: env.Getenv} }
