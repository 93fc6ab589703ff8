package factcodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/protocol"
)

// wrap is the int64 wrapper of Spec 03 section 3.2.
func wrap(s string) map[string]any { return map[string]any{"_type": "int64", "value": s} }

func str(s string) *ast.Constant { c := ast.String(s); return &c }

// TestConstantValueRoundTrip converts a JSON value to a constant, checks the
// constant, converts it back and checks the JSON value; then converts that
// value again and checks it gives the same constant.
func TestConstantValueRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want ast.Constant
		// back is what Value returns; nil means "same as in".
		back any
	}{
		{name: "string", in: "hello", want: ast.String("hello")},
		{name: "empty string", in: "", want: ast.String("")},
		{name: "unicode string", in: "héllo 🚀 日本語", want: ast.String("héllo 🚀 日本語")},
		{name: "string with NUL", in: "a\x00b\x00", want: ast.String("a\x00b\x00")},
		{name: "string with quotes and newline", in: "say \"hi\"\n\tbye\\", want: ast.String("say \"hi\"\n\tbye\\")},
		{name: "string that looks like a name stays a string", in: "/fix_bug", want: ast.String("/fix_bug")},
		{name: "int zero", in: json.Number("0"), want: ast.Number(0)},
		{name: "int positive", in: json.Number("42"), want: ast.Number(42)},
		{name: "int negative", in: json.Number("-7"), want: ast.Number(-7)},
		{name: "int 2^53-1 stays a number", in: json.Number("9007199254740991"), want: ast.Number(1<<53 - 1)},
		{name: "int -(2^53-1) stays a number", in: json.Number("-9007199254740991"), want: ast.Number(-(1<<53 - 1))},
		{name: "int 2^53 comes back wrapped", in: json.Number("9007199254740992"), want: ast.Number(1 << 53), back: wrap("9007199254740992")},
		{name: "int -2^53 comes back wrapped", in: json.Number("-9007199254740992"), want: ast.Number(-(1 << 53)), back: wrap("-9007199254740992")},
		{name: "int64 max", in: json.Number("9223372036854775807"), want: ast.Number(math.MaxInt64), back: wrap("9223372036854775807")},
		{name: "int64 min", in: json.Number("-9223372036854775808"), want: ast.Number(math.MinInt64), back: wrap("-9223372036854775808")},
		{name: "int64 wrapper", in: wrap("9007199254740993"), want: ast.Number(9007199254740993)},
		{name: "int64 wrapper max", in: wrap("9223372036854775807"), want: ast.Number(math.MaxInt64)},
		{name: "int64 wrapper min", in: wrap("-9223372036854775808"), want: ast.Number(math.MinInt64)},
		{name: "int64 wrapper of a small value is normalized", in: wrap("5"), want: ast.Number(5), back: json.Number("5")},
		{name: "Go int", in: 7, want: ast.Number(7), back: json.Number("7")},
		{name: "Go int64", in: int64(-7), want: ast.Number(-7), back: json.Number("-7")},
		{name: "float", in: json.Number("3.14"), want: ast.Float64(3.14), back: 3.14},
		{name: "negative float", in: json.Number("-0.5"), want: ast.Float64(-0.5), back: -0.5},
		{name: "float with exponent", in: json.Number("1e3"), want: ast.Float64(1000), back: 1000.0},
		{name: "float with negative exponent", in: json.Number("2.5E-3"), want: ast.Float64(0.0025), back: 0.0025},
		{name: "integral float stays a float", in: json.Number("2.0"), want: ast.Float64(2), back: 2.0},
		{name: "float max", in: json.Number("1.7976931348623157e308"), want: ast.Float64(math.MaxFloat64), back: math.MaxFloat64},
		{name: "Go float64", in: 0.25, want: ast.Float64(0.25)},
		{name: "true", in: true, want: ast.TrueConstant},
		{name: "false", in: false, want: ast.FalseConstant},
		{name: "empty list", in: []any{}, want: ast.ListNil},
		{
			name: "list of every scalar",
			in:   []any{"a", json.Number("1"), json.Number("1.5"), true, wrap("9007199254740993")},
			want: ast.List([]ast.Constant{ast.String("a"), ast.Number(1), ast.Float64(1.5), ast.TrueConstant, ast.Number(9007199254740993)}),
			back: []any{"a", json.Number("1"), 1.5, true, wrap("9007199254740993")},
		},
		{
			name: "nested list",
			in:   []any{[]any{"x"}, []any{}},
			want: ast.List([]ast.Constant{ast.List([]ast.Constant{ast.String("x")}), ast.ListNil}),
		},
		{name: "empty map", in: map[string]any{}, want: ast.MapNil},
		{
			name: "map",
			in:   map[string]any{"k": "v", "n": json.Number("2")},
			want: *ast.Map(map[*ast.Constant]*ast.Constant{str("k"): str("v"), str("n"): func() *ast.Constant { c := ast.Number(2); return &c }()}),
		},
		{
			name: "nested map with lists and wrappers",
			in: map[string]any{
				"outer": map[string]any{"inner": []any{json.Number("1"), map[string]any{"deep": "yes"}}},
				"big":   wrap("-9007199254740993"),
				"ok":    false,
			},
			want: *ast.Map(map[*ast.Constant]*ast.Constant{
				str("outer"): ast.Map(map[*ast.Constant]*ast.Constant{
					str("inner"): func() *ast.Constant {
						c := ast.List([]ast.Constant{ast.Number(1), *ast.Map(map[*ast.Constant]*ast.Constant{str("deep"): str("yes")})})
						return &c
					}(),
				}),
				str("big"): func() *ast.Constant { c := ast.Number(-9007199254740993); return &c }(),
				str("ok"):  &ast.FalseConstant,
			}),
		},
		{
			name: "map with an unrelated _type key is a plain map",
			in:   map[string]any{"_type": "point", "x": json.Number("1")},
			want: *ast.Map(map[*ast.Constant]*ast.Constant{str("_type"): str("point"), str("x"): func() *ast.Constant { c := ast.Number(1); return &c }()}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Constant(tt.in)
			if err != nil {
				t.Fatalf("Constant(%#v): %v", tt.in, err)
			}
			if !got.Equals(tt.want) || got.Type != tt.want.Type {
				t.Fatalf("Constant(%#v) = %v (type %v), want %v (type %v)", tt.in, got, got.Type, tt.want, tt.want.Type)
			}
			back, err := Value(got)
			if err != nil {
				t.Fatalf("Value(%v): %v", got, err)
			}
			want := tt.back
			if want == nil {
				want = tt.in
			}
			if !reflect.DeepEqual(floatsAsFloat64(back), floatsAsFloat64(want)) {
				t.Fatalf("Value(%v) = %#v, want %#v", got, back, want)
			}
			again, err := Constant(back)
			if err != nil {
				t.Fatalf("Constant(Value(...)) = %v", err)
			}
			if !again.Equals(got) || again.Type != got.Type {
				t.Fatalf("second round trip = %v, want %v", again, got)
			}
		})
	}
}

// TestConstantErrors covers values that have no constant.
func TestConstantErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      any
		wantErr string
	}{
		{name: "null", in: nil, wantErr: "null is a wildcard"},
		{name: "int64 max + 1", in: json.Number("9223372036854775808"), wantErr: "does not fit int64"},
		{name: "int64 min - 1", in: json.Number("-9223372036854775809"), wantErr: "does not fit int64"},
		{name: "20-digit integer", in: json.Number("12345678901234567890"), wantErr: "does not fit int64"},
		{name: "float overflow", in: json.Number("1e400"), wantErr: "does not fit float64"},
		{name: "negative float overflow", in: json.Number("-1.5e309"), wantErr: "does not fit float64"},
		{name: "wrapper beyond int64", in: wrap("9223372036854775808"), wantErr: "does not fit int64"},
		{name: "wrapper without value", in: map[string]any{"_type": "int64"}, wantErr: "does not fit int64"},
		{name: "wrapper with a numeric value", in: map[string]any{"_type": "int64", "value": json.Number("5")}, wantErr: "does not fit int64"},
		{name: "wrapper with text", in: wrap("twelve"), wantErr: "twelve"},
		{name: "null inside a list", in: []any{"a", nil}, wantErr: "null"},
		{name: "null inside a map", in: map[string]any{"k": nil}, wantErr: "null"},
		{name: "bad number deep inside", in: map[string]any{"k": []any{json.Number("1e999")}}, wantErr: "does not fit float64"},
		{name: "unsupported Go type", in: struct{}{}, wantErr: "unsupported value type"},
		{name: "unsupported unsigned type", in: uint64(1), wantErr: "unsupported value type"},
		{
			name: "wrapper with a fraction", in: wrap("1.5"), wantErr: "int64",
		},
		{
			name: "wrapper with an exponent", in: wrap("1e3"), wantErr: "int64",
		},
		{
			name: "Go NaN", in: math.NaN(), wantErr: "float64",
		},
		{
			name: "Go +Inf", in: math.Inf(1), wantErr: "float64",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Constant(tt.in)
			if err == nil {
				t.Fatalf("Constant(%#v) = %v, want an error containing %q", tt.in, got, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Constant(%#v) error = %q, want it to contain %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

// TestInt checks where Int switches from a JSON number to the int64 wrapper:
// exactly beyond ±(2^53-1), Spec 03 section 3.2.
func TestInt(t *testing.T) {
	tests := []struct {
		name string
		in   int64
		want any
	}{
		{name: "zero", in: 0, want: json.Number("0")},
		{name: "small negative", in: -42, want: json.Number("-42")},
		{name: "2^53-1", in: 1<<53 - 1, want: json.Number("9007199254740991")},
		{name: "-(2^53-1)", in: -(1<<53 - 1), want: json.Number("-9007199254740991")},
		{name: "2^53", in: 1 << 53, want: wrap("9007199254740992")},
		{name: "-2^53", in: -(1 << 53), want: wrap("-9007199254740992")},
		{name: "2^53+1", in: 1<<53 + 1, want: wrap("9007199254740993")},
		{name: "int64 max", in: math.MaxInt64, want: wrap("9223372036854775807")},
		{name: "int64 min", in: math.MinInt64, want: wrap("-9223372036854775808")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Int(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Int(%d) = %#v, want %#v", tt.in, got, tt.want)
			}
			// Whatever form Int picks, Constant reads it back exactly.
			c, err := Constant(got)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := c.NumberValue(); c.Type != ast.NumberType || n != tt.in {
				t.Fatalf("Constant(Int(%d)) = %v", tt.in, c)
			}
		})
	}
}

// TestValueOfEngineConstants covers constants only rules can make: names
// other than /true and /false render as their text.
func TestValueOfEngineConstants(t *testing.T) {
	name, err := ast.Name("/some/name")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   ast.Constant
		want any
	}{
		{name: "name", in: name, want: "/some/name"},
		{name: "true", in: ast.TrueConstant, want: true},
		{name: "false", in: ast.FalseConstant, want: false},
		{name: "list holding a name", in: ast.List([]ast.Constant{name}), want: []any{"/some/name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Value(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Value(%v) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

// TestAtomFactRoundTrip converts wire facts to atoms and back.
func TestAtomFactRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		fact protocol.Fact
		want ast.Atom
		back protocol.Fact // zero Pred: same as fact
	}{
		{
			name: "zero arity",
			fact: protocol.NewFact("ready"),
			want: ast.NewAtom("ready"),
		},
		{
			name: "console event",
			fact: protocol.NewFact("console_event", "s1", "error", "TypeError: x 🚀", json.Number("1771510200000")),
			want: ast.NewAtom("console_event", ast.String("s1"), ast.String("error"), ast.String("TypeError: x 🚀"), ast.Number(1771510200000)),
		},
		{
			name: "every type",
			fact: protocol.NewFact("mixed", "a\x00b", json.Number("-3"), json.Number("0.5"), true, false,
				[]any{"x", json.Number("2")}, map[string]any{"k": []any{}}, wrap("9007199254740993")),
			want: ast.NewAtom("mixed", ast.String("a\x00b"), ast.Number(-3), ast.Float64(0.5), ast.TrueConstant, ast.FalseConstant,
				ast.List([]ast.Constant{ast.String("x"), ast.Number(2)}),
				*ast.Map(map[*ast.Constant]*ast.Constant{str("k"): &ast.ListNil}),
				ast.Number(9007199254740993)),
			back: protocol.NewFact("mixed", "a\x00b", json.Number("-3"), 0.5, true, false,
				[]any{"x", json.Number("2")}, map[string]any{"k": []any{}}, wrap("9007199254740993")),
		},
		{
			name: "wrapped small int is normalized",
			fact: protocol.NewFact("n", wrap("12")),
			want: ast.NewAtom("n", ast.Number(12)),
			back: protocol.NewFact("n", json.Number("12")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Atom(tt.fact)
			if err != nil {
				t.Fatalf("Atom: %v", err)
			}
			if !a.Equals(tt.want) {
				t.Fatalf("Atom = %v, want %v", a, tt.want)
			}
			f, err := Fact(a)
			if err != nil {
				t.Fatalf("Fact: %v", err)
			}
			want := tt.back
			if want.Pred == "" {
				want = tt.fact
			}
			if f.Pred != want.Pred || !reflect.DeepEqual(floatsAsFloat64(f.Args), floatsAsFloat64(want.Args)) {
				t.Fatalf("Fact = %#v, want %#v", f, want)
			}
		})
	}
}

func TestAtomErrors(t *testing.T) {
	tests := []struct {
		name    string
		fact    protocol.Fact
		wantErr string
	}{
		{name: "null wildcard", fact: protocol.NewFact("p", "a", nil), wantErr: "fact p argument 1: null is a wildcard, not a value"},
		{name: "int beyond int64", fact: protocol.NewFact("p", json.Number("99999999999999999999")), wantErr: "fact p argument 0: integer 99999999999999999999 does not fit int64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Atom(tt.fact)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Atom error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestFactNotGround(t *testing.T) {
	_, err := Fact(ast.NewAtom("p", ast.String("a"), ast.Variable{Symbol: "X"}))
	if err == nil || !strings.Contains(err.Error(), "not ground") {
		t.Fatalf("Fact of a non-ground atom: err = %v, want \"not ground\"", err)
	}
}

// TestWireRoundTrip goes through JSON text as a client would see it: decode
// a fact, convert it to an atom and back, encode it, decode it again and
// compare the atoms. The type of every argument must survive.
func TestWireRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		json string
	}{
		{name: "strings", json: `{"pred":"p","args":["a","h\u00e9llo \ud83d\ude80","nul\u0000"]}`},
		{name: "integers", json: `{"pred":"p","args":[0,-1,9007199254740991,{"_type":"int64","value":"9223372036854775807"},{"_type":"int64","value":"-9223372036854775808"}]}`},
		{name: "floats", json: `{"pred":"p","args":[3.14,-0.5,1e-7]}`},
		{name: "booleans and containers", json: `{"pred":"p","args":[true,false,[],{},[1,[2]],{"a":{"b":[true]}}]}`},
		{
			name: "integral float", json: `{"pred":"p","args":[2.0,1e3]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f protocol.Fact
			if err := json.Unmarshal([]byte(tt.json), &f); err != nil {
				t.Fatal(err)
			}
			a1, err := Atom(f)
			if err != nil {
				t.Fatal(err)
			}
			f2, err := Fact(a1)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(f2); err != nil {
				t.Fatal(err)
			}
			var f3 protocol.Fact
			if err := json.Unmarshal(buf.Bytes(), &f3); err != nil {
				t.Fatal(err)
			}
			a2, err := Atom(f3)
			if err != nil {
				t.Fatal(err)
			}
			if !sameTypes(a1, a2) || !a1.Equals(a2) {
				t.Fatalf("wire round trip changed the atom:\nsent %s -> %v\ngot  %s -> %v", tt.json, a1, bytes.TrimSpace(buf.Bytes()), a2)
			}
		})
	}
}

// sameTypes compares argument types, which Equals does not see for
// constants that hash alike.
func sameTypes(a, b ast.Atom) bool {
	if len(a.Args) != len(b.Args) {
		return false
	}
	for i := range a.Args {
		ca, _ := a.Args[i].(ast.Constant)
		cb, _ := b.Args[i].(ast.Constant)
		if ca.Type != cb.Type {
			return false
		}
	}
	return true
}

func ExampleConstant() {
	c, _ := Constant(map[string]any{"_type": "int64", "value": "9007199254740993"})
	n, _ := c.NumberValue()
	fmt.Println(n)
	v, _ := Value(c)
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
	// Output:
	// 9007199254740993
	// {"_type":"int64","value":"9007199254740993"}
}

// TestInterval converts temporal annotations (Spec 03 section 4) as
// protocol.ValidateFacts leaves them.
func TestInterval(t *testing.T) {
	evalTime := time.Date(2026, 2, 19, 14, 30, 5, 0, time.UTC)
	at := time.Date(2026, 2, 19, 14, 30, 0, 0, time.UTC)
	ts := ast.NewTimestampBound
	tests := []struct {
		name      string
		t         string // JSON of "t"; "" is no annotation
		want      ast.Interval
		wantTimed bool
		wantErr   string
	}{
		{name: "no annotation is eternal", t: ""},
		{name: "point in RFC 3339", t: `{"at":"2026-02-19T14:30:00Z"}`, want: ast.NewInterval(ts(at), ts(at)), wantTimed: true},
		{name: "point with an offset", t: `{"at":"2026-02-19T15:30:00+01:00"}`, want: ast.NewInterval(ts(at), ts(at)), wantTimed: true},
		{name: "point in epoch ms", t: `{"at":1771511400000}`, want: ast.NewInterval(ts(at), ts(at)), wantTimed: true},
		{name: "point now", t: `{"at":"now"}`, want: ast.NewInterval(ts(evalTime), ts(evalTime)), wantTimed: true},
		{
			name: "interval", t: `{"start":"2026-02-19T14:30:00Z","end":"2026-02-19T14:30:05Z"}`,
			want: ast.NewInterval(ts(at), ts(evalTime)), wantTimed: true,
		},
		{name: "open end", t: `{"start":"2026-02-19T14:30:00Z","end":"_"}`, want: ast.NewInterval(ts(at), ast.PositiveInfinity()), wantTimed: true},
		{name: "unbounded start", t: `{"start":"_","end":"now"}`, want: ast.NewInterval(ast.NegativeInfinity(), ts(evalTime)), wantTimed: true},
		{name: "both unbounded", t: `{"start":"_","end":"_"}`, want: ast.NewInterval(ast.NegativeInfinity(), ast.PositiveInfinity()), wantTimed: true},
		{name: "bad time", t: `{"at":"yesterday"}`, wantErr: "RFC 3339"},
		{name: "bad end", t: `{"start":"now","end":"later"}`, wantErr: "RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var temporal *protocol.Temporal
			if tt.t != "" {
				temporal = &protocol.Temporal{}
				if err := json.Unmarshal([]byte(tt.t), temporal); err != nil {
					t.Fatal(err)
				}
			}
			iv, timed, err := Interval(temporal, evalTime)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if timed != tt.wantTimed || (timed && !iv.Equals(tt.want)) {
				t.Fatalf("Interval = %v, %v; want %v, %v", iv, timed, tt.want, tt.wantTimed)
			}
		})
	}
}

// floatsAsFloat64 compares floats by value: Value returns them as
// json.Number with a decimal point, so they keep their type on the wire.
func floatsAsFloat64(v any) any {
	switch x := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			f, _ := x.Float64()
			return f
		}
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = floatsAsFloat64(x[i])
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = floatsAsFloat64(e)
		}
		return out
	}
	return v
}
