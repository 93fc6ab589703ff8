package manglecp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/manglecp/manglecp/internal/admission"
	"github.com/manglecp/manglecp/internal/factset"
	"github.com/manglecp/manglecp/internal/macros"
	"github.com/manglecp/manglecp/internal/plural"
	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// intentRequestWire decodes an intent request with facts kept raw, so that
// each fact is decoded on its own and a bad one becomes a violation with
// its index instead of failing the whole message.
type intentRequestWire struct {
	Intent      *protocol.Intent      `json:"intent"`
	Facts       []json.RawMessage     `json:"facts"`
	EvalTime    *protocol.Time        `json:"eval_time"`
	Constraints *protocol.Constraints `json:"constraints"`
	Options     *protocol.Options     `json:"options"`
}

// evaluation is a validated intent request with its effective limits.
type evaluation struct {
	intent      protocol.Intent
	facts       []protocol.Fact
	evalTime    time.Time
	chosenTime  bool
	fixedTime   bool // the request named its eval_time (not "now"): the result cache may keep the answer
	maxFacts    int64
	maxInterval int64
	maxCompute  time.Duration
	maxTools    int64
	maxTokens   int64           // -1: no budget
	upgrades    map[string]bool // macro_ids of disclosure_upgrade facts
	disclosure  string
	proofHints  bool
	coverage    bool
	warnings    []protocol.Warning
	knownIntent bool
	factsBytes  int64         // size of the facts on the wire
	factKeys    [][]byte      // the facts' keys (protocol.FactKey), each followed by '\n', in chunks: macroid.Facts's text of facts
	summary     *factsSummary // the facts' key hash and memory: see summarized
	releaseKeys func()        // when not nil, gives factKeys' buffers back once they are hashed
	external    []protocol.Fact
	caller      *caller
	program     *kernel.Program // the rule version this request uses throughout
	defined     []*macros.Def   // macro-tools render synthesized, for the store
}

// computeExternal materializes the external predicates for this request,
// in name order. A failure is masked as evaluation_failed and logged.
func (s *Server) computeExternal(ctx context.Context, ev *evaluation) ([]protocol.Fact, error) {
	var out []protocol.Fact
	in := &ExternalInput{Intent: ev.intent.Name, Facts: ev.facts, EvalTime: ev.evalTime}
	for _, name := range sortedKeys(s.domain.External) {
		e := s.domain.External[name]
		tuples, err := e.Compute(ctx, in)
		if err != nil {
			if ctx.Err() != nil {
				return nil, s.kernelContextError(ctx)
			}
			return nil, &kernel.Error{Public: protocol.Errorf(protocol.CodeEvaluationFailed, "evaluation failed; the server log has the details"),
				Cause: fmt.Errorf("external predicate %s: %w", name, err)}
		}
		for _, t := range tuples {
			if len(t) != e.Arity {
				return nil, &kernel.Error{Public: protocol.Errorf(protocol.CodeEvaluationFailed, "evaluation failed; the server log has the details"),
					Cause: fmt.Errorf("external predicate %s returned a tuple of %d values, want %d", name, len(t), e.Arity)}
			}
			out = append(out, protocol.NewFact(name, t...))
		}
	}
	return out, nil
}

// externalAheadFacts is the fewest facts for which the external
// predicates are computed while the kernel loads the request: below it a
// goroutine costs more than it saves.
const externalAheadFacts = 1024

// externalAhead starts computing ev's external predicates on a goroutine
// of its own when the request is large and the domain has any, and
// returns the function the kernel calls for them once it has loaded the
// client facts (kernel.Request.ExternalLater); nil otherwise. The
// goroutine only reads the request's facts and ends with the predicates'
// Compute, which honours ctx. A panic in it is raised again where the
// answer is asked for, as if computed there.
func (s *Server) externalAhead(ctx context.Context, ev *evaluation) func() ([]protocol.Fact, error) {
	if len(ev.facts) < externalAheadFacts || len(s.domain.External) == 0 {
		return nil
	}
	type answer struct {
		facts    []protocol.Fact
		err      error
		panicked any
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		defer func() {
			a.panicked = recover()
			done <- a
		}()
		a.facts, a.err = s.computeExternal(ctx, ev)
	}()
	return sync.OnceValues(func() ([]protocol.Fact, error) {
		a := <-done
		if a.panicked != nil {
			panic(a.panicked)
		}
		return a.facts, a.err
	})
}

// acquireSlot waits at most QueueTimeout for an evaluation slot, shared
// fairly between callers (see admission.Slots). It returns the function that
// gives the slot back.
func (s *Server) acquireSlot(ctx context.Context) (release func(), err error) {
	key := callerFrom(ctx).shareKey()
	if err := s.slots.Acquire(ctx, key, s.opts.QueueTimeout); err != nil {
		var full admission.ErrNoSlot
		if errors.As(err, &full) {
			return nil, protocol.Errorf(protocol.CodeRateLimited, "no evaluation slot became free for this caller in time (at most %d evaluations run at once, %d per caller)", s.slots.Capacity(), s.slots.PerKey()).
				WithRetryAfter(max(100, s.opts.QueueTimeout.Milliseconds()/2))
		}
		return nil, s.kernelContextError(ctx)
	}
	return func() { s.slots.Release(key) }, nil
}

// kernelContextError is the registry error for a context that ended
// before evaluation.
func (s *Server) kernelContextError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return protocol.Errorf(protocol.CodeEvaluationTimeout, "evaluation exceeded max_compute_ms and was stopped")
	}
	return protocol.Errorf(protocol.CodeCancelled, "the request was cancelled")
}

// evaluate answers an intent request by evaluating it, and stores a
// deterministic answer in the result cache under key (nil: not stored).
func (s *Server) evaluate(ctx context.Context, env *protocol.Envelope, key *resultKey) (*protocol.IntentResponse, error) {
	start := time.Now()
	// The slot comes first: decoding and validating up to max_facts_per_request
	// facts is work too, and a caller over its share must not get it done.
	release, err := s.acquireSlot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	prog := s.prog.Load()
	ev, perr := s.decodeIntent(prog, env)
	if perr != nil {
		return nil, perr
	}
	ctx, cancel := context.WithTimeout(ctx, ev.maxCompute)
	defer cancel()
	who := callerFrom(ctx)
	req := s.kernelRequest(ev, who)
	external := s.externalAhead(ctx, ev)
	if external == nil {
		if ev.external, err = s.computeExternal(ctx, ev); err != nil {
			return nil, err
		}
		req.External = ev.external
	} else {
		req.ExternalLater = external
	}
	ev.summarizeAhead()
	kctx, endKernel := s.span(ctx, "manglecp.evaluate")
	res, err := prog.Evaluate(kctx, req)
	endKernel()
	if external != nil && err == nil {
		ev.external, _ = external() // called by the kernel: its answer, at once
	}
	if ev.maxFacts == 0 {
		if err := zeroBudget(res, err); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	if res.IntentDenied {
		return nil, protocol.Errorf(protocol.CodeAuthInsufficient, "%s may not use the intent %s", who.name, protocol.Quote(ev.intent.Name))
	}
	ev.caller = who
	_, endRender := s.span(ctx, "manglecp.render")
	resp := s.render(ev, res)
	endRender()
	if err := s.saveMacros(ctx, ev.defined); err != nil {
		return nil, err
	}
	if w := expiredWarning(resp, s.now()); w != nil {
		resp.Warnings = append(resp.Warnings, *w)
	}
	resp.EvalDurationMS = time.Since(start).Milliseconds()
	s.rememberResult(key, ev, resp)
	return resp, nil
}

// unknownIntentWarning is the unknown_intent warning for name, naming the
// declared intent meant when one is close (as `manglecp eval` does).
func unknownIntentWarning(name string, intents []protocol.IntentDecl) protocol.Warning {
	w := protocol.Warning{Code: protocol.WarnUnknownIntent,
		Message: fmt.Sprintf("intent %s is not declared in the manifest; evaluated against the rules anyway", protocol.Quote(name))}
	names := make([]string, len(intents))
	for i, in := range intents {
		names[i] = in.Name
	}
	if c := protocol.Closest(name, names); c != "" {
		w.Message += fmt.Sprintf("; did you mean %q?", c)
		w.Details = map[string]any{"did_you_mean": c}
	}
	return w
}

// expiredWarning is the tools_expired warning when every macro-tool of
// resp expired before now (the server's clock): an eval_time in the past
// gave validity windows that are over, so every invocation would answer
// macro_expired; nil otherwise.
func expiredWarning(resp *protocol.IntentResponse, now time.Time) *protocol.Warning {
	if len(resp.MacroTools) == 0 {
		return nil
	}
	var latest time.Time
	for _, m := range resp.MacroTools {
		if m.Validity == nil || m.Validity.ExpiresAt == nil || !m.Validity.ExpiresAt.Before(now) {
			return nil
		}
		if m.Validity.ExpiresAt.After(latest) {
			latest = m.Validity.ExpiresAt.Time
		}
	}
	n := len(resp.MacroTools)
	which := fmt.Sprintf("all %d macro-tools", n)
	if n == 1 {
		which = "the only macro-tool"
	}
	return &protocol.Warning{Code: protocol.WarnToolsExpired,
		Message: fmt.Sprintf("%s expired before the server's clock (%s; the last at %s): invoking them answers macro_expired; evaluate again with a later eval_time, or none for the server's clock",
			which, now.UTC().Format(time.RFC3339), latest.UTC().Format(time.RFC3339)),
		Details: map[string]any{"expired": n, "server_time": now.UTC().Format(time.RFC3339Nano)}}
}

// programView is what decoding reads of a rule version: its facts profile
// and intents, copied out of the program once rather than per request.
// Requests share it and never modify it.
type programView struct {
	prog    *kernel.Program
	profile protocol.FactsProfile
	intents []protocol.IntentDecl
	outputs map[string]bool // the output-only predicates, as profile.Predicate finds them
}

// viewOf returns the view of prog, made once per rule version.
func (s *Server) viewOf(prog *kernel.Program) *programView {
	if v := s.view.Load(); v != nil && v.prog == prog {
		return v
	}
	v := &programView{prog: prog, profile: prog.FactsProfile(), intents: prog.Intents(), outputs: map[string]bool{}}
	for i := range v.profile.Predicates {
		p := &v.profile.Predicates[i]
		if v.profile.Predicate(p.Predicate) == p && p.Direction == protocol.DirectionOutput {
			v.outputs[p.Predicate] = true
		}
	}
	s.view.Store(v)
	return v
}

// premise reports whether f is a premise of evaluation. Two kinds of valid
// fact are not: presentation facts (disclosure_upgrade), which never
// change macro_ids, and facts of output-only predicates, a state delta fed
// back (Spec 07 section 4.1), accepted and set aside, since the server
// asserts or derives those itself.
func (v *programView) premise(f *protocol.Fact) bool {
	return f.Pred != upgradePredicate && !v.outputs[f.Pred]
}

// upgradePredicate is the presentation fact that asks for a macro-tool
// at full disclosure (Spec 05).
const upgradePredicate = "disclosure_upgrade"

// kernelRequest is what the kernel evaluates for ev on behalf of who.
func (s *Server) kernelRequest(ev *evaluation, who *caller) kernel.Request {
	budget := ev.maxFacts
	if budget == 0 {
		budget = 1 // see zeroBudget
	}
	return kernel.Request{
		Caller:              who.name,
		Permissions:         who.permissions,
		External:            ev.external,
		Intent:              ev.intent.Name,
		Params:              ev.intent.Params,
		Facts:               ev.facts,
		EvalTime:            ev.evalTime,
		MaxFactsCreated:     budget,
		MaxWork:             s.opts.Limits.MaxEvaluationWork,
		MaxIntervalsPerAtom: ev.maxInterval,
		Explain:             ev.proofHints,
		Coverage:            ev.coverage,
	}
}

// decodeIntent decodes and validates an intent request: payload shape,
// fact count (before decoding any fact), every fact, required facts and
// constraints. Constraints looser than the server's limits are clamped
// with a warning.
func (s *Server) decodeIntent(prog *kernel.Program, env *protocol.Envelope) (*evaluation, *protocol.Error) {
	var w intentRequestWire
	// The raw facts were split as the message was checked
	// (Server.decodeEnvelope, protocol.DecodeEnvelopeInto).
	if err := protocol.DecodePayloadList(env, &w, "facts", &w.Facts); err != nil {
		return nil, err
	}
	if w.Intent == nil || w.Intent.Name == "" {
		return nil, protocol.Errorf(protocol.CodeMalformedMessage, "intent_request needs intent.name").
			WithDetails(&protocol.ErrorDetails{Field: "intent.name"})
	}
	lim := s.opts.Limits
	if n := int64(len(w.Facts)); n > lim.MaxFactsPerRequest {
		return nil, protocol.TooManyFacts(n, lim.MaxFactsPerRequest)
	}
	ev := &evaluation{intent: *w.Intent, program: prog}
	for _, raw := range w.Facts {
		ev.factsBytes += int64(len(raw))
	}
	view := s.viewOf(prog)
	// Each fact's key (protocol.FactKey) is built as soon as its part of the list is
	// checked, on the goroutine that checked it. A large request's keys go
	// in buffers an earlier one gave back, and back once they are hashed
	// (summarized).
	check := protocol.NewFactsCheck(w.Facts, ev.intent.Name, &view.profile, view.intents)
	buf, pooled := &factset.Buffers{}, false
	if len(w.Facts) >= summaryAheadFacts {
		if b, ok := s.factBuffers.Get(); ok {
			buf = b
		}
		pooled = true
	}
	// A key is about a fact's wire size less its field names.
	keys := factset.NewBuilder(len(w.Facts), check.Parts(), max(0, int(ev.factsBytes)-16*len(w.Facts)), buf)
	checked := check.Run(func(k int, valid []protocol.Fact) { keys.Add(k, valid, view.premise) })
	ev.knownIntent = checked.Known
	if perr := checked.Err(); perr != nil {
		if pooled {
			s.factBuffers.Put(buf)
		}
		return nil, perr
	}
	// Deduplicated in place: the validated facts are this request's own.
	premises := checked.Facts
	setAside := 0
	if !keys.KeyedAll() {
		premises = premises[:0]
		for _, f := range checked.Facts {
			switch {
			case view.premise(&f):
				premises = append(premises, f)
			case f.Pred == upgradePredicate:
				id, _ := f.Args[0].(string)
				if ev.upgrades == nil {
					ev.upgrades = map[string]bool{}
				}
				ev.upgrades[id] = true
			default:
				setAside++
			}
		}
	}
	// A fact is a set member: a duplicate (provenance is not identity)
	// neither changes macro_ids nor doubles anything.
	set := keys.Set(premises)
	if pooled {
		ev.releaseKeys = func() { s.factBuffers.Put(buf) }
	}
	if len(set.Facts) > 0 {
		ev.facts, ev.factKeys = set.Facts, set.Chunks
	}
	if setAside > 0 {
		ev.warnings = append(ev.warnings, protocol.Warning{Code: protocol.WarnOutputFactsIgnored,
			Message: fmt.Sprintf("%s of output-only predicates (a state delta fed back) accepted and not used: the server asserts or derives those itself", plural.S(setAside, "fact")),
			Details: map[string]any{"count": setAside}})
	}
	if !ev.knownIntent {
		ev.warnings = append(ev.warnings, unknownIntentWarning(ev.intent.Name, view.intents))
	}
	switch {
	case w.EvalTime != nil && w.EvalTime.Now:
		ev.evalTime = s.now().UTC() // the client chose the server's clock: no warning
	case w.EvalTime != nil:
		if err := protocol.CheckTimeRange(w.EvalTime.Time); err != nil {
			return nil, protocol.Errorf(protocol.CodeMalformedMessage, "payload field \"eval_time\": %v", err).WithDetails(&protocol.ErrorDetails{Field: "eval_time"})
		}
		ev.evalTime, ev.fixedTime = w.EvalTime.Time, true
	default:
		ev.evalTime, ev.chosenTime = s.now().UTC(), true
	}
	c := w.Constraints
	if c == nil {
		c = &protocol.Constraints{}
	}
	var perr *protocol.Error
	// A zero budget of derived facts is a budget (the evaluation answers
	// derivation_limit_exceeded); zero compute time or zero intervals per
	// atom leave nothing to evaluate and are refused, saying why
	// (docs/design.md, "Decisions on ambiguous points").
	ev.maxFacts, perr = s.clamp("max_facts_created", c.MaxFactsCreated, lim.MaxDerivedFacts, "", &ev.warnings)
	if perr != nil {
		return nil, perr
	}
	ms, perr := s.clamp("max_compute_ms", c.MaxComputeMS, lim.MaxComputeMS,
		"no evaluation can run in 0 ms; send at least 1, or leave it out for the server's limit", &ev.warnings)
	if perr != nil {
		return nil, perr
	}
	ev.maxCompute = time.Duration(ms) * time.Millisecond
	if ev.maxInterval, perr = s.clamp("max_intervals_per_atom", c.MaxIntervalsPerAtom, lim.MaxIntervalsPerAtom,
		"every temporal fact holds at least one interval, so 0 admits none; send at least 1, or leave out \"t\" to reason without time", &ev.warnings); perr != nil {
		return nil, perr
	}
	for _, nv := range [...]struct {
		name string
		v    *int64
	}{{"max_tools_returned", c.MaxToolsReturned}, {"max_tokens_budget", c.MaxTokensBudget}} {
		if nv.v != nil && *nv.v < 0 {
			return nil, protocol.Errorf(protocol.CodeMalformedMessage, "constraints.%s must not be negative", nv.name).
				WithDetails(&protocol.ErrorDetails{Field: "constraints." + nv.name})
		}
	}
	ev.maxTokens = -1 // no budget
	if c.MaxTokensBudget != nil {
		ev.maxTokens = *c.MaxTokensBudget // 0 is a budget of zero (Spec 05 section 5.2)
	}
	if c.MaxToolsReturned != nil {
		ev.maxTools = *c.MaxToolsReturned
	} else {
		ev.maxTools = -1
	}
	ev.disclosure = protocol.DisclosureAdaptive
	ev.coverage = s.opts.RuleCoverage
	if o := w.Options; o != nil {
		ev.proofHints = o.IncludeProofHints
		ev.coverage = ev.coverage || o.IncludeRuleCoverage
		if o.DisclosurePreference != "" {
			switch o.DisclosurePreference {
			case protocol.DisclosureFull, protocol.DisclosureCondensed, protocol.DisclosureMinimal, protocol.DisclosureAdaptive:
				ev.disclosure = o.DisclosurePreference
			default:
				return nil, protocol.Errorf(protocol.CodeMalformedMessage, "options.disclosure_preference must be full, condensed, minimal or adaptive, got %s", protocol.Quote(o.DisclosurePreference)).
					WithDetails(&protocol.ErrorDetails{Field: "options.disclosure_preference"})
			}
		}
	}
	return ev, nil
}

// clamp applies Spec 05 2.2: the tighter of the client's value and the
// server's limit wins; a looser client value is clamped with a warning.
// Negative values are malformed; 0 is malformed with the reason zeroWhy,
// or, when zeroWhy is "", a budget of zero.
func (s *Server) clamp(name string, client *int64, limit int64, zeroWhy string, warnings *[]protocol.Warning) (int64, *protocol.Error) {
	if client == nil {
		return limit, nil
	}
	if *client < 0 || (*client == 0 && zeroWhy != "") {
		msg := fmt.Sprintf("constraints.%s must be a positive integer, got %d", name, *client)
		if *client == 0 {
			msg = fmt.Sprintf("constraints.%s is 0: %s", name, zeroWhy)
		}
		return 0, protocol.Errorf(protocol.CodeMalformedMessage, "%s", msg).
			WithDetails(&protocol.ErrorDetails{Field: "constraints." + name})
	}
	if *client > limit {
		*warnings = append(*warnings, protocol.Warning{Code: protocol.WarnConstraintClamped,
			Message: fmt.Sprintf("constraints.%s %d exceeds the server limit; %d was used", name, *client, limit),
			Details: map[string]any{"constraint": name, "requested": *client, "applied": limit}})
		return limit, nil
	}
	return *client, nil
}

// zeroBudget answers a request whose max_facts_created is 0. The engine
// has no budget of zero, so the evaluation ran with a budget of one fact;
// any derived fact (every evaluation derives some: each selected
// macro-tool is one) exceeds the client's budget of zero.
func zeroBudget(res *kernel.Result, err error) error {
	consumed := int64(0)
	if perr, ok := protocol.AsError(err); ok && perr.Code == protocol.CodeDerivationLimitExceeded {
		consumed = 1
		if perr.Details != nil && perr.Details.Budget != nil {
			consumed = perr.Details.Budget.Consumed
		}
	} else if err != nil {
		return err
	} else if res != nil {
		consumed = res.FactsDerived
	}
	if consumed == 0 {
		return nil
	}
	f := false
	return protocol.Errorf(protocol.CodeDerivationLimitExceeded, "evaluation would derive more than 0 facts (max_facts_created is 0)").
		WithDetails(&protocol.ErrorDetails{
			Budget:                  &protocol.Budget{Limit: 0, Consumed: consumed, Unit: "derived_facts"},
			PartialResultsAvailable: &f,
			Suggestion:              "Every evaluation derives facts (each selected macro-tool is one): raise max_facts_created, or leave it out for limits.max_derived_facts.",
		})
}
