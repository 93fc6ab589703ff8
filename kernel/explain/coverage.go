package explain

import (
	"slices"
	"sort"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/builtin"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"github.com/manglecp/manglecp/kernel/analyse"
	"github.com/manglecp/manglecp/kernel/eval"
)

// Coverage is the rule coverage of one evaluation (Spec 09 section 6).
type Coverage struct {
	TotalRules, Fired, Dormant, Inapplicable int
	Details                                  []RuleStatus
}

// RuleStatus is one rule that did not fire. Rule names a rule by its head
// predicate and its position among that predicate's rules ("pred#2"), never
// by its text.
type RuleStatus struct {
	Rule              string
	Status            string // partially_alive, dead or inapplicable
	MissingPredicates []string
}

// CoverageOf classifies every rule against the final store of run: fired
// (its body has a solution: fired, by FiredRules), inapplicable (it
// requires another intent), partially alive (some body predicates have
// facts) or dead (none has).
func CoverageOf(p *eval.Program, run *eval.Run) *Coverage {
	s, m, intent, fired := run.Store, run.Matcher, run.Req.Intent, run.Firing
	names := p.RuleNames()
	cov := &Coverage{TotalRules: len(p.Info.Rules)}
	for i, r := range p.Info.Rules {
		if fired[i] {
			cov.Fired++
			continue
		}
		r = r.ReplaceWildcards()
		if other := requiredIntent(r); other != "" && other != intent {
			cov.Inapplicable++
			cov.Details = append(cov.Details, RuleStatus{Rule: names[i], Status: "inapplicable"})
			continue
		}
		var missing []string
		alive := false
		for _, prem := range r.Premises {
			lit, _ := analyse.PlainPremise(prem)
			a, ok := lit.(ast.Atom)
			if !ok {
				continue
			}
			if _, isBuiltin := builtin.Predicates[a.Predicate]; isBuiltin {
				continue
			}
			if hasFacts(s, a.Predicate) || (temporalPremise(prem) && hasTemporalFacts(m.Ts, a.Predicate)) {
				alive = true
			} else {
				missing = append(missing, a.Predicate.Symbol)
			}
		}
		sort.Strings(missing)
		status := "dead"
		if alive {
			status = "partially_alive"
		}
		cov.Dormant++
		cov.Details = append(cov.Details, RuleStatus{Rule: names[i], Status: status, MissingPredicates: slices.Compact(missing)})
	}
	sort.Slice(cov.Details, func(i, j int) bool { return cov.Details[i].Rule < cov.Details[j].Rule })
	return cov
}

// requiredIntent is the intent name a rule's body demands with
// intent("name"), or "".
func requiredIntent(r ast.Clause) string {
	for _, prem := range r.Premises {
		if a, ok := prem.(ast.Atom); ok && a.Predicate.Symbol == "intent" && len(a.Args) == 1 {
			if c, ok := a.Args[0].(ast.Constant); ok && c.Type == ast.StringType {
				s, _ := c.StringValue()
				return s
			}
		}
	}
	return ""
}

func hasFacts(s *eval.Store, sym ast.PredicateSym) bool { return eval.HasFactsIn(s, sym) }

func hasTemporalFacts(ts factstore.TemporalFactStore, sym ast.PredicateSym) bool {
	found := false
	_ = ts.GetAllFacts(ast.NewQuery(sym), func(factstore.TemporalFact) error {
		found = true
		return eval.ErrStop
	})
	return found
}

func temporalPremise(t ast.Term) bool {
	_, temporal := analyse.PlainPremise(t)
	return temporal
}
