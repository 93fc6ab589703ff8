package factcodec

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"sort"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/protocol"
)

// This file converts the structured clause format of Spec 03 section 7
// (protocol.Clause) to Mangle clauses and back.
//
// Mapping, both directions:
//
//	{"type":"string","value":"x"}        <-> ast.String("x")
//	{"type":"number","value":42}         <-> ast.Number(42)
//	{"type":"number","value":4.5}        <-> ast.Float64(4.5)
//	{"type":"variable","name":"X"}       <-> ast.Variable{"X"}
//	{"type":"wildcard"}                  <-> ast.Variable{"_"}
//	{"type":"list","elements":[...]}     <-> ast.List constant, or fn:list(...)
//	{"type":"map","entries":{...}}       <-> ast.Map constant, or fn:map(...)
//	body literal                         <-> ast.Atom
//	body literal with "negated": true    <-> ast.NegAtom
//
// A list or map whose elements are all constants becomes a constant (what
// the engine would compute from fn:list or fn:map anyway); otherwise it
// becomes the function application fn:list(E1, ..., En) or fn:map(K1, V1,
// ..., Kn, Vn) with the keys in sorted order, as the Mangle parser builds
// for [E1, ..., En] and [K1: V1, ...]. ClauseFromAST accepts both forms.

// ErrNotRepresentable is wrapped by every [ClauseFromAST] error: the
// Mangle clause uses something the clause format of Spec 03 section 7
// cannot carry.
var ErrNotRepresentable = errors.New("not representable in the clause format")

// fnList and fnMap are the variadic function symbols the Mangle parser
// uses for list and map literals (symbols.List and symbols.Map).
var (
	fnList = ast.FunctionSym{Symbol: "fn:list", Arity: -1}
	fnMap  = ast.FunctionSym{Symbol: "fn:map", Arity: -1}
)

// ClauseToAST validates a structured clause (protocol.Clause.Validate) and
// converts it to a Mangle clause. A clause with an empty body becomes a
// fact (nil Premises). Validation errors are returned as they are: a
// *protocol.Error with code invalid_facts.
//
// The result is syntactic: Mangle's analysis still has to accept it (for
// example, a wildcard or an unbound variable in the head of a rule is
// rejected there, not here).
func ClauseToAST(c protocol.Clause) (ast.Clause, error) {
	if err := c.Validate(); err != nil {
		return ast.Clause{}, err
	}
	head, err := atomToAST(c.Head)
	if err != nil {
		return ast.Clause{}, fmt.Errorf("head: %w", err)
	}
	var premises []ast.Term
	for i, l := range c.Body {
		a, err := atomToAST(l)
		if err != nil {
			return ast.Clause{}, fmt.Errorf("body[%d]: %w", i, err)
		}
		if l.Negated {
			premises = append(premises, ast.NegAtom{Atom: a})
		} else {
			premises = append(premises, a)
		}
	}
	return ast.NewClause(head, premises), nil
}

func atomToAST(l protocol.Literal) (ast.Atom, error) {
	args, err := convertEach(l.Args, "args[%d]", termToAST)
	if err != nil {
		return ast.Atom{}, err
	}
	return ast.NewAtom(l.Predicate, args...), nil
}

// termToAST converts one validated descriptor.
func termToAST(a protocol.ArgDescriptor) (ast.BaseTerm, error) {
	switch a.Type {
	case protocol.DescriptorString:
		s, _ := a.Value.(string)
		return ast.String(s), nil
	case protocol.DescriptorNumber:
		return Constant(a.Value)
	case protocol.DescriptorVariable:
		return ast.Variable{Symbol: a.Name}, nil
	case protocol.DescriptorWildcard:
		return ast.Variable{Symbol: "_"}, nil
	case protocol.DescriptorList:
		terms, err := convertEach(a.Elements, "elements[%d]", termToAST)
		if err != nil {
			return nil, err
		}
		if consts, ok := allConstants(terms); ok {
			return ast.List(consts), nil
		}
		return ast.ApplyFn{Function: fnList, Args: terms}, nil
	case protocol.DescriptorMap:
		keys := make([]string, 0, len(a.Entries))
		for k := range a.Entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		vals := make([]ast.BaseTerm, len(keys))
		for i, k := range keys {
			t, err := termToAST(a.Entries[k])
			if err != nil {
				return nil, fmt.Errorf("entries[%q]: %w", k, err)
			}
			vals[i] = t
		}
		if consts, ok := allConstants(vals); ok {
			m := make(map[*ast.Constant]*ast.Constant, len(keys))
			for i, k := range keys {
				key := ast.String(k)
				m[&key] = &consts[i]
			}
			return *ast.Map(m), nil
		}
		args := make([]ast.BaseTerm, 0, 2*len(keys))
		for i, k := range keys {
			args = append(args, ast.String(k), vals[i])
		}
		return ast.ApplyFn{Function: fnMap, Args: args}, nil
	}
	// Unreachable after Validate.
	return nil, fmt.Errorf("unknown argument descriptor type %q", a.Type)
}

// convertEach converts every element of in; an error names the element
// by where, a format taking its index.
func convertEach[In, Out any](in []In, where string, convert func(In) (Out, error)) ([]Out, error) {
	out := make([]Out, len(in))
	for i, x := range in {
		y, err := convert(x)
		if err != nil {
			return nil, fmt.Errorf(where+": %w", i, err)
		}
		out[i] = y
	}
	return out, nil
}

func allConstants(terms []ast.BaseTerm) ([]ast.Constant, bool) {
	consts := make([]ast.Constant, len(terms))
	for i, t := range terms {
		c, ok := t.(ast.Constant)
		if !ok {
			return nil, false
		}
		consts[i] = c
	}
	return consts, true
}

// ClauseFromAST converts a Mangle clause to the structured clause format.
// The body may hold atoms and negated atoms of user predicates; their
// arguments may be String, Number and Float64 constants, variables, the
// wildcard _, List constants and Map constants with String keys, and
// fn:list and fn:map applications of such terms.
//
// Everything else is reported with an error wrapping [ErrNotRepresentable]
// that names where it is and what kind it is (never the clause text):
// comparisons (=, !=, and builtin predicates such as :lt, which is what
// X < Y parses to), temporal literals and a temporal head, transforms
// (|> do, let), other function applications, and name, bytes, time,
// duration, pair and struct constants. So are names the clause format
// rejects (a package-qualified predicate, a variable with an underscore,
// invalid UTF-8): then the error also wraps the *protocol.Error of
// protocol.Clause.Validate.
func ClauseFromAST(c ast.Clause) (protocol.Clause, error) {
	if c.HeadTime != nil && !c.HeadTime.IsEternal() {
		return protocol.Clause{}, fmt.Errorf("head: a temporal annotation is %w", ErrNotRepresentable)
	}
	if c.Transform != nil {
		return protocol.Clause{}, fmt.Errorf("a transform (|> do or let) is %w", ErrNotRepresentable)
	}
	head, err := literalFromAST(c.Head)
	if err != nil {
		return protocol.Clause{}, fmt.Errorf("head: %w", err)
	}
	out := protocol.Clause{Head: head}
	for i, p := range c.Premises {
		var l protocol.Literal
		var err error
		switch p := p.(type) {
		case ast.Atom:
			l, err = literalFromAST(p)
		case ast.NegAtom:
			l, err = literalFromAST(p.Atom)
			l.Negated = true
		case ast.Eq, ast.Ineq:
			err = fmt.Errorf("a comparison is %w", ErrNotRepresentable)
		case ast.TemporalLiteral, ast.TemporalAtom:
			err = fmt.Errorf("a temporal literal is %w", ErrNotRepresentable)
		default:
			err = fmt.Errorf("a %T premise is %w", p, ErrNotRepresentable)
		}
		if err != nil {
			return protocol.Clause{}, fmt.Errorf("premise %d: %w", i, err)
		}
		out.Body = append(out.Body, l)
	}
	if err := out.Validate(); err != nil {
		return protocol.Clause{}, fmt.Errorf("%w: %w", ErrNotRepresentable, err)
	}
	return out, nil
}

func literalFromAST(a ast.Atom) (protocol.Literal, error) {
	if a.Predicate.IsBuiltin() {
		return protocol.Literal{}, fmt.Errorf("the builtin predicate %s (a comparison or other builtin) is %w", a.Predicate.Symbol, ErrNotRepresentable)
	}
	args, err := convertEach(a.Args, "argument %d", termFromAST)
	if err != nil {
		return protocol.Literal{}, err
	}
	return protocol.Literal{Predicate: a.Predicate.Symbol, Args: args}, nil
}

func termFromAST(t ast.BaseTerm) (protocol.ArgDescriptor, error) {
	switch t := t.(type) {
	case ast.Variable:
		if t.Symbol == "_" {
			return protocol.WildcardArg(), nil
		}
		return protocol.VariableArg(t.Symbol), nil
	case ast.Constant:
		return constantFromAST(t)
	case ast.ApplyFn:
		switch t.Function.Symbol {
		case fnList.Symbol:
			elems, err := convertEach(t.Args, "list element %d", termFromAST)
			if err != nil {
				return protocol.ArgDescriptor{}, err
			}
			return protocol.ListArg(elems...), nil
		case fnMap.Symbol:
			if len(t.Args)%2 != 0 {
				return protocol.ArgDescriptor{}, fmt.Errorf("fn:map with an odd number of arguments is %w", ErrNotRepresentable)
			}
			entries := make(map[string]protocol.ArgDescriptor, len(t.Args)/2)
			for i := 0; i < len(t.Args); i += 2 {
				k, ok := t.Args[i].(ast.Constant)
				if !ok || k.Type != ast.StringType {
					return protocol.ArgDescriptor{}, fmt.Errorf("map key %d: a key that is not a string constant is %w", i/2, ErrNotRepresentable)
				}
				if err := addEntry(entries, k.Symbol, t.Args[i+1]); err != nil {
					return protocol.ArgDescriptor{}, fmt.Errorf("map key %d: %w", i/2, err)
				}
			}
			return protocol.MapArg(entries), nil
		}
		return protocol.ArgDescriptor{}, fmt.Errorf("the function application %s is %w", t.Function.Symbol, ErrNotRepresentable)
	}
	return protocol.ArgDescriptor{}, fmt.Errorf("a %T term is %w", t, ErrNotRepresentable)
}

// addEntry converts v and adds it under key k, rejecting a repeated key:
// a JSON object cannot carry it.
func addEntry(entries map[string]protocol.ArgDescriptor, k string, v ast.BaseTerm) error {
	if _, dup := entries[k]; dup {
		return fmt.Errorf("a repeated map key is %w", ErrNotRepresentable)
	}
	d, err := termFromAST(v)
	if err != nil {
		return err
	}
	entries[k] = d
	return nil
}

func constantFromAST(c ast.Constant) (protocol.ArgDescriptor, error) {
	switch c.Type {
	case ast.StringType:
		return protocol.StringArg(c.Symbol), nil
	case ast.NumberType:
		return protocol.IntArg(c.NumValue), nil
	case ast.Float64Type:
		f, err := c.Float64Value()
		if err != nil {
			return protocol.ArgDescriptor{}, err
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return protocol.ArgDescriptor{}, fmt.Errorf("a float that is not finite is %w", ErrNotRepresentable)
		}
		return protocol.FloatArg(f), nil
	case ast.ListShape:
		elems := []protocol.ArgDescriptor{}
		var inner error
		_, err := c.ListValues(func(e ast.Constant) error {
			d, err := constantFromAST(e)
			if err != nil {
				inner = fmt.Errorf("list element %d: %w", len(elems), err)
				return inner
			}
			elems = append(elems, d)
			return nil
		}, func() error { return nil })
		if err := cmp.Or(inner, err); err != nil {
			return protocol.ArgDescriptor{}, err
		}
		return protocol.ListArg(elems...), nil
	case ast.MapShape:
		entries := map[string]protocol.ArgDescriptor{}
		var inner error
		_, err := c.MapValues(func(k, v ast.Constant) error {
			if k.Type != ast.StringType {
				inner = fmt.Errorf("map key %d: a key that is not a string is %w", len(entries), ErrNotRepresentable)
				return inner
			}
			if err := addEntry(entries, k.Symbol, v); err != nil {
				inner = fmt.Errorf("map key %d: %w", len(entries), err)
				return inner
			}
			return nil
		}, func() error { return nil })
		if err := cmp.Or(inner, err); err != nil {
			return protocol.ArgDescriptor{}, err
		}
		return protocol.MapArg(entries), nil
	}
	return protocol.ArgDescriptor{}, fmt.Errorf("a %s constant is %w", constantKind(c.Type), ErrNotRepresentable)
}

// constantKind names the constant types the clause format cannot carry.
func constantKind(t ast.ConstantType) string {
	switch t {
	case ast.NameType:
		return "name"
	case ast.BytesType:
		return "bytes"
	case ast.TimeType:
		return "time"
	case ast.DurationType:
		return "duration"
	case ast.PairShape:
		return "pair"
	case ast.StructShape:
		return "struct"
	}
	return "unknown"
}
