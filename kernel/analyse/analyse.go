package analyse

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"codeberg.org/TauCeti/mangle-go/analysis"
	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/parse"

	"github.com/manglecp/manglecp/internal/plural"
	"github.com/manglecp/manglecp/kernel/load"
)

// analyse merges the files, checks ownership and runs the Mangle analysis
// and a temporal-aware stratification.
func analyse(files []*load.File, extra map[ast.PredicateSym]ast.Decl) (*analysis.ProgramInfo, []analysis.Nodeset, map[ast.PredicateSym]int, error) {
	units := make([]parse.SourceUnit, len(files))
	for i, f := range files {
		units[i] = f.Unit
	}
	info, err := analysis.Analyze(units, extra)
	if err != nil {
		if le := explainUnbound(files, err.Error()); le != nil {
			return nil, nil, nil, load.LoadErrors{le}
		}
		if le := explainArity(files, err.Error(), extra); le != nil {
			return nil, nil, nil, load.LoadErrors{le}
		}
		le := load.LocateInError(files, "rule analysis failed: "+err.Error())
		le.Message = explainAnalysis(le.Message, files, extra)
		return nil, nil, nil, load.LoadErrors{le}
	}
	strata, predToStratum, err := stratifyTemporalAware(info)
	if err != nil {
		return nil, nil, nil, load.LoadErrors{unstratifiable(files)}
	}
	return info, strata, predToStratum, nil
}

// RequestPredicates are asserted by the kernel with server trust; no rule
// or fact in any layer may define them.
var RequestPredicates = map[string]bool{"intent": true, "intent_param": true, "tool_rank": true, "eval_time": true,
	"caller": true, "caller_permission": true}

// checkOwnership enforces the trust layers: every head predicate is defined
// in exactly one layer, and no layer defines a request predicate or a
// reserved _manglecp_ predicate.
func checkOwnership(files []*load.File) error {
	type def struct {
		layer, file string
		line        int
	}
	owner := map[string]def{}
	var errs load.LoadErrors
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			name := c.Head.Predicate.Symbol
			here := def{f.Layer, f.Name, f.ClauseLine(i)}
			if RequestPredicates[name] || strings.HasPrefix(name, "_manglecp_") {
				errs = append(errs, &load.LoadError{File: f.Name, Line: here.line,
					Message: fmt.Sprintf("%s is asserted by the kernel for each request; rules and facts may not define it", name)})
				continue
			}
			if prev, ok := owner[name]; ok && prev.layer != f.Layer {
				owning, intruder := prev, here
				if kernelLayer(f.Layer) && !kernelLayer(prev.layer) {
					owning, intruder = here, prev // blame the domain file, not the kernel's
				}
				errs = append(errs, &load.LoadError{File: intruder.file, Line: intruder.line,
					Message: fmt.Sprintf("%s is defined in the %s layer (%s:%d); the %s layer may not add to it", name, owning.layer, owning.file, owning.line, intruder.layer)})
				continue
			}
			if _, ok := owner[name]; !ok {
				owner[name] = here
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func kernelLayer(name string) bool { return name == "schema" || name == "pipeline" }

// unstratifiable names a clause on a cycle through negation or aggregation,
// which Mangle reports without a location.
func unstratifiable(files []*load.File) *load.LoadError {
	graph := map[string]map[string]bool{}
	type edge struct {
		file       *load.File
		index      int
		head, body string
	}
	var negative []edge
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			head := c.Head.Predicate.Symbol
			if graph[head] == nil {
				graph[head] = map[string]bool{}
			}
			aggregates := c.Transform != nil && !c.Transform.IsLetTransform()
			for _, prem := range c.Premises {
				lit, _ := PlainPremise(prem)
				switch a := lit.(type) {
				case ast.Atom:
					graph[head][a.Predicate.Symbol] = true
					if aggregates {
						negative = append(negative, edge{f, i, head, a.Predicate.Symbol})
					}
				case ast.NegAtom:
					graph[head][a.Atom.Predicate.Symbol] = true
					negative = append(negative, edge{f, i, head, a.Atom.Predicate.Symbol})
				}
			}
		}
	}
	comp := sccs(graph)
	for _, e := range negative {
		if e.head == e.body || (comp[e.head] != 0 && comp[e.head] == comp[e.body]) {
			return &load.LoadError{File: e.file.Name, Line: e.file.ClauseLine(e.index),
				Message: fmt.Sprintf("rules cannot be stratified: %s depends on itself through a negation or an aggregation of %s", e.head, e.body)}
		}
	}
	return &load.LoadError{Message: "rules cannot be stratified (recursion through negation or aggregation)"}
}

var reNotFound = regexp.MustCompile(`could not find predicate ([A-Za-z_][A-Za-z0-9_:]*)\(([^)]*)\)`)

// explainAnalysis rewords the analyser's "could not find predicate p(A0)"
// as what the author should do, with the closest known predicate.
func explainAnalysis(msg string, files []*load.File, extra map[ast.PredicateSym]ast.Decl) string {
	m := reNotFound.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	known := map[string]bool{}
	for _, f := range files {
		for _, c := range f.Unit.Clauses {
			known[c.Head.Predicate.Symbol] = true
		}
		for _, d := range f.Unit.Decls {
			known[d.DeclaredAtom.Predicate.Symbol] = true
		}
	}
	for sym := range extra {
		known[sym.Symbol] = true
	}
	arity := 0
	if strings.TrimSpace(m[2]) != "" {
		arity = strings.Count(m[2], ",") + 1
	}
	hint := "; if clients supply it, declare it with decl_predicate and decl_arg"
	if known[m[1]] {
		hint = fmt.Sprintf("; %s is defined, but with another number of arguments", m[1])
	} else if best := closest(m[1], slices.Sorted(maps.Keys(known))); best != "" {
		hint = fmt.Sprintf("; did you mean %s?", best)
	}
	return fmt.Sprintf("this rule reads %s/%d, which no rule, fact or declaration defines (could not find predicate %s)%s", m[1], arity, m[1], hint)
}

// The analyser's words for a builtin premise (a comparison, say) that reads
// a variable nothing binds.
var (
	reUnboundGoal = regexp.MustCompile(`for goal "(:[a-z_:]+)\((.*)\)" expected ([A-Za-z_][A-Za-z0-9_]*) \(arg \d+\) to be constant or bound variable`)
	reNoValueYet  = regexp.MustCompile(`variable ([A-Za-z_][A-Za-z0-9_]*) in (:[a-z_:]+)\((.*)\) will not have a value yet`)
)

// comparisonOps are the comparison builtins as an author writes them.
var comparisonOps = map[string]string{":lt": "<", ":le": "<=", ":gt": ">", ":ge": ">=", ":eq": "=", ":neq": "!="}

// explainUnbound turns the analyser's "for goal ":gt(L,Min)" expected Min
// (arg 1) to be constant or bound variable", which names neither file nor
// line, into the rule that reads the variable, in the author's words. It
// returns nil when msg is not about that.
func explainUnbound(files []*load.File, msg string) *load.LoadError {
	var builtin, variable string
	if m := reUnboundGoal.FindStringSubmatch(msg); m != nil {
		builtin, variable = m[1], m[3]
	} else if m := reNoValueYet.FindStringSubmatch(msg); m != nil {
		builtin, variable = m[2], m[1]
	} else {
		return nil
	}
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			for _, prem := range c.Premises {
				a, ok := prem.(ast.Atom)
				if !ok || a.Predicate.Symbol != builtin || !readsVariable(a, variable) {
					continue
				}
				what := fmt.Sprintf("the builtin %s", a)
				if op, ok := comparisonOps[builtin]; ok && len(a.Args) == 2 {
					what = fmt.Sprintf("the comparison %s %s %s", a.Args[0], op, a.Args[1])
				}
				return &load.LoadError{File: f.Name, Line: f.ClauseLine(i), Message: fmt.Sprintf(
					"%s reads %s, which no premise of this rule gives a value: a variable in a comparison or builtin must also appear in an atom of the rule's body (e.g. limit(%s)), or be a constant",
					what, variable, variable)}
			}
		}
	}
	return nil
}

func readsVariable(a ast.Atom, name string) bool {
	for _, t := range a.Args {
		if v, ok := t.(ast.Variable); ok && v.Symbol == name {
			return true
		}
	}
	return false
}

// explainArity turns the analyser's "could not find predicate p(A0)" for a
// predicate that exists with another number of arguments into the rule that
// reads it, with both counts and where the predicate is defined. It returns
// nil when msg is not about that.
func explainArity(files []*load.File, msg string, extra map[ast.PredicateSym]ast.Decl) *load.LoadError {
	m := reNotFound.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	name := m[1]
	read := 0
	if strings.TrimSpace(m[2]) != "" {
		read = strings.Count(m[2], ",") + 1
	}
	// Where the predicate is defined, with its number of arguments: a rule
	// or fact of the layers, else the facts profile (decl_predicate).
	var defined *load.LoadError
	arity := -1
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			if c.Head.Predicate.Symbol == name && defined == nil {
				arity = c.Head.Predicate.Arity
				defined = &load.LoadError{File: f.Name, Line: f.ClauseLine(i)}
			}
		}
	}
	if defined == nil {
		for sym := range extra {
			if sym.Symbol == name {
				arity = sym.Arity
			}
		}
		for _, f := range files {
			for i, c := range f.Unit.Clauses {
				if c.Head.Predicate.Symbol != "decl_predicate" || len(c.Head.Args) == 0 || defined != nil {
					continue
				}
				if s, ok := constString(c.Head.Args[0]); ok && s == name {
					defined = &load.LoadError{File: f.Name, Line: f.ClauseLine(i)}
				}
			}
		}
	}
	if arity < 0 || arity == read {
		return nil
	}
	// The rule that reads it with the wrong count.
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			for _, prem := range c.Premises {
				lit, _ := PlainPremise(prem)
				var a ast.Atom
				switch l := lit.(type) {
				case ast.Atom:
					a = l
				case ast.NegAtom:
					a = l.Atom
				default:
					continue
				}
				if a.Predicate.Symbol != name || len(a.Args) != read {
					continue
				}
				where := ""
				if defined != nil && defined.Line > 0 {
					where = fmt.Sprintf(" (%s:%d)", defined.File, defined.Line)
				}
				return &load.LoadError{File: f.Name, Line: f.ClauseLine(i), Message: fmt.Sprintf(
					"this rule reads %s with %s, but %s has %s%s: write %s(%s)",
					name, plural.S(read, "argument"), name, plural.S(arity, "argument"), where, name, placeholders(arity))}
			}
		}
	}
	return nil
}

// placeholders returns "_, _" for n arguments.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("_, ", n), ", ")
}
