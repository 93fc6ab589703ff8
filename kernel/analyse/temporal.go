package analyse

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"codeberg.org/TauCeti/mangle-go/analysis"
	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/kernel/load"
)

// PlainPremise returns the atom or negated atom inside a temporal premise,
// and whether the premise was temporal.
func PlainPremise(p ast.Term) (ast.Term, bool) {
	switch x := p.(type) {
	case ast.TemporalLiteral:
		return x.Literal, true
	case ast.TemporalAtom:
		return x.Atom, true
	}
	return p, false
}

// stratifyTemporalAware stratifies a shadow of the rules in which temporal
// literals are plain atoms. Mangle v0.5.0's stratification skips temporal
// literals (MANGLE_NOTES section 5), which orders strata wrongly; the
// engine only needs the strata, so the original rules are evaluated with
// the shadow's strata.
func stratifyTemporalAware(info *analysis.ProgramInfo) ([]analysis.Nodeset, map[ast.PredicateSym]int, error) {
	shadow := make([]ast.Clause, len(info.Rules))
	for i, r := range info.Rules {
		c := r
		c.Premises = make([]ast.Term, len(r.Premises))
		for j, p := range r.Premises {
			c.Premises[j], _ = PlainPremise(p)
		}
		shadow[i] = c
	}
	return analysis.Stratify(analysis.Program{EdbPredicates: info.EdbPredicates, IdbPredicates: info.IdbPredicates, Rules: shadow})
}

// checkTemporalRecursion rejects rules the v0.5.0 engine evaluates wrongly:
// a rule with a temporal head in a recursive cycle (the engine drops the
// head time and writes stray eternal facts) and a cycle through a temporal
// literal (mutual temporal recursion). It names file, line and predicate.
func checkTemporalRecursion(files []*load.File) error {
	graph := map[string]map[string]bool{}
	type ruleRef struct {
		file     *load.File
		index    int
		head     string
		temporal []string // predicates reached through temporal premises
		timed    bool     // the head has a time annotation
	}
	var rules []ruleRef
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			if len(c.Premises) == 0 {
				continue
			}
			r := ruleRef{file: f, index: i, head: c.Head.Predicate.Symbol, timed: c.HeadTime != nil && !c.HeadTime.IsEternal()}
			if graph[r.head] == nil {
				graph[r.head] = map[string]bool{}
			}
			for _, p := range c.Premises {
				lit, temporal := PlainPremise(p)
				var sym string
				switch a := lit.(type) {
				case ast.Atom:
					sym = a.Predicate.Symbol
				case ast.NegAtom:
					sym = a.Atom.Predicate.Symbol
				default:
					continue
				}
				graph[r.head][sym] = true
				if temporal {
					r.temporal = append(r.temporal, sym)
				}
			}
			rules = append(rules, r)
		}
	}
	comp := sccs(graph)
	recursive := func(a, b string) bool { // b reaches a, and a reaches b
		return comp[a] != 0 && comp[a] == comp[b]
	}
	var errs load.LoadErrors
	for _, r := range rules {
		if r.timed && (graph[r.head][r.head] || cycleSize(comp, r.head) > 1) {
			errs = append(errs, &load.LoadError{File: r.file.Name, Line: r.file.ClauseLine(r.index),
				Message: fmt.Sprintf("invalid_temporal_pattern: %s has a temporal head and is recursive; Mangle v0.5.0 drops the head time in recursion and derives wrong facts", r.head)})
			continue
		}
		for _, t := range r.temporal {
			if t == r.head || recursive(r.head, t) {
				errs = append(errs, &load.LoadError{File: r.file.Name, Line: r.file.ClauseLine(r.index),
					Message: fmt.Sprintf("invalid_temporal_pattern: %s depends on itself through the temporal literal on %s (temporal recursion may not terminate and v0.5.0 evaluates it wrongly)", r.head, t)})
				break
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// sccs numbers the strongly connected components of a graph (Tarjan);
// nodes in the same component get the same non-zero number.
func sccs(graph map[string]map[string]bool) map[string]int {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	comp := map[string]int{}
	next, ncomp := 1, 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range slices.Sorted(maps.Keys(graph[v])) {
			if index[w] == 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			ncomp++
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = ncomp
				if w == v {
					break
				}
			}
		}
	}
	nodes := make([]string, 0, len(graph))
	for v := range graph {
		nodes = append(nodes, v)
	}
	sort.Strings(nodes)
	for _, v := range nodes {
		if index[v] == 0 {
			visit(v)
		}
	}
	return comp
}

func cycleSize(comp map[string]int, v string) int {
	n := 0
	for _, c := range comp {
		if c == comp[v] {
			n++
		}
	}
	return n
}

// checkAggregations rejects what Mangle v0.5.0 evaluates silently wrong:
// two aggregation rules with the same head predicate where one has more
// than one premise share an internal relation, so each aggregates over the
// union of both bodies (MANGLE_NOTES section 2). Split such rules into
// separate head predicates.
func checkAggregations(files []*load.File) error {
	type agg struct {
		file  *load.File
		index int
		multi bool
	}
	byHead := map[string][]agg{}
	var order []string
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			if c.Transform == nil || c.Transform.IsLetTransform() {
				continue
			}
			h := c.Head.Predicate.Symbol
			if _, ok := byHead[h]; !ok {
				order = append(order, h)
			}
			byHead[h] = append(byHead[h], agg{f, i, len(c.Premises) > 1})
		}
	}
	var errs load.LoadErrors
	for _, h := range order {
		rules := byHead[h]
		if len(rules) < 2 {
			continue
		}
		multi := false
		for _, r := range rules {
			multi = multi || r.multi
		}
		if multi {
			r := rules[1]
			errs = append(errs, &load.LoadError{File: r.file.Name, Line: r.file.ClauseLine(r.index),
				Message: fmt.Sprintf("%s has %d aggregation (do) rules and one has several premises; Mangle v0.5.0 would aggregate over both bodies together. Give each aggregation its own head predicate", h, len(rules))})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
