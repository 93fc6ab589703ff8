package client

import (
	"sync"

	"github.com/manglecp/manglecp/protocol"
)

// State is a client's working state across requests (Spec 10 section 5.4):
// MangleCP servers keep none, so the client keeps the facts it knows,
// applies each invocation's state delta (Spec 07 section 4) and follows
// suggested intents with their continuation facts (Spec 07 section 6).
//
// Facts are identified exactly as servers identify them,
// by [protocol.FactKey]: predicate, arguments and temporal annotation;
// provenance (source) and category are metadata and never part of a fact's
// identity. Argument values compare as the JSON the server reads: 404 and
// json.Number("404") are the same value, 1 and 1.0 are not (integer and
// float), and temporal bounds compare by their JSON text as the server's
// do. With a facts profile, named_args resolve through arg_names.
//
// A State is safe for concurrent use. The zero value is an empty state
// without a facts profile; [NewState] and [Session.NewState] give it one.
type State struct {
	mu           sync.Mutex
	profile      *protocol.FactsProfile
	facts        []protocol.Fact
	keys         map[string]bool
	continuation []protocol.Fact
	suggested    []protocol.SuggestedIntent
}

// NewState returns a state holding facts (duplicates dropped). profile, the
// server's facts_profile, may be nil; with it, requests leave out facts of
// output-only predicates (such as facts a state delta asserted), which
// clients must not send, and named_args resolve through arg_names. The
// profile is not copied: do not modify it.
func NewState(profile *protocol.FactsProfile, facts ...protocol.Fact) *State {
	st := &State{profile: profile}
	st.add(facts)
	return st
}

// NewState returns a state for this server: [NewState] with the current
// manifest's facts profile.
func (s *Session) NewState(facts ...protocol.Fact) *State {
	var p *protocol.FactsProfile
	if m := s.Manifest(); m != nil {
		p = &m.FactsProfile
	}
	return NewState(p, facts...)
}

// Facts returns a copy of the working facts, in the order they were added.
func (st *State) Facts() []protocol.Fact {
	st.mu.Lock()
	defer st.mu.Unlock()
	return copyFacts(st.facts)
}

// Continuation returns the continuation facts of the last invocation
// applied with [State.Apply] (Spec 07 section 6.3).
func (st *State) Continuation() []protocol.Fact {
	st.mu.Lock()
	defer st.mu.Unlock()
	return copyFacts(st.continuation)
}

// Suggested returns the suggested intents of the last invocation applied
// with [State.Apply].
func (st *State) Suggested() []protocol.SuggestedIntent {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]protocol.SuggestedIntent(nil), st.suggested...)
}

// Add asserts facts that are not already held.
func (st *State) Add(facts ...protocol.Fact) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.add(facts)
}

func (st *State) add(facts []protocol.Fact) {
	if st.keys == nil {
		st.keys = map[string]bool{}
	}
	for _, f := range facts {
		k := st.key(f)
		if st.keys[k] {
			continue
		}
		st.keys[k] = true
		st.facts = append(st.facts, copyFact(f))
	}
}

// ApplyDelta applies a state delta as one transaction (Spec 07 sections
// 4.4 and 4.5): every retraction first, then every assertion. A retract
// pattern removes the facts of its predicate whose arguments equal the
// pattern's, null arguments (and, for named_args, absent names) matching
// anything; a pattern with "t" also needs an equal temporal annotation,
// one without matches every annotation. Assertions already held are not
// added again.
func (st *State) ApplyDelta(d protocol.StateDelta) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(d.Retract) > 0 {
		kept := st.facts[:0]
		for _, f := range st.facts {
			retracted := false
			for _, p := range d.Retract {
				if st.matches(p, f) {
					retracted = true
					break
				}
			}
			if retracted {
				delete(st.keys, st.key(f))
				continue
			}
			kept = append(kept, f)
		}
		clear(st.facts[len(kept):])
		st.facts = kept
	}
	st.add(d.Assert)
}

// Apply applies an invocation's state delta and remembers its suggested
// intents and continuation facts for [State.Next]. A nil response is
// ignored.
func (st *State) Apply(resp *protocol.InvokeResponse) {
	if resp == nil {
		return
	}
	st.ApplyDelta(resp.StateDelta)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.continuation, st.suggested = nil, nil
	if resp.Next != nil {
		st.continuation = copyFacts(resp.Next.ContinuationFacts)
		st.suggested = append([]protocol.SuggestedIntent(nil), resp.Next.SuggestedIntents...)
	}
}

// Request builds an intent request for intent from the working facts plus
// extra facts (Spec 10 section 5.4), without duplicates. Facts of
// predicates the profile declares output-only stay in the state but are
// not sent, and every fact is sent as a client fact (category session, the
// only category a client may assert). The caller may set eval_time,
// constraints and options on the result.
func (st *State) Request(intent protocol.Intent, extra ...protocol.Fact) *protocol.IntentRequest {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.request(intent, extra)
}

// Next builds the intent request that follows a suggested intent (Spec 07
// section 6.4): its name and params, the working facts and the
// continuation facts of the last applied invocation, as [State.Request]
// does.
func (st *State) Next(suggested protocol.SuggestedIntent) *protocol.IntentRequest {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.request(protocol.Intent{Name: suggested.Name, Params: copyParams(suggested.Params)}, st.continuation)
}

func (st *State) request(intent protocol.Intent, extra []protocol.Fact) *protocol.IntentRequest {
	req := &protocol.IntentRequest{Intent: intent, Facts: []protocol.Fact{}}
	seen := map[string]bool{}
	for _, list := range [][]protocol.Fact{st.facts, extra} {
		for _, f := range list {
			if st.outputOnly(f.Pred) {
				continue
			}
			k := st.key(f)
			if seen[k] {
				continue
			}
			seen[k] = true
			f = copyFact(f)
			if f.Category != protocol.CategorySession {
				f.Category = "" // the server reads it as session
			}
			req.Facts = append(req.Facts, f)
		}
	}
	return req
}

func (st *State) outputOnly(pred string) bool {
	if st.profile == nil {
		return false
	}
	p := st.profile.Predicate(pred)
	return p != nil && p.Direction == protocol.DirectionOutput
}

// positional returns a fact's arguments by position: its args, or its
// named_args resolved through the profile's arg_names (absent names are
// nil, wildcards in a pattern). ok is false for named_args that cannot be
// resolved.
func (st *State) positional(f protocol.Fact) (args []any, ok bool) {
	if f.Args != nil || f.NamedArgs == nil {
		return f.Args, true
	}
	if st.profile == nil {
		return nil, false
	}
	p := st.profile.Predicate(f.Pred)
	if p == nil || len(p.ArgNames) != p.Arity {
		return nil, false
	}
	pos := map[string]int{}
	for i, n := range p.ArgNames {
		pos[n] = i
	}
	args = make([]any, p.Arity)
	for k, v := range f.NamedArgs {
		i, known := pos[k]
		if !known {
			return nil, false
		}
		args[i] = v
	}
	return args, true
}

// key is a fact's identity, [protocol.FactKey] of the fact as a server
// holds it: named_args resolved through the profile, values as the server
// decodes them. A fact whose named_args cannot be resolved is keyed by its
// named_args as they are.
func (st *State) key(f protocol.Fact) string {
	if args, ok := st.positional(f); ok {
		f.Args, f.NamedArgs = args, nil
	}
	if c, ok := protocol.CanonicalFact(f, st.profile); ok {
		f = c
	}
	if f.Args == nil && f.NamedArgs != nil {
		return protocol.FactKey(f) + " " + string(protocol.AppendArgKey(nil, f.NamedArgs))
	}
	return protocol.FactKey(f)
}

// matches reports whether retract pattern p matches fact f: the same
// predicate, the pattern's non-null arguments equal to the fact's (by
// [protocol.AppendArgKey] of both as a server holds them) and, when the
// pattern has a temporal annotation, an equal one.
func (st *State) matches(p, f protocol.Fact) bool {
	if p.Pred != f.Pred {
		return false
	}
	pa, pok := st.positional(p)
	fa, fok := st.positional(f)
	if pok && fok {
		p.Args, p.NamedArgs, f.Args, f.NamedArgs = pa, nil, fa, nil
	}
	cp, ok1 := protocol.CanonicalFact(p, st.profile)
	cf, ok2 := protocol.CanonicalFact(f, st.profile)
	if !ok1 || !ok2 {
		return false
	}
	if cp.T != nil && (cf.T == nil || temporalKey(cp) != temporalKey(cf)) {
		return false
	}
	switch {
	case pok && fok:
		if len(cp.Args) != len(cf.Args) {
			return false
		}
		for i := range cp.Args {
			if cp.Args[i] != nil && !sameArg(cp.Args[i], cf.Args[i]) {
				return false
			}
		}
		return true
	case !pok && !fok:
		for k, v := range cp.NamedArgs {
			fv, has := cf.NamedArgs[k]
			if !has {
				return false
			}
			if v != nil && !sameArg(v, fv) {
				return false
			}
		}
		return true
	}
	return false
}

// sameArg reports whether two argument values are the same value.
func sameArg(a, b any) bool {
	return string(protocol.AppendArgKey(nil, a)) == string(protocol.AppendArgKey(nil, b))
}

// temporalKey is the key of f's temporal annotation.
func temporalKey(f protocol.Fact) string { return string(protocol.AppendTemporalKey(nil, f.T)) }

func copyFact(f protocol.Fact) protocol.Fact {
	if f.Args != nil {
		f.Args = append(make([]any, 0, len(f.Args)), f.Args...)
	}
	if f.NamedArgs != nil {
		m := make(map[string]any, len(f.NamedArgs))
		for k, v := range f.NamedArgs {
			m[k] = v
		}
		f.NamedArgs = m
	}
	return f
}

func copyFacts(facts []protocol.Fact) []protocol.Fact {
	if facts == nil {
		return nil
	}
	out := make([]protocol.Fact, len(facts))
	for i, f := range facts {
		out[i] = copyFact(f)
	}
	return out
}

func copyParams(p map[string]any) map[string]any {
	if p == nil {
		return nil
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}
