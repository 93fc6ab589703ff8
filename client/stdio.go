package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/manglecp/manglecp/internal/tailbuf"
	"github.com/manglecp/manglecp/transport"
)

// EnvAuthToken is the environment variable a stdio server reads its token
// from (manglecp serve --stdio).
const EnvAuthToken = "MANGLECP_AUTH_TOKEN"

// DialCommand starts cmd as a stdio server (Spec 02 section 4.3) and runs a
// session over its stdin and stdout: one JSON message per line, the
// manifest first. cmd must not have been started; DialCommand sets its
// Stdin and Stdout, and, when Options.Token is set, adds MANGLECP_AUTH_TOKEN
// to its environment (the current environment when cmd.Env is nil). When
// cmd.Stderr is nil it becomes Options.Stderr, or a buffer whose tail
// explains a server that exits before its manifest.
//
// ctx bounds starting and reading the manifest; the process is killed when
// ctx ends first. Close closes the server's stdin and waits for it to exit.
func DialCommand(ctx context.Context, cmd *exec.Cmd, opts *Options) (*Session, error) {
	o := opts.withDefaults()
	name := strings.Join(cmd.Args, " ")
	if o.Token != "" {
		env := cmd.Env
		if env == nil {
			env = os.Environ()
		}
		cmd.Env = append(withoutVar(env, EnvAuthToken), EnvAuthToken+"="+o.Token)
	}
	var tail *tailbuf.Buffer
	if cmd.Stderr == nil {
		if o.Stderr != nil {
			cmd.Stderr = o.Stderr
		} else {
			tail = tailbuf.New(4 << 10)
			cmd.Stderr = tail
		}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, &TransportError{Op: "dial", URL: name, Err: err}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, &TransportError{Op: "dial", URL: name, Err: err}
	}
	if err := cmd.Start(); err != nil {
		return nil, &TransportError{Op: "dial", URL: name, Err: err}
	}
	conn := transport.NewStdioConn(stdout, stdin, o.MaxReplyBytes, stdin.Close)
	onClose := func(readerDone <-chan struct{}) error {
		// The server flushes its pending answers and exits at EOF on stdin;
		// the reader drains stdout until then, so the server never blocks
		// on a full pipe.
		t := time.NewTimer(o.CloseTimeout)
		defer t.Stop()
		select {
		case <-readerDone:
		case <-t.C:
			_ = cmd.Process.Kill()
			<-readerDone
		}
		return cmd.Wait()
	}
	// Until the manifest is read, ending ctx kills the server at once.
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	s, err := newSession(ctx, conn, o, "stdio", onClose)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var te *TransportError
		if tail != nil && errors.As(err, &te) {
			if msg := strings.TrimSpace(tail.String()); msg != "" {
				return nil, &TransportError{Op: "dial", URL: name, Err: fmt.Errorf("%w; stderr: %s", te, msg)}
			}
		}
		return nil, err
	}
	return s, nil
}

// withoutVar returns env without the variable name.
func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
