package manglecp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/manglecp/manglecp/internal/macros"
	"github.com/manglecp/manglecp/internal/plural"
	"github.com/manglecp/manglecp/internal/schema"
	"github.com/manglecp/manglecp/internal/schemaerr"
	"github.com/manglecp/manglecp/protocol"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// invoke runs the checks of Spec 07 section 2.3 in order (known macro,
// validity window, arguments, confirmation), then the action, and builds the
// invoke response.
func (s *Server) invoke(ctx context.Context, env *protocol.Envelope) (*protocol.InvokeResponse, error) {
	var req protocol.InvokeRequest
	if err := protocol.DecodePayload(env.Payload, &req); err != nil {
		return nil, err
	}
	if req.MacroID == "" {
		return nil, protocol.Errorf(protocol.CodeMalformedMessage, "invoke_request needs macro_id").
			WithDetails(&protocol.ErrorDetails{Field: "macro_id"})
	}
	if req.Args == nil {
		return nil, protocol.Errorf(protocol.CodeMalformedMessage, "invoke_request needs args (use {} for none)").
			WithDetails(&protocol.ErrorDetails{Field: "args"})
	}
	now := s.now()
	def, err := s.loadMacro(ctx, req.MacroID, now)
	if err != nil {
		return nil, err
	}
	if def == nil {
		return nil, protocol.Errorf(protocol.CodeMacroNotFound, "macro-tool %s is unknown or was evicted; evaluate the intent again", protocol.Quote(req.MacroID)).
			WithDetails(&protocol.ErrorDetails{MacroID: protocol.Clip(req.MacroID)})
	}
	if who := callerFrom(ctx); !who.anonymous && def.Owner != nil && def.Owner.Name != who.name {
		return nil, protocol.Errorf(protocol.CodeAuthInsufficient, "macro-tool %s was synthesized for another identity; evaluate the intent yourself", def.ID).
			WithDetails(&protocol.ErrorDetails{MacroID: def.ID})
	}
	// The validity window is checked against the server's clock (Spec 07
	// section 2.3, Spec 08 section 5.3): a client cannot revive an expired
	// macro-tool by sending an old eval_time. The eval_time, when given, is
	// only the time the action reasons in.
	at := now
	if req.EvalTime != nil && !req.EvalTime.Now {
		if err := protocol.CheckTimeRange(req.EvalTime.Time); err != nil {
			return nil, protocol.Errorf(protocol.CodeMalformedMessage, "eval_time: %v", err).WithDetails(&protocol.ErrorDetails{Field: "eval_time"})
		}
		at = req.EvalTime.Time
	}
	if t := def.Tool.ValidUntil; t != nil && now.After(*t) {
		return nil, protocol.Errorf(protocol.CodeMacroExpired, "macro-tool %s expired at %s (the server's clock is %s); evaluate the intent again, with no eval_time or a recent one: an earlier eval_time gives tools that are expired already", def.ID, t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)).
			WithDetails(&protocol.ErrorDetails{MacroID: def.ID, ExpiredAt: t.UTC().Format(time.RFC3339Nano)})
	}
	if t := def.Tool.ValidFrom; t != nil && now.Before(*t) {
		return nil, protocol.Errorf(protocol.CodeMacroExpired, "macro-tool %s is not valid before %s", def.ID, t.UTC().Format(time.RFC3339)).
			WithDetails(&protocol.ErrorDetails{MacroID: def.ID})
	}
	// A schema that does not compile is the rules' defect, not the
	// client's: internal_error (masked, logged with the request id). One
	// that compiles but is refused (over the schema size or cost limit of
	// internal/schema) grew from the facts of its evaluation, since the
	// rules' own schemas are checked at start-up: an enum of a client's
	// facts holding 300 KiB. That is the client's to change, a 4xx.
	if _, err := def.Validator(); err != nil {
		if errors.Is(err, schema.ErrRefused) {
			return nil, protocol.Errorf(protocol.CodeDerivationLimitExceeded, "the input schema of %s, built from the facts of its evaluation, is refused: %s; evaluate again with fewer or shorter facts", def.Tool.Name, err).
				WithDetails(&protocol.ErrorDetails{MacroID: def.ID})
		}
		return nil, fmt.Errorf("the input schema of tool %s (macro-tool %s) does not compile, a defect of the rules: %w", def.Tool.Name, def.ID, err)
	}
	if errs := s.validateArgs(def, req.Args); len(errs) > 0 {
		return nil, protocol.Errorf(protocol.CodeSchemaValidationFailed, "%s against the input_schema of %s", plural.S(len(errs), "argument error"), def.Tool.Name).
			WithDetails(&protocol.ErrorDetails{SchemaErrors: errs, MacroID: def.ID})
	}
	if def.Tool.RequiresConfirmation && !autoConfirmed(callerFrom(ctx), def.Tool.SideEffects) {
		if req.ConfirmationToken == "" {
			return nil, protocol.Errorf(protocol.CodeConfirmationRequired, "%s requires the user's confirmation: send confirmation_token", def.Tool.Name).
				WithDetails(&protocol.ErrorDetails{MacroID: def.ID})
		}
		reason, err := s.confirm.verify(ctx, req.ConfirmationToken, def.ID, now)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			return nil, protocol.Errorf(protocol.CodeConfirmationInvalid, "confirmation token rejected: %s", reason).
				WithDetails(&protocol.ErrorDetails{MacroID: def.ID})
		}
	}
	spec, ok := s.actions[def.Tool.Action]
	if !ok {
		// The rules name an action the domain does not register: the
		// server's defect, internal_error.
		return nil, fmt.Errorf("tool %s names action %q, which is not registered", def.Tool.Name, def.Tool.Action)
	}
	evalTime := at.UTC()
	call := &Call{
		MacroID:  def.ID,
		Tool:     def.Tool.Name,
		Intent:   def.Intent.Name,
		Params:   def.Intent.Params,
		Args:     withDefaults(def.Schema, req.Args),
		Facts:    def.Facts,
		EvalTime: evalTime,
		Progress: progressFrom(ctx),
	}
	start := time.Now()
	actx, end := s.span(ctx, "manglecp.action", attribute.String("manglecp.tool", def.Tool.Name))
	out, err := s.runAction(actx, spec.Run, call)
	end()
	if err != nil {
		return nil, err
	}
	return s.invokeResponse(def, out, time.Since(start), now), nil
}

// execError is an action failure: the cause is logged, the client sees a
// masked execution_failed.
type execError struct{ cause error }

func (e *execError) Error() string { return "execution failed: " + e.cause.Error() }

func (e *execError) Unwrap() error {
	return protocol.Errorf(protocol.CodeExecutionFailed, "the macro-tool failed while executing; the server log has the details")
}

// runAction runs an action under the invocation timeout, converting an
// error or a panic into a masked execution_failed (cancelled when the
// client went away).
func (s *Server) runAction(ctx context.Context, run Action, call *Call) (out *Outcome, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.InvokeTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &execError{cause: fmt.Errorf("action panicked: %s\n%s", protocol.ClipN(fmt.Sprint(r), 1024), debug.Stack())}
		}
	}()
	out, err = run(ctx, call)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, protocol.Errorf(protocol.CodeCancelled, "the request was cancelled")
		}
		// A domain code reaches the client (errorEnvelope masks it when the
		// domain did not register it); a standard code from an action is
		// an execution failure like any other error, except
		// auth_insufficient: an action refusing the caller a resource of
		// another identity (a browser session).
		if pe, ok := protocol.AsError(err); ok {
			if _, standard := protocol.Lookup(pe.Code); !standard || pe.Code == protocol.CodeAuthInsufficient {
				return nil, err
			}
		}
		return nil, &execError{cause: err}
	}
	if out == nil {
		return nil, &execError{cause: errors.New("action returned no outcome")}
	}
	return out, nil
}

// invokeResponse completes an outcome into the wire response: categories and
// provenance on asserted facts, capped events and deltas, suggestions.
func (s *Server) invokeResponse(def *macros.Def, out *Outcome, took time.Duration, now time.Time) *protocol.InvokeResponse {
	result := out.Result
	if result == nil {
		result = map[string]any{}
	}
	// Integers beyond 2^53 go out wrapped, in results as in facts (Spec 03
	// section 3.2; facts wrap themselves when encoded).
	result, _ = protocol.WireValue(result).(map[string]any)
	events := out.Events
	if events == nil {
		events = []protocol.Event{}
	}
	if len(events) > s.opts.MaxEvents {
		events = events[:s.opts.MaxEvents]
	}
	asserted := make([]protocol.Fact, 0, len(out.Assert))
	for _, f := range out.Assert {
		if f.Category == "" {
			f.Category = protocol.CategoryServer
		}
		if f.Source == nil {
			f.Source = &protocol.Provenance{SourceType: protocol.SourceServer, SourceID: def.Tool.Name, AssertedAt: now.UTC().Format(time.RFC3339Nano)}
		}
		asserted = append(asserted, f)
	}
	// Retract patterns carry no category: a pattern matches facts by
	// predicate and arguments whatever their category (docs/design.md,
	// "Decisions on ambiguous points").
	retracted := make([]protocol.Fact, 0, len(out.Retract))
	for _, p := range out.Retract {
		p.Category = ""
		retracted = append(retracted, p)
	}
	if n := len(asserted) + len(retracted); n > s.opts.MaxStateDelta {
		na, nr := len(asserted), len(retracted)
		keep := max(0, s.opts.MaxStateDelta-len(retracted))
		if keep < len(asserted) {
			asserted = asserted[:keep]
		}
		if len(retracted) > s.opts.MaxStateDelta {
			retracted = retracted[:s.opts.MaxStateDelta]
		}
		// Nothing is cut silently: the answer says what the delta kept
		// (the action's first facts: a domain puts what matters first).
		detail := fmt.Sprintf("kept %d of %d asserted facts and %d of %d retractions (max_state_delta %d)",
			len(asserted), na, len(retracted), nr, s.opts.MaxStateDelta)
		events = append(events[:min(len(events), max(0, s.opts.MaxEvents-1))],
			protocol.Event{Action: "state_delta", Status: protocol.EventSkipped, Detail: detail})
		s.log.Warn("state delta cut", "tool", def.Tool.Name, "macro_id", def.ID, "detail", detail)
	}
	next := &protocol.Next{SuggestedIntents: []protocol.SuggestedIntent{}, ContinuationFacts: []protocol.Fact{}}
	for _, n := range def.Tool.NextIntents {
		next.SuggestedIntents = append(next.SuggestedIntents, protocol.SuggestedIntent{Name: n.Name, Description: n.Description})
	}
	for _, f := range out.ContinuationFacts {
		if f.Category == "" {
			f.Category = protocol.CategorySession
		}
		next.ContinuationFacts = append(next.ContinuationFacts, f)
	}
	summary := out.Summary
	if summary == "" {
		// The action said nothing: say that it ran (and its steps, when
		// it reported some), never "ran 0 steps".
		summary = def.Tool.Name + " ran."
		if len(events) > 0 {
			summary = fmt.Sprintf("%s ran %s.", def.Tool.Name, plural.S(len(events), "step"))
		}
	}
	return &protocol.InvokeResponse{
		Result:        result,
		StateDelta:    protocol.StateDelta{Assert: asserted, Retract: retracted},
		Observability: protocol.Observability{Summary: summary, Events: events, DurationMS: took.Milliseconds()},
		Next:          next,
	}
}

// validateArgs checks args against the macro-tool's input schema with a
// JSON Schema 2020-12 validator and returns every leaf error.
func (s *Server) validateArgs(def *macros.Def, args map[string]any) []protocol.SchemaError {
	sch, err := def.Validator()
	if err != nil {
		// Generated schemas always compile; report rather than crash.
		s.log.Error("input schema does not compile", "macro_id", def.ID, "error", err.Error())
		return []protocol.SchemaError{{Path: "", Message: "the tool's input schema is unavailable", Keyword: "$schema"}}
	}
	return schemaerr.Errors(sch.Validate(map[string]any(args)))
}

// withDefaults returns args with the schema's defaults filled in for
// absent properties.
func withDefaults(schema map[string]any, args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		out[k] = v
	}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		if _, ok := out[name]; ok {
			continue
		}
		if d, ok := p.(map[string]any)["default"]; ok {
			out[name] = d
		}
	}
	return out
}

// progressKey carries a progress sink from session transports.
type progressKey struct{}

// ProgressFunc receives progress for the request in ctx.
type ProgressFunc func(status, detail string, percent float64)

// WithProgress returns a context whose invocations report progress to fn.
// Session transports use it; HTTP does not (Spec 07 section 7.3).
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

func progressFrom(ctx context.Context) func(status, detail string, percent float64) {
	if fn, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && fn != nil {
		return fn
	}
	return func(string, string, float64) {}
}

// autoConfirmed reports whether an automated identity's configuration
// waives confirmation for these side effects: every one must be listed.
func autoConfirmed(c *caller, effects []string) bool {
	if c.trust != "automated" || len(effects) == 0 {
		return false
	}
	for _, e := range effects {
		listed := false
		for _, a := range c.autoConfirm {
			listed = listed || a == e
		}
		if !listed {
			return false
		}
	}
	return true
}
