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

// CheckIntentFacts checks the facts of an intent request exactly as a
// server does, so clients can validate before sending (Spec 10 section
// 5.2) and get the server's own error: each raw fact is decoded on its own
// ([DecodeFacts]), validated against the profile ([ValidateFacts]), and the
// intent's required_facts must be present. It returns the validated,
// normalized facts, every violation (by fact index; missing required facts,
// index -1, last) and whether the intent is declared.
func CheckIntentFacts(raws []json.RawMessage, intent string, profile *FactsProfile, intents []IntentDecl) ([]Fact, []Violation, bool) {
	facts, violations := DecodeFacts(raws)
	skip := map[int]bool{}
	for _, v := range violations {
		skip[v.FactIndex] = true
	}
	valid, more := ValidateFacts(facts, profile, Assert, skip)
	violations = append(violations, more...)
	known := false
	for _, d := range intents {
		if d.Name != intent {
			continue
		}
		known = true
		for _, req := range d.RequiredFacts {
			if !hasPredicate(facts, req) {
				violations = append(violations, Violation{FactIndex: -1, Predicate: req, Issue: IssueMissingRequiredFact,
					Message: fmt.Sprintf("Intent '%s' requires at least one '%s' fact", d.Name, req)})
			}
		}
	}
	sort.SliceStable(violations, func(i, j int) bool { return violationKey(violations[i]) < violationKey(violations[j]) })
	return valid, violations, known
}

func violationKey(v Violation) int {
	if v.FactIndex < 0 {
		return int(^uint(0) >> 1)
	}
	return v.FactIndex
}

func hasPredicate(facts []Fact, pred string) bool {
	for _, f := range facts {
		if f.Pred == pred {
			return true
		}
	}
	return false
}
