package analyse

import (
	"fmt"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/kernel/load"
)

// Lint reports rule patterns that load but that Mangle v0.5.0 evaluates
// in a surprising way (MANGLE_NOTES section 5). They are warnings: the
// rules may be right, but the author should look.
//
//   - p(...)@[_, _] matches only eternal facts, not "any time"; write
//     @[From, To] for any time.
//   - decl_arg's type "number" is the old spelling of "integer".
//
// Patterns that make evaluations fail are errors of [Load] instead (see
// checkFailingPatterns).
func Lint(domain ...load.Layer) ([]*load.LoadError, error) {
	files, err := load.Read(domain)
	if err != nil {
		return nil, err
	}
	out := spellingWarnings(files)
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			for _, prem := range c.Premises {
				p, ok := prem.(ast.TemporalLiteral)
				if !ok || p.Operator != nil || p.Interval == nil || !isWildcard(p.Interval.Start) || !isWildcard(p.Interval.End) {
					continue
				}
				if a, ok := p.Literal.(ast.Atom); ok {
					out = append(out, &load.LoadError{File: f.Name, Line: f.ClauseLine(i), Message: "warning: " +
						fmt.Sprintf("%s(...)@[_, _] matches only eternal facts in Mangle v0.5.0; use @[From, To] to read a fact whenever it held", a.Predicate.Symbol)})
				}
			}
		}
	}
	return out, nil
}

// comparisons are the builtins that compare int64 values only: any other
// value fails the whole evaluation at run time (MANGLE_NOTES section 2).
var comparisons = map[string]bool{":lt": true, ":le": true, ":gt": true, ":ge": true}

// growing are the functions that build a value larger than (or different
// from) their arguments, so a recursive rule applying them derives new
// facts on every round.
var growing = map[string]bool{"fn:plus": true, "fn:minus": true, "fn:mult": true, "fn:float:plus": true, "fn:float:mult": true,
	"fn:list": true, "fn:list:append": true, "fn:list:cons": true, "fn:cons": true, "fn:append": true, "fn:pair": true, "fn:tuple": true,
	"fn:map": true, "fn:struct": true, "fn:string:concat": true, "fn:time:add": true, "fn:time:sub": true,
	"fn:duration:add": true, "fn:duration:mult": true}

// checkFailingPatterns rejects rules that load but make evaluations fail
// whenever they are reached, naming file and line:
//
//   - a comparison (<, <=, >, >=) with a string or float constant, or with
//     a variable bound to an argument the facts profile declares "string":
//     Mangle v0.5.0 compares int64 only and fails the whole evaluation;
//   - a recursive rule that builds a new value with an arithmetic or
//     constructor function (fn:plus, fn:list:cons, ...) from the recursive
//     premise, with no comparison in its body to bound it: it derives new
//     facts on every round and never reaches a fixpoint, so every request
//     that reaches it ends in derivation_limit_exceeded.
//
// Patterns that need the data to show (a comparison of a derived string,
// a bound that never holds) are left to the smoke run of the domain's
// sample requests on reload.
func checkFailingPatterns(files []*load.File, facts map[string][]load.Located) error {
	stringArgs := map[string]map[int]bool{} // profile predicate -> argument positions typed string
	for _, l := range facts["decl_arg"] {
		pred, err1 := l.Str(0)
		idx, err2 := l.Num(1)
		typ, err3 := l.Str(3)
		if firstErr(err1, err2, err3) == nil && typ == "string" {
			if stringArgs[pred] == nil {
				stringArgs[pred] = map[int]bool{}
			}
			stringArgs[pred][int(idx)] = true
		}
	}
	graph := map[string]map[string]bool{}
	for _, f := range files {
		for _, c := range f.Unit.Clauses {
			head := c.Head.Predicate.Symbol
			if graph[head] == nil {
				graph[head] = map[string]bool{}
			}
			for _, prem := range c.Premises {
				if a, ok := positiveAtom(prem); ok {
					graph[head][a.Predicate.Symbol] = true
				}
			}
		}
	}
	comp := sccs(graph)
	var errs load.LoadErrors
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			at := func(format string, args ...any) {
				errs = append(errs, &load.LoadError{File: f.Name, Line: f.ClauseLine(i), Message: fmt.Sprintf(format, args...)})
			}
			if msg := badComparison(c, stringArgs); msg != "" {
				at("%s", msg)
				continue
			}
			if msg := unboundedRecursion(c, graph, comp); msg != "" {
				at("%s", msg)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// positiveAtom returns the atom of a positive premise, temporal or not.
func positiveAtom(prem ast.Term) (ast.Atom, bool) {
	lit, _ := PlainPremise(prem)
	a, ok := lit.(ast.Atom)
	return a, ok
}

// badComparison describes a comparison of c that cannot succeed, or "".
func badComparison(c ast.Clause, stringArgs map[string]map[int]bool) string {
	stringVars := map[ast.Variable]string{} // variable -> predicate that makes it a string
	for _, prem := range c.Premises {
		a, ok := positiveAtom(prem)
		if !ok {
			continue
		}
		for i, arg := range a.Args {
			if v, ok := arg.(ast.Variable); ok && v.Symbol != "_" && stringArgs[a.Predicate.Symbol][i] {
				stringVars[v] = a.Predicate.Symbol
			}
		}
	}
	for _, prem := range c.Premises {
		a, ok := prem.(ast.Atom)
		if !ok || !comparisons[a.Predicate.Symbol] {
			continue
		}
		for _, arg := range a.Args {
			switch x := arg.(type) {
			case ast.Constant:
				if x.Type == ast.StringType || x.Type == ast.Float64Type {
					return fmt.Sprintf("comparison with %s fails every evaluation that reaches it: Mangle v0.5.0 compares int64 values only", x)
				}
			case ast.Variable:
				if pred, ok := stringVars[x]; ok {
					return fmt.Sprintf("comparison of %s, a string argument of %s (facts profile), fails every evaluation that reaches it: Mangle v0.5.0 compares int64 values only", x.Symbol, pred)
				}
			}
		}
	}
	return ""
}

// unboundedRecursion describes a recursive rule of c that derives a new
// value on every round with nothing to bound it, or "".
func unboundedRecursion(c ast.Clause, graph map[string]map[string]bool, comp map[string]int) string {
	head := c.Head.Predicate.Symbol
	recursiveVars := map[ast.Variable]bool{}
	through := ""
	for _, prem := range c.Premises {
		a, ok := positiveAtom(prem)
		if !ok {
			continue
		}
		sym := a.Predicate.Symbol
		if sym == head || (comp[head] != 0 && comp[head] == comp[sym] && graph[sym] != nil) {
			if through == "" {
				through = sym
			}
			ast.AddVars(a, recursiveVars)
		}
	}
	if through == "" {
		return ""
	}
	for _, prem := range c.Premises {
		if a, ok := prem.(ast.Atom); ok && (comparisons[a.Predicate.Symbol] || isComparison(a.Predicate.Symbol)) {
			return "" // a bound the author wrote; the smoke run checks that it holds
		}
	}
	// Variables computed with a growing function from the recursive premise.
	grown := map[ast.Variable]string{}
	grows := func(t ast.BaseTerm) string {
		fn, ok := t.(ast.ApplyFn)
		if !ok {
			if v, ok := t.(ast.Variable); ok {
				return grown[v]
			}
			return ""
		}
		return growingFn(fn, recursiveVars, grown)
	}
	for _, prem := range c.Premises {
		if eq, ok := prem.(ast.Eq); ok {
			if v, ok := eq.Left.(ast.Variable); ok {
				if name := grows(eq.Right); name != "" {
					grown[v] = name
				}
			}
			if v, ok := eq.Right.(ast.Variable); ok {
				if name := grows(eq.Left); name != "" {
					grown[v] = name
				}
			}
		}
	}
	for t := c.Transform; t != nil; t = t.Next {
		if !t.IsLetTransform() {
			continue
		}
		for _, st := range t.Statements {
			if st.Var != nil {
				if name := growingFn(st.Fn, recursiveVars, grown); name != "" {
					grown[*st.Var] = name
				}
			}
		}
	}
	for _, arg := range c.Head.Args {
		if name := grows(arg); name != "" {
			return fmt.Sprintf("unbounded recursion: %s depends on %s and builds a new value with %s on every round, with no comparison to bound it; evaluation never finishes (every request reaching it ends in derivation_limit_exceeded). Bound it, e.g. N < 100", head, through, name)
		}
	}
	return ""
}

// isComparison reports the typed comparisons (:time:lt, :duration:ge, ...).
func isComparison(sym string) bool {
	for op := range comparisons {
		if len(sym) > len(op) && sym[len(sym)-len(op):] == op {
			return true
		}
	}
	return false
}

// growingFn returns the name of a growing function in fn whose arguments
// reach a variable of vars (directly or through grown), or "".
func growingFn(fn ast.ApplyFn, vars map[ast.Variable]bool, grown map[ast.Variable]string) string {
	uses := false
	inner := ""
	for _, arg := range fn.Args {
		switch x := arg.(type) {
		case ast.Variable:
			if vars[x] || grown[x] != "" {
				uses = true
			}
		case ast.ApplyFn:
			if name := growingFn(x, vars, grown); name != "" {
				inner = name
			}
		}
	}
	if inner != "" {
		return inner
	}
	if uses && growing[fn.Function.Symbol] {
		return fn.Function.Symbol
	}
	return ""
}

// isWildcard reports a bound written "_": the parser makes it an infinite
// bound (or, in some positions, the variable "_").
func isWildcard(b ast.TemporalBound) bool {
	switch b.Type {
	case ast.NegativeInfinityBound, ast.PositiveInfinityBound:
		return true
	case ast.VariableBound:
		return b.Variable.Symbol == "_"
	}
	return false
}
