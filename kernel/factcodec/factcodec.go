// Package factcodec converts MangleCP wire facts to Mangle atoms and Mangle
// constants back to JSON values, losslessly for every type the wire allows.
//
// Mapping (Spec 03 section 3, MANGLE_NOTES section 6): string -> String
// (never Name, so client text can never forge a /name constant), integer
// that fits int64 (including the int64 wrapper) -> Number, other numbers ->
// Float64, boolean -> /true or /false, array -> List, object -> Map with
// String keys. Facts must be validated by protocol.ValidateFacts first:
// null wildcards are not ground and cannot become atoms.
package factcodec

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/protocol"
)

// Atom converts a validated, positional fact to a ground atom.
func Atom(f protocol.Fact) (ast.Atom, error) {
	return AtomWith(f, make([]ast.BaseTerm, len(f.Args)))
}

// AtomWith is [Atom] with the atom's arguments written to args, which
// must have one element per argument of f: a caller converting many facts
// gives each a part of one allocation.
func AtomWith(f protocol.Fact, args []ast.BaseTerm) (ast.Atom, error) {
	return AtomRecent(f, args, nil)
}

// Recent remembers the constant of the last string or number converted
// at each of the first argument positions (AtomRecent), so that facts of
// a list that repeat a value at a position (a session id, a method, a
// status) share one boxed constant instead of each boxing its own. Its
// zero value is ready; it serves one goroutine.
type Recent struct {
	text [recentArity]string
	kind [recentArity]uint8 // 0 nothing yet, 1 string, 2 number
	term [recentArity]ast.BaseTerm
}

// recentArity is how many argument positions Recent remembers.
const recentArity = 8

// AtomRecent is [AtomWith] sharing the constants of recent (nil: none)
// for the arguments equal to the last one converted at their position.
func AtomRecent(f protocol.Fact, args []ast.BaseTerm, recent *Recent) (ast.Atom, error) {
	for i, a := range f.Args {
		var text string
		var kind uint8
		if recent != nil && i < recentArity {
			switch x := a.(type) {
			case string:
				text, kind = x, 1
			case json.Number:
				text, kind = string(x), 2
			}
			if kind != 0 && recent.kind[i] == kind && recent.text[i] == text {
				args[i] = recent.term[i]
				continue
			}
		}
		c, err := Constant(a)
		if err != nil {
			return ast.Atom{}, fmt.Errorf("fact %s argument %d: %w", f.Pred, i, err)
		}
		args[i] = c
		if kind != 0 {
			recent.text[i], recent.kind[i], recent.term[i] = text, kind, args[i]
		}
	}
	return ast.NewAtom(f.Pred, args...), nil
}

// Constant converts one JSON value to a Mangle constant.
func Constant(v any) (ast.Constant, error) {
	switch x := v.(type) {
	case string:
		return ast.String(x), nil
	case bool:
		if x {
			return ast.TrueConstant, nil
		}
		return ast.FalseConstant, nil
	case json.Number:
		return number(string(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ast.Constant{}, fmt.Errorf("float64 %v cannot be carried by JSON", x)
		}
		return ast.Float64(x), nil
	case int:
		return ast.Number(int64(x)), nil
	case int64:
		return ast.Number(x), nil
	case []any:
		cs := make([]ast.Constant, len(x))
		for i, e := range x {
			c, err := Constant(e)
			if err != nil {
				return ast.Constant{}, err
			}
			cs[i] = c
		}
		return ast.List(cs), nil
	case map[string]any:
		if t, ok := x["_type"]; ok && t == "int64" {
			s, _ := x["value"].(string)
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return ast.Constant{}, fmt.Errorf("int64 wrapper value %q does not fit int64 (the value must be a decimal integer string)", s)
			}
			return ast.Number(n), nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		m := make(map[*ast.Constant]*ast.Constant, len(x))
		for _, k := range keys {
			val, err := Constant(x[k])
			if err != nil {
				return ast.Constant{}, err
			}
			key := ast.String(k)
			m[&key] = &val
		}
		return *ast.Map(m), nil
	case nil:
		return ast.Constant{}, fmt.Errorf("null is a wildcard, not a value")
	}
	return ast.Constant{}, fmt.Errorf("unsupported value type %T", v)
}

func number(s string) (ast.Constant, error) {
	if !strings.ContainsAny(s, ".eE") {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return ast.Constant{}, fmt.Errorf("integer %s does not fit int64", s)
		}
		return ast.Number(n), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return ast.Constant{}, fmt.Errorf("number %s does not fit float64", s)
	}
	return ast.Float64(f), nil
}

// Value converts a Mangle constant to a JSON value: String -> string,
// Number -> int64 (json.Number wrapped as int64 object beyond 2^53),
// Float64 -> float64, /true and /false -> bool, other names -> their
// "/name" text, List -> []any, Map -> map[string]any.
func Value(c ast.Constant) (any, error) {
	switch c.Type {
	case ast.StringType:
		return c.StringValue()
	case ast.NumberType:
		n, err := c.NumberValue()
		if err != nil {
			return nil, err
		}
		return Int(n), nil
	case ast.Float64Type:
		f, err := c.Float64Value()
		if err != nil {
			return nil, err
		}
		// Keep the float type on the wire: 2.0, not 2 (which reads back as an integer).
		text := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(text, ".eE") {
			text += ".0"
		}
		return json.Number(text), nil
	case ast.NameType:
		if c.Equals(ast.TrueConstant) {
			return true, nil
		}
		if c.Equals(ast.FalseConstant) {
			return false, nil
		}
		return c.NameValue()
	case ast.ListShape:
		out := []any{}
		var inner error
		_, err := c.ListValues(func(e ast.Constant) error {
			v, err := Value(e)
			if err != nil {
				inner = err
				return err
			}
			out = append(out, v)
			return nil
		}, func() error { return nil })
		if inner != nil {
			return nil, inner
		}
		return out, err
	case ast.MapShape:
		out := map[string]any{}
		var inner error
		_, err := c.MapValues(func(k, v ast.Constant) error {
			key, err := Value(k)
			if err != nil {
				inner = err
				return err
			}
			val, err := Value(v)
			if err != nil {
				inner = err
				return err
			}
			out[fmt.Sprint(key)] = val
			return nil
		}, func() error { return nil })
		if inner != nil {
			return nil, inner
		}
		return out, err
	}
	return c.String(), nil
}

// Text is a term as text: a string or name constant's value, any other
// constant or term as Mangle writes it.
func Text(t ast.BaseTerm) string {
	if c, ok := t.(ast.Constant); ok {
		switch c.Type {
		case ast.StringType:
			s, _ := c.StringValue()
			return s
		case ast.NameType:
			s, _ := c.NameValue()
			return s
		}
		return c.String()
	}
	return fmt.Sprint(t)
}

// TermValue is a term as a JSON value: a constant as [Value] converts it,
// anything [Value] cannot convert as [Text].
func TermValue(t ast.BaseTerm) any {
	if c, ok := t.(ast.Constant); ok {
		if v, err := Value(c); err == nil {
			return v
		}
	}
	return Text(t)
}

// maxSafeInt is 2^53 - 1, the largest integer JSON carries exactly.
const maxSafeInt = 1<<53 - 1

// Int encodes an integer for the wire: a json.Number within ±(2^53-1),
// otherwise the int64 wrapper of Spec 03 section 3.2.
func Int(n int64) any {
	if n > maxSafeInt || n < -maxSafeInt {
		return map[string]any{"_type": "int64", "value": strconv.FormatInt(n, 10)}
	}
	return json.Number(strconv.FormatInt(n, 10))
}

// Fact converts a ground atom back to a positional wire fact.
func Fact(a ast.Atom) (protocol.Fact, error) {
	args := make([]any, len(a.Args))
	for i, t := range a.Args {
		c, ok := t.(ast.Constant)
		if !ok {
			return protocol.Fact{}, fmt.Errorf("atom %s is not ground", a.Predicate.Symbol)
		}
		v, err := Value(c)
		if err != nil {
			return protocol.Fact{}, err
		}
		args[i] = v
	}
	return protocol.NewFact(a.Predicate.Symbol, args...), nil
}

// Interval converts a validated temporal annotation to a Mangle interval.
// "now" is evalTime; "_" is an unbounded end. A nil annotation is eternal
// (ok is false: callers store such facts with AddEternal).
func Interval(t *protocol.Temporal, evalTime time.Time) (iv ast.Interval, ok bool, err error) {
	if t == nil {
		return ast.Interval{}, false, nil
	}
	if t.IsPoint() {
		at, err := bound(t.At, evalTime, true)
		if err != nil {
			return ast.Interval{}, false, err
		}
		return ast.NewInterval(at, at), true, nil
	}
	start, err := bound(t.Start, evalTime, true)
	if err != nil {
		return ast.Interval{}, false, err
	}
	end, err := bound(t.End, evalTime, false)
	if err != nil {
		return ast.Interval{}, false, err
	}
	return ast.NewInterval(start, end), true, nil
}

func bound(v any, evalTime time.Time, start bool) (ast.TemporalBound, error) {
	if s, ok := v.(string); ok {
		switch s {
		case "now":
			return ast.NewTimestampBound(evalTime), nil
		case "_":
			if start {
				return ast.NegativeInfinity(), nil
			}
			return ast.PositiveInfinity(), nil
		}
	}
	tt, err := protocol.ParseTime(v)
	if err != nil {
		return ast.TemporalBound{}, err
	}
	return ast.NewTimestampBound(tt), nil
}
