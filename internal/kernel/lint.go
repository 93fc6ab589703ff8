package kernel

import (
	"fmt"

	"codeberg.org/TauCeti/mangle-go/ast"
)

// Lint reports rule patterns that load but that Mangle v0.5.0 evaluates
// in a surprising way (MANGLE_NOTES sections 2 and 5). They are warnings:
// the rules may be right, but the author should look.
//
//   - p(...)@[_, _] matches only eternal facts, not "any time"; write
//     @[From, To] for any time.
//   - comparing with a string or float constant (<, >, <=, >=) fails the
//     whole evaluation at run time: comparisons are int64-only.
func Lint(domain ...Layer) ([]*LoadError, error) {
	files, err := readLayers(domain)
	if err != nil {
		return nil, err
	}
	var out []*LoadError
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			at := func(format string, args ...any) {
				out = append(out, &LoadError{File: f.name, Line: f.clauseLine(i), Message: "warning: " + fmt.Sprintf(format, args...)})
			}
			for _, prem := range c.Premises {
				switch p := prem.(type) {
				case ast.TemporalLiteral:
					if p.Operator == nil && p.Interval != nil && isWildcard(p.Interval.Start) && isWildcard(p.Interval.End) {
						if a, ok := p.Literal.(ast.Atom); ok {
							at("%s(...)@[_, _] matches only eternal facts in Mangle v0.5.0; use @[From, To] to read a fact whenever it held", a.Predicate.Symbol)
						}
					}
				case ast.Atom:
					switch p.Predicate.Symbol {
					case ":lt", ":le", ":gt", ":ge":
						for _, arg := range p.Args {
							if k, ok := arg.(ast.Constant); ok && (k.Type == ast.StringType || k.Type == ast.Float64Type) {
								at("comparison with %s: Mangle v0.5.0 compares int64 only and fails the whole evaluation otherwise", k)
							}
						}
					}
				}
			}
		}
	}
	return out, nil
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

// SourceClause is a clause of a rule file with its location.
type SourceClause struct {
	File   string
	Line   int
	Clause ast.Clause
}

// SourceClauses parses the layers and returns their clauses in file
// order, for tools that show rule structure (manglecp check --show-rules).
func SourceClauses(domain ...Layer) ([]SourceClause, error) {
	files, err := readLayers(domain)
	if err != nil {
		return nil, err
	}
	var out []SourceClause
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			out = append(out, SourceClause{File: f.name, Line: f.clauseLine(i), Clause: c})
		}
	}
	return out, nil
}
