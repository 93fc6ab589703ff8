package manglecp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// sample is one sample request of the domain (Domain.Samples).
type sample struct {
	name string
	env  *protocol.Envelope
	raw  []byte // the file, for the lines of errors
	// expect are the tools the sample says it selects ("expect":
	// {"tools": [...]}): each must be among those the rules select.
	expect []string
}

// sampleExpect is a sample's "expect" member.
type sampleExpect struct {
	Tools []string `json:"tools"`
}

// readSamples reads the *.json files at the root of samples: each must be
// an intent_request envelope, with an optional "expect" member naming the
// tools it selects. A nil samples is no samples.
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
		smp := sample{name: path.Base(name), raw: raw}
		envRaw := raw
		var top map[string]json.RawMessage
		if json.Unmarshal(raw, &top) == nil {
			if exp, ok := top["expect"]; ok {
				dec := json.NewDecoder(bytes.NewReader(exp))
				dec.DisallowUnknownFields()
				var e sampleExpect
				if err := dec.Decode(&e); err != nil {
					return nil, fmt.Errorf("manglecp: %s:%d: sample request: \"expect\" must be {\"tools\": [NAME, ...]}: %v", smp.name, jsonLine(raw, "expect"), err)
				}
				smp.expect = e.Tools
				delete(top, "expect")
				envRaw, _ = json.Marshal(top)
			}
		}
		env, perr := protocol.DecodeEnvelope(envRaw)
		if perr != nil {
			return nil, fmt.Errorf("manglecp: %s: sample request: %s", smp.name, perr.Message)
		}
		if env.Type != protocol.TypeIntentRequest {
			return nil, fmt.Errorf("manglecp: %s:%d: sample request: it is a %s, want an intent_request envelope", smp.name, jsonLine(raw, "type"), env.Type)
		}
		smp.env = env
		out = append(out, smp)
	}
	return out, nil
}

// SampleError is a sample request of the domain that fails on a rule
// program: the facts profile refuses it, its evaluation fails (the rules
// would fail that request, and probably every request like it), or it no
// longer selects a tool it expects.
type SampleError struct {
	// Sample is the sample's file name.
	Sample string
	// Line is the line of the sample file the failure is about: the fact
	// the facts profile refused, the "expect" member not met, else the
	// intent; 0 when unknown.
	Line int
	// Code is the registry code the request got; "" when the request
	// succeeded but did not select a tool the sample expects.
	Code protocol.Code
	// Err is the failure, with the internal cause for the log.
	Err error
}

// Error names the sample's file and line, the code and the cause.
func (e *SampleError) Error() string {
	at := e.Sample
	if e.Line > 0 {
		at = fmt.Sprintf("%s:%d", e.Sample, e.Line)
	}
	if e.Code == "" {
		return fmt.Sprintf("manglecp: %s: the sample request %s %v", at, e.Sample, e.Err)
	}
	return fmt.Sprintf("manglecp: %s: the sample request %s fails on these rules with %s: %v", at, e.Sample, e.Code, e.Err)
}

// Unwrap returns the failure.
func (e *SampleError) Unwrap() error { return e.Err }

// CheckSamples evaluates the domain's sample requests (Domain.Samples) on
// the rules being served and returns a *SampleError for the first that
// fails. [Server.Load] runs it at start-up, `manglecp check` runs it, and
// [Server.Reload] runs the same check on new rules before it swaps them in.
func (s *Server) CheckSamples(ctx context.Context) error {
	_, err := s.runSamples(ctx, s.prog.Load())
	return err
}

// startSamples is the check of the samples at start-up ([Server.Load]):
// it fails on what the author of the rules and samples got wrong, and
// only on that, so that a start never depends on the machine: a sample
// the facts profile refuses (a declaration changed; not the operator's
// smaller max_facts_per_request, logged), and a sample with an "expect"
// that fails or does not select a tool it expects. Samples without
// "expect" are evaluated by reloads, `manglecp check` and CheckSamples,
// not at start (their external predicates may need what is not there
// yet).
func (s *Server) startSamples(ctx context.Context, prog *kernel.Program) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("manglecp: a sample request panicked at start-up: %v", r)
		}
	}()
	for _, smp := range s.samples {
		if _, perr := s.decodeIntent(prog, smp.env); perr != nil && perr.Code == protocol.CodeTooManyFacts {
			s.log.Warn("sample request not checked at start-up: it has more facts than limits.max_facts_per_request", "sample", smp.name)
			continue
		}
		if len(smp.expect) == 0 {
			if _, perr := s.decodeIntent(prog, smp.env); perr != nil {
				return s.refused(smp, perr)
			}
			continue
		}
		if _, err := s.runSampleList(ctx, prog, []sample{smp}); err != nil {
			return err
		}
	}
	return nil
}

// refused is the *SampleError of a sample the facts profile refuses, at
// the line of the fact refused (else of the intent).
func (s *Server) refused(smp sample, perr *protocol.Error) error {
	line := jsonLine(smp.raw, "payload", "intent")
	if perr.Details != nil && len(perr.Details.Violations) > 0 {
		line = jsonLine(smp.raw, "payload", "facts", perr.Details.Violations[0].FactIndex)
	}
	return &SampleError{Sample: smp.name, Line: line, Code: perr.Code, Err: fmt.Errorf("the facts profile refuses it: %s", perr.Message)}
}

// runSamples evaluates each sample request on prog as the server would,
// with the server's limits, but without taking an evaluation slot. A
// sample that the program's facts profile refuses (the rules changed their
// declarations), whose evaluation fails, or that does not select every
// tool it expects is a *SampleError naming the line of the sample. A
// sample whose intent policy denies counts as working. It returns the
// tools each sample selected, by sample name.
func (s *Server) runSamples(ctx context.Context, prog *kernel.Program) (map[string][]string, error) {
	return s.runSampleList(ctx, prog, s.samples)
}

// runSampleList is runSamples for some of the samples.
func (s *Server) runSampleList(ctx context.Context, prog *kernel.Program, samples []sample) (map[string][]string, error) {
	selected := make(map[string][]string, len(samples))
	for _, smp := range samples {
		ev, perr := s.decodeIntent(prog, smp.env)
		if perr != nil {
			return nil, s.refused(smp, perr)
		}
		tools, err := s.runSample(ctx, prog, ev)
		if err != nil {
			code := protocol.CodeInternalError
			if pe, ok := protocol.AsError(err); ok {
				code = pe.Code
			}
			return nil, &SampleError{Sample: smp.name, Line: jsonLine(smp.raw, "payload", "intent"), Code: code, Err: err}
		}
		var missing []string
		for _, want := range smp.expect {
			if !slices.Contains(tools, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) > 0 {
			return nil, &SampleError{Sample: smp.name, Line: jsonLine(smp.raw, "expect"), Err: fmt.Errorf(
				"expects the tools %s, but these rules select %s: %s no longer selected",
				strings.Join(smp.expect, ", "), orNone(tools), strings.Join(missing, ", "))}
		}
		selected[smp.name] = tools
	}
	return selected, nil
}

func orNone(tools []string) string {
	if len(tools) == 0 {
		return "no tool"
	}
	return strings.Join(tools, ", ")
}

// jsonLine returns the 1-based line of raw where the value at path (object
// keys and array indexes) begins; when the path goes only part of the way,
// the line of the deepest value found; 1 when raw does not parse.
func jsonLine(raw []byte, path ...any) int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	line, found := 1, false
	var value func(depth int, onPath bool) error
	value = func(depth int, onPath bool) error {
		if onPath && !found {
			start := dec.InputOffset()
			for start < int64(len(raw)) && strings.IndexByte(" \t\r\n:,", raw[start]) >= 0 {
				start++
			}
			line = bytes.Count(raw[:start], []byte("\n")) + 1
			found = depth == len(path)
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				if err := value(depth+1, onPath && !found && depth < len(path) && path[depth] == key); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := value(depth+1, onPath && !found && depth < len(path) && path[depth] == any(i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
		}
		return err
	}
	_ = value(0, true)
	return line
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
