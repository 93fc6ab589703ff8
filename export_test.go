package manglecp

import (
	"context"
	"errors"

	"github.com/manglecp/manglecp/protocol"
)

// DecodeIntentForBench decodes and validates an intent request message as
// Handle does before evaluating it (envelope, payload, facts), for
// benchmarks of the request path outside the kernel.
func (s *Server) DecodeIntentForBench(data []byte) error {
	env, release, perr := s.decodeEnvelope(data)
	defer release()
	if perr != nil {
		return perr
	}
	if _, perr := s.decodeIntent(s.prog.Load(), env); perr != nil {
		return perr
	}
	return nil
}

// KernelForBench decodes an intent request message once and returns a
// function that runs only the kernel's evaluation of it, exactly as
// Handle would call it (anonymous caller, the domain's external
// predicates computed once), for measuring the request path against the
// kernel on the same facts.
func (s *Server) KernelForBench(data []byte) (func(context.Context) error, error) {
	env, perr := protocol.DecodeEnvelope(data)
	if perr != nil {
		return nil, perr
	}
	prog := s.prog.Load()
	ev, perr := s.decodeIntent(prog, env)
	if perr != nil {
		return nil, perr
	}
	ctx := context.Background()
	ext, err := s.computeExternal(ctx, ev)
	if err != nil {
		return nil, err
	}
	ev.external = ext
	req := s.kernelRequest(ev, callerFrom(ctx))
	return func(ctx context.Context) error {
		res, err := prog.Evaluate(ctx, req)
		if err == nil && len(res.Tools) == 0 {
			err = errors.New("no tools selected")
		}
		return err
	}, nil
}
