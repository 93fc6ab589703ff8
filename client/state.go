package client

import (
	"encoding/json"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/manglecp/manglecp/protocol"
)

// State is a client's working state across requests (Spec 10 section 5.4):
// MangleCP servers keep none, so the client keeps the facts it knows,
// applies each invocation's state delta (Spec 07 section 4) and follows
// suggested intents with their continuation facts (Spec 07 section 6).
//
// Facts are identified by predicate, arguments and temporal annotation;
// provenance (source) and category are metadata and never part of a fact's
// identity. Argument values compare as the JSON the server reads: 404 and
// json.Number("404") are the same value, 1 and 1.0 are not (integer and
// float), and RFC 3339 and epoch-millisecond times in "t" compare as
// instants. With a facts profile, named_args resolve through arg_names.
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

// key is a fact's identity: predicate, arguments and temporal annotation.
func (st *State) key(f protocol.Fact) string {
	var b strings.Builder
	b.WriteString(f.Pred)
	if args, ok := st.positional(f); ok {
		b.WriteString("(")
		for i, a := range args {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(canonical(a))
		}
		b.WriteString(")")
	} else {
		b.WriteString("{")
		b.WriteString(canonical(f.NamedArgs))
		b.WriteString("}")
	}
	if f.T != nil {
		b.WriteString("@")
		b.WriteString(temporalKey(f.T))
	}
	return b.String()
}

// matches reports whether retract pattern p matches fact f.
func (st *State) matches(p, f protocol.Fact) bool {
	if p.Pred != f.Pred {
		return false
	}
	if p.T != nil && (f.T == nil || temporalKey(p.T) != temporalKey(f.T)) {
		return false
	}
	pa, pok := st.positional(p)
	fa, fok := st.positional(f)
	switch {
	case pok && fok:
		if len(pa) != len(fa) {
			return false
		}
		for i := range pa {
			if pa[i] != nil && canonical(pa[i]) != canonical(fa[i]) {
				return false
			}
		}
		return true
	case !pok && !fok:
		for k, v := range p.NamedArgs {
			fv, has := f.NamedArgs[k]
			if !has {
				return false
			}
			if v != nil && canonical(v) != canonical(fv) {
				return false
			}
		}
		return true
	}
	return false
}

// canonical is a string that is equal for two values exactly when the
// server reads them as the same value: the value is encoded as JSON
// first, so Go numbers compare as what goes on the wire.
func canonical(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return "!" + err.Error()
	}
	var x any
	if err := decodeLenient(raw, &x); err != nil {
		return "!" + string(raw)
	}
	var b strings.Builder
	writeCanonical(&b, x)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		b.WriteString(strconv.Quote(x))
	case json.Number:
		b.WriteString(numberKey(string(x)))
	case []any:
		b.WriteString("[")
		for i, e := range x {
			if i > 0 {
				b.WriteString(",")
			}
			writeCanonical(b, e)
		}
		b.WriteString("]")
	case map[string]any:
		if s, ok := x["value"].(string); ok && len(x) == 2 && x["_type"] == "int64" {
			b.WriteString(numberKey(s)) // the int64 wrapper is the integer it holds
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(strconv.Quote(k))
			b.WriteString(":")
			writeCanonical(b, x[k])
		}
		b.WriteString("}")
	default:
		b.WriteString("?")
	}
}

// numberKey normalizes a JSON number: integers exactly, other numbers as
// float64.
func numberKey(s string) string {
	if !strings.ContainsAny(s, ".eE") {
		if n, ok := new(big.Int).SetString(s, 10); ok {
			return "i" + n.String()
		}
		return "n" + s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "n" + s
	}
	return "f" + strconv.FormatFloat(f, 'g', -1, 64)
}

// temporalKey normalizes a temporal annotation: times as Unix
// nanoseconds, "_" and "now" as themselves.
func temporalKey(t *protocol.Temporal) string {
	bound := func(v any) string {
		if s, ok := v.(string); ok && (s == "_" || s == "now") {
			return s
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return "?"
		}
		var x any
		if decodeLenient(raw, &x) == nil {
			if tt, err := protocol.ParseTime(x); err == nil {
				return strconv.FormatInt(tt.UnixNano(), 10)
			}
		}
		return canonical(v)
	}
	if t.IsPoint() {
		return "at:" + bound(t.At)
	}
	return "from:" + bound(t.Start) + ",to:" + bound(t.End)
}

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
