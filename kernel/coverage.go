package kernel

import (
	"fmt"
	"sort"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/builtin"
	"codeberg.org/TauCeti/mangle-go/factstore"
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

// ruleNames names the rules "pred" or "pred#n" when a predicate has several.
func (p *Analysis) ruleNames() []string {
	count := map[string]int{}
	for _, r := range p.info.Rules {
		count[r.Head.Predicate.Symbol]++
	}
	seen := map[string]int{}
	names := make([]string, len(p.info.Rules))
	for i, r := range p.info.Rules {
		sym := r.Head.Predicate.Symbol
		seen[sym]++
		names[i] = sym
		if count[sym] > 1 {
			names[i] = fmt.Sprintf("%s#%d", sym, seen[sym])
		}
	}
	return names
}

// coverageOf classifies every rule against the final store of run: fired
// (its body has a solution: fired, by firedRules), inapplicable (it
// requires another intent), partially alive (some body predicates have
// facts) or dead (none has).
func coverageOf(p *Evaluator, run *evalRun) *Coverage {
	s, m, intent, fired := run.store, run.matcher, run.req.Intent, run.firing
	names := p.ruleNames()
	cov := &Coverage{TotalRules: len(p.info.Rules)}
	for i, r := range p.info.Rules {
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
			lit, _ := plainPremise(prem)
			a, ok := lit.(ast.Atom)
			if !ok {
				continue
			}
			if _, isBuiltin := builtin.Predicates[a.Predicate]; isBuiltin {
				continue
			}
			if hasFacts(s, a.Predicate) || (temporalPremise(prem) && hasTemporalFacts(m.ts, a.Predicate)) {
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
		cov.Details = append(cov.Details, RuleStatus{Rule: names[i], Status: status, MissingPredicates: dedup(missing)})
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

func hasFacts(s *evalStore, sym ast.PredicateSym) bool { return hasFactsIn(s, sym) }

type stopErr struct{}

func (stopErr) Error() string { return "stop" }

var errStop = stopErr{}

func hasTemporalFacts(ts factstore.TemporalFactStore, sym ast.PredicateSym) bool {
	found := false
	_ = ts.GetAllFacts(ast.NewQuery(sym), func(factstore.TemporalFact) error {
		found = true
		return errStop
	})
	return found
}

func temporalPremise(t ast.Term) bool {
	_, temporal := plainPremise(t)
	return temporal
}
