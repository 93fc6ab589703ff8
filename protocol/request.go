package protocol

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sort"

	"github.com/manglecp/manglecp/internal/parallel"
)

// TooManyFacts is the too_many_facts error for a request of n facts
// against limits.max_facts_per_request.
func TooManyFacts(n, limit int64) *Error {
	return Errorf(CodeTooManyFacts, "the request has %d facts; limits.max_facts_per_request is %d", n, limit).
		WithDetails(&ErrorDetails{Limit: Int64Ptr(limit), Actual: Int64Ptr(n),
			Suggestion: "Send fewer facts, e.g. only those the intent's required_facts and optional_facts name."})
}

// IntentFacts is what [CheckIntentFacts] found in an intent request.
type IntentFacts struct {
	// Facts are the valid facts, normalized by [ValidateFacts].
	Facts []Fact
	// Violations are the problems of individual facts, by fact index.
	Violations []Violation
	// Missing are the intent's required facts the request lacks: a
	// request-level problem, with no fact to point at.
	Missing []MissingFact
	// Known reports whether the intent is declared.
	Known bool
}

// Err is the error a server answers for the request's facts, or nil when
// they are acceptable: see [IntentFactsError].
func (r *IntentFacts) Err() *Error {
	if len(r.Violations) == 0 && len(r.Missing) == 0 {
		return nil
	}
	return IntentFactsError(r.Violations, r.Missing)
}

// CheckIntentFacts checks the facts of an intent request exactly as a
// server does, so clients can validate before sending (Spec 10 section
// 5.2) and get the server's own error: each raw fact is decoded on its own
// ([DecodeFacts]), validated against the profile ([ValidateFacts]), and the
// intent's required_facts must be present (a fact that failed validation
// still counts as present: its own violation says what is wrong).
func CheckIntentFacts(raws []json.RawMessage, intent string, profile *FactsProfile, intents []IntentDecl) *IntentFacts {
	return NewFactsCheck(raws, intent, profile, intents).Run(nil)
}

// A FactsCheck is [CheckIntentFacts] with a say in its parts. A long list
// is checked in parts on several goroutines; a caller with work of its
// own to do on every valid fact (a server keying them, say) does it in
// the same parts, right after each is checked, and so on the same
// goroutines, with no round of its own.
type FactsCheck struct {
	raws    []json.RawMessage
	intent  string
	profile *FactsProfile
	intents []IntentDecl
	parts   []factsPart
	workers int
}

// NewFactsCheck plans the check of an intent request's facts, as
// CheckIntentFacts does it.
func NewFactsCheck(raws []json.RawMessage, intent string, profile *FactsProfile, intents []IntentDecl) *FactsCheck {
	return newFactsCheck(raws, intent, profile, intents, runtime.GOMAXPROCS(0))
}

// newFactsCheck is NewFactsCheck in at most procs parts.
func newFactsCheck(raws []json.RawMessage, intent string, profile *FactsProfile, intents []IntentDecl, procs int) *FactsCheck {
	parts, workers := splitFacts(len(raws), procs)
	return &FactsCheck{raws: raws, intent: intent, profile: profile, intents: intents, parts: parts, workers: workers}
}

// Parts is how many parts Run checks the facts in (at least one).
func (c *FactsCheck) Parts() int { return len(c.parts) }

// Run checks the facts and returns what CheckIntentFacts does. When then
// is not nil, it is called once for each part k in [0, Parts()) with the
// part's valid facts, normalized, as soon as the part is checked. The
// calls may run at once on different goroutines, in any order; each may
// read its facts but not keep them (they move into place after), and must
// not write to what another call reads. In the result, part k's valid
// facts follow part k-1's. A panic in then is raised again by Run.
func (c *FactsCheck) Run(then func(k int, valid []Fact)) *IntentFacts {
	out := &IntentFacts{}
	var required []string // every required fact's predicate, in the declarations' order
	for _, d := range c.intents {
		if d.Name == c.intent {
			out.Known = true
			required = append(required, d.RequiredFacts...)
		}
	}
	raws, parts, profile := c.raws, c.parts, c.profile
	facts := make([]Fact, len(raws))
	for k := range parts {
		parts[k].found = make([]bool, len(required))
	}
	parallel.Run(len(parts), c.workers, func(k int) {
		p := &parts[k]
		p.check(raws, facts, profile, required)
		if then != nil {
			then(k, facts[p.lo:p.lo+p.kept])
		}
	})
	// The parts' valid facts, each part's at its start, move together.
	kept := 0
	found := make([]bool, len(required))
	for _, p := range parts {
		if kept != p.lo {
			copy(facts[kept:], facts[p.lo:p.lo+p.kept])
		}
		kept += p.kept
		out.Violations = append(out.Violations, p.violations...)
		for r, ok := range p.found {
			found[r] = found[r] || ok
		}
	}
	for r, req := range required {
		if !found[r] {
			out.Missing = append(out.Missing, MissingFact{Predicate: req, Issue: IssueMissingRequiredFact,
				Message: fmt.Sprintf("Intent '%s' requires at least one '%s' fact", c.intent, req)})
		}
	}
	sort.SliceStable(out.Violations, func(i, j int) bool { return out.Violations[i].FactIndex < out.Violations[j].FactIndex })
	out.Facts = facts[:kept]
	return out
}

// A long list is decoded and validated in parts on several goroutines
// (internal/parallel), so a large request's latency is not all on one
// core: one goroutine per factsPerWorker facts at most, each list in
// partsPerWorker parts per goroutine, which the goroutines take in turn
// (one that starts late takes fewer).
const (
	factsPerWorker = 2048
	partsPerWorker = 4
)

// factsPart is one run of a request's facts, checked on its own.
type factsPart struct {
	lo, hi     int // the part is facts[lo:hi]
	kept       int // its valid facts, now at facts[lo:lo+kept]
	violations []Violation
	found      []bool // found[r]: a decoded fact has required[r]'s predicate
}

// splitFacts divides n facts into the parts checked on at most procs
// goroutines (always at least one part), and says on how many.
func splitFacts(n, procs int) ([]factsPart, int) {
	k, w := parallel.Plan(n, procs, factsPerWorker, partsPerWorker)
	parts := make([]factsPart, k)
	for i := range parts {
		parts[i].lo, parts[i].hi = n*i/k, n*(i+1)/k
	}
	return parts, w
}

// check decodes and validates the part's facts. Required facts are looked
// for among every decoded fact, valid or not, before validation normalizes
// the facts in place.
func (p *factsPart) check(raws []json.RawMessage, facts []Fact, profile *FactsProfile, required []string) {
	mine := facts[p.lo:p.hi]
	vs := decodeFactsInto(raws[p.lo:p.hi], mine, p.lo)
	for r, pred := range required {
		p.found[r] = hasPredicate(mine, pred)
	}
	var skip map[int]bool
	if len(vs) > 0 {
		skip = make(map[int]bool, len(vs))
		for _, v := range vs {
			skip[v.FactIndex-p.lo] = true
		}
	}
	valid, more := validateFactsAt(mine, p.lo, profile, Assert, skip, true)
	p.kept, p.violations = len(valid), append(vs, more...)
}

// IntentFactsError builds the error for an intent request's fact problems
// (Spec 09 section 4.1): [FactsError] for violations alone; invalid_facts
// with details.missing_facts (and the violations, if any) when required
// facts are missing.
func IntentFactsError(vs []Violation, missing []MissingFact) *Error {
	if len(missing) == 0 {
		return FactsError(vs)
	}
	var msg string
	switch {
	case len(vs) == 0 && len(missing) == 1:
		msg = "the request lacks a required fact: " + missing[0].Message
	case len(vs) == 0:
		msg = fmt.Sprintf("the request lacks %d required facts", len(missing))
	default:
		msg = fmt.Sprintf("%d fact validation errors and %d missing required %s", len(vs), len(missing), plural(len(missing), "fact"))
	}
	return Errorf(CodeInvalidFacts, "%s", msg).WithDetails(&ErrorDetails{Violations: vs, MissingFacts: missing})
}

func hasPredicate(facts []Fact, pred string) bool {
	for _, f := range facts {
		if f.Pred == pred {
			return true
		}
	}
	return false
}
