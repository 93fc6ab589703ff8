package manglecp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/manglecp/manglecp/internal/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// sample is one sample request of the domain (Domain.Samples).
type sample struct {
	name string
	env  *protocol.Envelope
}

// readSamples reads the *.json files at the root of samples: each must be
// an intent_request envelope. A nil samples is no samples.
func readSamples(samples fs.FS) ([]sample, error) {
	if samples == nil {
		return nil, nil
	}
	names, err := fs.Glob(samples, "*.json")
	if err != nil {
		return nil, fmt.Errorf("manglecp: sample requests: %w", err)
	}
	var out []sample
	for _, name := range names { // fs.Glob returns them sorted
		raw, err := fs.ReadFile(samples, name)
		if err != nil {
			return nil, fmt.Errorf("manglecp: sample request %s: %w", name, err)
		}
		env, perr := protocol.DecodeEnvelope(raw)
		if perr != nil {
			return nil, fmt.Errorf("manglecp: sample request %s: %s", name, perr.Message)
		}
		if env.Type != protocol.TypeIntentRequest {
			return nil, fmt.Errorf("manglecp: sample request %s is a %s, want an intent_request envelope", name, env.Type)
		}
		out = append(out, sample{name: path.Base(name), env: env})
	}
	return out, nil
}

// SampleError is a sample request of the domain that fails on a rule
// program: the rules would fail that request, and probably every request
// like it.
type SampleError struct {
	// Sample is the sample's file name.
	Sample string
	// Code is the registry code the request got.
	Code protocol.Code
	// Err is the failure, with the internal cause for the log.
	Err error
}

// Error names the sample, the code and the cause.
func (e *SampleError) Error() string {
	return fmt.Sprintf("manglecp: the sample request %s fails on these rules with %s: %v", e.Sample, e.Code, e.Err)
}

// Unwrap returns the failure.
func (e *SampleError) Unwrap() error { return e.Err }

// CheckSamples evaluates the domain's sample requests (Domain.Samples) on
// the rules being served and returns a *SampleError for the first that
// fails. `manglecp check` runs it; [Server.Reload] runs the same check on
// new rules before it swaps them in.
func (s *Server) CheckSamples(ctx context.Context) error {
	_, err := s.runSamples(ctx, s.prog.Load())
	return err
}

// runSamples evaluates each sample request on prog as the server would,
// with the server's limits, but without taking an evaluation slot. A sample
// the program's facts profile no longer accepts (the rules changed their
// declarations) is skipped with a log line: it cannot tell whether the
// rules work. An evaluation that fails is a *SampleError. A sample whose
// intent policy denies counts as working. It returns the tools each sample
// that ran selected, by sample name.
func (s *Server) runSamples(ctx context.Context, prog *kernel.Program) (map[string][]string, error) {
	selected := make(map[string][]string, len(s.samples))
	for _, smp := range s.samples {
		ev, perr := s.decodeIntent(prog, smp.env)
		if perr != nil {
			s.log.Warn("sample request skipped: the rules' facts profile does not accept it", "sample", smp.name, "code", string(perr.Code), "error", perr.Message)
			continue
		}
		tools, err := s.runSample(ctx, prog, ev)
		if err != nil {
			code := protocol.CodeInternalError
			if pe, ok := protocol.AsError(err); ok {
				code = pe.Code
			}
			return nil, &SampleError{Sample: smp.name, Code: code, Err: err}
		}
		selected[smp.name] = tools
	}
	return selected, nil
}

// runSample evaluates one sample request on prog and returns the names of
// the tools it selected.
func (s *Server) runSample(ctx context.Context, prog *kernel.Program, ev *evaluation) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, ev.maxCompute)
	defer cancel()
	external, err := s.computeExternal(ctx, ev)
	if err != nil {
		return nil, err
	}
	res, err := prog.Evaluate(ctx, kernel.Request{
		Caller:              "anonymous",
		Permissions:         []string{"*"},
		External:            external,
		Intent:              ev.intent.Name,
		Params:              ev.intent.Params,
		Facts:               ev.facts,
		EvalTime:            ev.evalTime,
		MaxFactsCreated:     max(ev.maxFacts, 1),
		MaxIntervalsPerAtom: ev.maxInterval,
		MaxWork:             s.opts.Limits.MaxEvaluationWork,
		Explain:             true,
		Coverage:            true,
	})
	var ke *kernel.Error
	if errors.As(err, &ke) && ke.Cause != nil {
		return nil, fmt.Errorf("%w (%v)", ke.Public, ke.Cause)
	}
	if err != nil {
		return nil, err
	}
	tools := make([]string, len(res.Tools))
	for i, t := range res.Tools {
		tools[i] = t.Name
	}
	return tools, nil
}
