package protocol

import (
	"encoding/json"
	"fmt"
	"sort"
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
	facts, violations := DecodeFacts(raws)
	out := &IntentFacts{}
	// Required facts are looked for among every decoded fact, valid or
	// not, before validation normalizes the facts in place.
	for _, d := range intents {
		if d.Name != intent {
			continue
		}
		out.Known = true
		for _, req := range d.RequiredFacts {
			if !hasPredicate(facts, req) {
				out.Missing = append(out.Missing, MissingFact{Predicate: req, Issue: IssueMissingRequiredFact,
					Message: fmt.Sprintf("Intent '%s' requires at least one '%s' fact", d.Name, req)})
			}
		}
	}
	var skip map[int]bool
	if len(violations) > 0 {
		skip = make(map[int]bool, len(violations))
		for _, v := range violations {
			skip[v.FactIndex] = true
		}
	}
	valid, more := validateFacts(facts, profile, Assert, skip, true)
	violations = append(violations, more...)
	sort.SliceStable(violations, func(i, j int) bool { return violations[i].FactIndex < violations[j].FactIndex })
	out.Facts, out.Violations = valid, violations
	return out
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
