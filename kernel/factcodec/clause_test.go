package factcodec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/parse"
	"github.com/manglecp/manglecp/kernel/factcodec"
	"github.com/manglecp/manglecp/protocol"
)

// The -update flag rewrites testdata/clause_roundtrip.golden:
//
//	go test ./kernel/factcodec -run TestClauseRoundTrip -update
//
// It is registered only if no other test file of this package registered
// it already (init functions run after every package-level variable).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// parseClause parses one Mangle clause with the Mangle parser.
func parseClause(t *testing.T, src string) ast.Clause {
	t.Helper()
	c, err := parse.Clause(src)
	if err != nil {
		t.Fatalf("parse.Clause(%q): %v", src, err)
	}
	return c
}

// clauseEqual reports whether two clauses are structurally equal (ast has
// Equals for terms, not for clauses).
func clauseEqual(a, b ast.Clause) bool {
	if !a.Head.Equals(b.Head) || len(a.Premises) != len(b.Premises) {
		return false
	}
	if (a.HeadTime == nil) != (b.HeadTime == nil) || a.HeadTime != nil && !a.HeadTime.Equals(*b.HeadTime) {
		return false
	}
	if (a.Transform == nil) != (b.Transform == nil) {
		return false
	}
	for i := range a.Premises {
		if !a.Premises[i].Equals(b.Premises[i]) {
			return false
		}
	}
	return true
}

// readTxtar splits a txtar-style file into its named sections.
func readTxtar(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") {
			name = strings.TrimSuffix(strings.TrimPrefix(trimmed, "-- "), " --")
			sections[name] = ""
			continue
		}
		if name != "" {
			sections[name] += line
		}
	}
	return sections
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestClauseSpecExample is the golden round trip of the example of Spec
// 03 section 7.1 (testdata/spec03_section7.txtar).
func TestClauseSpecExample(t *testing.T) {
	files := readTxtar(t, filepath.Join("testdata", "spec03_section7.txtar"))
	wire, spec, str := files["clause.json"], strings.TrimSpace(files["spec.mg"]), strings.TrimSpace(files["string.mg"])
	if wire == "" || spec == "" || str == "" {
		t.Fatalf("testdata/spec03_section7.txtar lacks a section: %v", files)
	}

	pc, perr := protocol.DecodeClause([]byte(wire))
	if perr != nil {
		t.Fatalf("DecodeClause: %v", perr)
	}
	compiled, err := factcodec.ClauseToAST(pc)
	if err != nil {
		t.Fatalf("ClauseToAST: %v", err)
	}
	if got := compiled.String(); got != str {
		t.Errorf("String() = %s\nwant       %s", got, str)
	}
	parsed := parseClause(t, spec)
	if !clauseEqual(compiled, parsed) {
		t.Errorf("compiled clause %s is not equal to the parse of the spec's text %s", compiled, parsed)
	}

	back, err := factcodec.ClauseFromAST(parsed)
	if err != nil {
		t.Fatalf("ClauseFromAST: %v", err)
	}
	if !reflect.DeepEqual(back, pc) {
		t.Errorf("ClauseFromAST(parse(spec.mg)) = %#v\nwant %#v", back, pc)
	}
	out, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), compact(t, wire); got != want {
		t.Errorf("JSON = %s\nwant   %s", got, want)
	}
}

// TestClauseRoundTrip converts Mangle text -> ast -> protocol.Clause ->
// JSON -> protocol.Clause -> ast and checks the result; then converts it
// once more and checks the clause format is a fixed point. The JSON of
// every case is pinned in testdata/clause_roundtrip.golden.
func TestClauseRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		src  string
		// want is String() of the result. "" means the result equals
		// the parsed clause (ast Equals) and prints the same.
		want string
	}{
		{name: "spec example", src: `safe_action("read", Target, _) :- file_exists(Target).`},
		{name: "fact", src: `p(1, "a").`},
		{name: "arity zero", src: `p() :- q().`},
		{name: "string escapes and unicode", src: `p("a\"b\n\\", "héllo 🚀", "") :- q(_).`},
		{name: "integers", src: `p(0, -7, 9007199254740993, 9223372036854775807, -9223372036854775808) :- q(X).`},
		{name: "floats", src: `p(1.5, -0.25, 2.0, 0.000001) :- q(X).`},
		{name: "variables with digits", src: `p(X1, Y2b) :- q(X1), r(Y2b).`},
		{name: "wildcards in the body", src: `p(X) :- q(X, _, _).`},
		{name: "negation", src: `p(X) :- q(X), !r(X, _), !s().`},
		{name: "many premises", src: `path(X, Z) :- edge(X, Y), path(Y, Z), !blocked(Y).`},
		{name: "list with a variable", src: `p([X, 1, "a"]) :- q(X).`},
		{name: "fn:list with a variable", src: `p(fn:list(X, 1)) :- q(X).`},
		{name: "nested list with a variable", src: `p([[X], [1]]) :- q(X).`, want: `p(fn:list(fn:list(X),[1])) :- q(X).`},
		{name: "constant list becomes a constant", src: `p([1, "a", [2]]) :- q(X).`, want: `p([1, "a", [2]]) :- q(X).`},
		{name: "empty list becomes a constant", src: `p([]) :- q(X).`, want: `p([]) :- q(X).`},
		{name: "constant list in the body", src: `p(X) :- q(X, [1, 2]).`, want: `p(X) :- q(X,[1, 2]).`},
		{name: "map with a variable, keys sorted", src: `p(["k": X, "a": 1]) :- q(X).`, want: `p(fn:map("a",1,"k",X)) :- q(X).`},
		{name: "constant map becomes a constant", src: `p(["b": 2, "a": [1]]) :- q(X).`, want: `p(["a" : [1], "b" : 2]) :- q(X).`},
		{name: "empty map becomes a constant", src: `p(fn:map()) :- q(X).`, want: `p(fn:map()) :- q(X).`},
	}

	var golden strings.Builder
	golden.WriteString("# Generated by: go test ./kernel/factcodec -run TestClauseRoundTrip -update\n")
	golden.WriteString("# Each case: the Mangle source, its structured clause (Spec 03 section 7) and\n")
	golden.WriteString("# what ast.Clause.String() prints after converting the clause back.\n")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parsed := parseClause(t, tt.src)
			pc, err := factcodec.ClauseFromAST(parsed)
			if err != nil {
				t.Fatalf("ClauseFromAST: %v", err)
			}
			wire, err := json.Marshal(pc)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			decoded, perr := protocol.DecodeClause(wire)
			if perr != nil {
				t.Fatalf("DecodeClause(%s): %v", wire, perr)
			}
			if !reflect.DeepEqual(decoded, pc) {
				t.Errorf("JSON round trip changed the clause:\n%#v\nwant\n%#v", decoded, pc)
			}
			back, err := factcodec.ClauseToAST(decoded)
			if err != nil {
				t.Fatalf("ClauseToAST: %v", err)
			}
			want := tt.want
			if want == "" {
				want = parsed.String()
				if !clauseEqual(back, parsed) {
					t.Errorf("round trip = %s, want a clause equal to %s", back, parsed)
				}
			}
			if got := back.String(); got != want {
				t.Errorf("String() = %s\nwant       %s", got, want)
			}
			again, err := factcodec.ClauseFromAST(back)
			if err != nil {
				t.Fatalf("ClauseFromAST(round trip): %v", err)
			}
			if !reflect.DeepEqual(again, pc) {
				t.Errorf("the clause format is not a fixed point:\n%#v\nwant\n%#v", again, pc)
			}
			fmt.Fprintf(&golden, "-- %s --\nmangle: %s\njson: %s\nback: %s\n", tt.name, tt.src, wire, back)
		})
	}

	path := filepath.Join("testdata", "clause_roundtrip.golden")
	if updating() {
		if err := os.WriteFile(path, []byte(golden.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./kernel/factcodec -run TestClauseRoundTrip -update to create it)", err)
	}
	if got := golden.String(); got != string(want) {
		t.Errorf("%s is stale (run go test ./kernel/factcodec -run TestClauseRoundTrip -update and review the diff)\ngot:\n%s", path, got)
	}
}

// TestClauseToASTTerms checks the Mangle term each descriptor becomes.
func TestClauseToASTTerms(t *testing.T) {
	x := ast.Variable{Symbol: "X"}
	str := func(s string) *ast.Constant { c := ast.String(s); return &c }
	num := func(n int64) *ast.Constant { c := ast.Number(n); return &c }
	tests := []struct {
		name string
		arg  protocol.ArgDescriptor
		want ast.BaseTerm
	}{
		{name: "string", arg: protocol.StringArg("read"), want: ast.String("read")},
		{name: "string that looks like a name stays a string", arg: protocol.StringArg("/read"), want: ast.String("/read")},
		{name: "integer", arg: protocol.IntArg(42), want: ast.Number(42)},
		{name: "Go int", arg: protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: 7}, want: ast.Number(7)},
		{name: "Go int64", arg: protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: int64(math.MinInt64)}, want: ast.Number(math.MinInt64)},
		{name: "float", arg: protocol.FloatArg(2), want: ast.Float64(2)},
		{name: "float with exponent", arg: protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: json.Number("1e3")}, want: ast.Float64(1000)},
		{name: "Go float64", arg: protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: 0.5}, want: ast.Float64(0.5)},
		{name: "variable", arg: protocol.VariableArg("X"), want: x},
		{name: "wildcard", arg: protocol.WildcardArg(), want: ast.Variable{Symbol: "_"}},
		{name: "empty list", arg: protocol.ListArg(), want: ast.ListNil},
		{name: "nil list", arg: protocol.ArgDescriptor{Type: protocol.DescriptorList}, want: ast.ListNil},
		{name: "constant list", arg: protocol.ListArg(protocol.IntArg(1), protocol.StringArg("a")), want: ast.List([]ast.Constant{ast.Number(1), ast.String("a")})},
		{
			name: "list with a variable",
			arg:  protocol.ListArg(protocol.IntArg(1), protocol.VariableArg("X")),
			want: ast.ApplyFn{Function: ast.FunctionSym{Symbol: "fn:list", Arity: -1}, Args: []ast.BaseTerm{ast.Number(1), x}},
		},
		{
			name: "list with a wildcard",
			arg:  protocol.ListArg(protocol.WildcardArg()),
			want: ast.ApplyFn{Function: ast.FunctionSym{Symbol: "fn:list", Arity: -1}, Args: []ast.BaseTerm{ast.Variable{Symbol: "_"}}},
		},
		{name: "empty map", arg: protocol.MapArg(nil), want: ast.MapNil},
		{
			name: "constant map",
			arg:  protocol.MapArg(map[string]protocol.ArgDescriptor{"k": protocol.StringArg("v"), "n": protocol.IntArg(2)}),
			want: *ast.Map(map[*ast.Constant]*ast.Constant{str("k"): str("v"), str("n"): num(2)}),
		},
		{
			name: "map with a variable, keys sorted",
			arg:  protocol.MapArg(map[string]protocol.ArgDescriptor{"z": protocol.VariableArg("X"), "a": protocol.IntArg(1)}),
			want: ast.ApplyFn{Function: ast.FunctionSym{Symbol: "fn:map", Arity: -1}, Args: []ast.BaseTerm{ast.String("a"), ast.Number(1), ast.String("z"), x}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := factcodec.ClauseToAST(protocol.Clause{Head: protocol.Literal{Predicate: "p", Args: []protocol.ArgDescriptor{tt.arg}}})
			if err != nil {
				t.Fatalf("ClauseToAST: %v", err)
			}
			got := c.Head.Args[0]
			if !got.Equals(tt.want) || reflect.TypeOf(got) != reflect.TypeOf(tt.want) {
				t.Errorf("term = %T %v, want %T %v", got, got, tt.want, tt.want)
			}
			if fn, ok := got.(ast.ApplyFn); ok && fn.Function.Arity != -1 {
				t.Errorf("function arity = %d, want -1 as the parser builds", fn.Function.Arity)
			}
		})
	}
}

func TestClauseToASTShape(t *testing.T) {
	c, err := factcodec.ClauseToAST(protocol.Clause{
		Head: protocol.Literal{Predicate: "p", Args: []protocol.ArgDescriptor{protocol.VariableArg("X")}},
		Body: []protocol.Literal{
			{Predicate: "q", Args: []protocol.ArgDescriptor{protocol.VariableArg("X")}},
			{Predicate: "r", Args: []protocol.ArgDescriptor{protocol.VariableArg("X")}, Negated: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Premises[0].(ast.Atom); !ok {
		t.Errorf("premise 0 is %T, want ast.Atom", c.Premises[0])
	}
	if _, ok := c.Premises[1].(ast.NegAtom); !ok {
		t.Errorf("premise 1 is %T, want ast.NegAtom", c.Premises[1])
	}
	if c.Head.Predicate != (ast.PredicateSym{Symbol: "p", Arity: 1}) || c.HeadTime != nil || c.Transform != nil {
		t.Errorf("head = %+v, head time %v, transform %v", c.Head.Predicate, c.HeadTime, c.Transform)
	}

	fact, err := factcodec.ClauseToAST(protocol.Clause{Head: protocol.Literal{Predicate: "p"}, Body: []protocol.Literal{}})
	if err != nil {
		t.Fatal(err)
	}
	if fact.Premises != nil || fact.String() != "p()." {
		t.Errorf("empty body = %#v (%s), want a fact with nil premises", fact.Premises, fact)
	}
}

func TestClauseToASTErrors(t *testing.T) {
	tests := []struct {
		name      string
		clause    protocol.Clause
		wantField string
	}{
		{name: "zero clause", clause: protocol.Clause{}, wantField: "head.predicate"},
		{name: "negated head", clause: protocol.Clause{Head: protocol.Literal{Predicate: "p", Negated: true}}, wantField: "head.negated"},
		{name: "lowercase variable", clause: protocol.Clause{Head: protocol.Literal{Predicate: "p", Args: []protocol.ArgDescriptor{protocol.VariableArg("x")}}}, wantField: "head.args[0].name"},
		{name: "unknown type", clause: protocol.Clause{Head: protocol.Literal{Predicate: "p", Args: []protocol.ArgDescriptor{{Type: "boolean", Value: true}}}}, wantField: "head.args[0].type"},
		{name: "NaN", clause: protocol.Clause{Head: protocol.Literal{Predicate: "p", Args: []protocol.ArgDescriptor{protocol.FloatArg(math.NaN())}}}, wantField: "head.args[0].value"},
		{
			name: "bad body predicate",
			clause: protocol.Clause{
				Head: protocol.Literal{Predicate: "p"},
				Body: []protocol.Literal{{Predicate: "q"}, {Predicate: "fn:list"}},
			},
			wantField: "body[1].predicate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := factcodec.ClauseToAST(tt.clause)
			pe, ok := protocol.AsError(err)
			if !ok || pe.Code != protocol.CodeInvalidFacts || pe.Details == nil || pe.Details.Field != tt.wantField {
				t.Fatalf("ClauseToAST error = %v, want invalid_facts at %s", err, tt.wantField)
			}
		})
	}
}

func TestClauseFromASTErrors(t *testing.T) {
	atom := func(args ...ast.BaseTerm) ast.Clause {
		return ast.NewClause(ast.NewAtom("p", args...), []ast.Term{ast.NewAtom("q")})
	}
	pair := ast.Pair(func() *ast.Constant { c := ast.Number(1); return &c }(), func() *ast.Constant { c := ast.Number(2); return &c }())
	numKeyMap := *ast.Map(map[*ast.Constant]*ast.Constant{func() *ast.Constant { c := ast.Number(1); return &c }(): func() *ast.Constant { c := ast.Number(2); return &c }()})
	name, _ := ast.Name("/foo")
	eternal := ast.EternalInterval()
	tests := []struct {
		name string
		src  string     // parsed with the Mangle parser, or
		ast  ast.Clause // built directly when src is ""
		// wantMsg is a substring of the error.
		wantMsg string
		// wantCode is set when protocol validation rejected the clause.
		wantCode protocol.Code
	}{
		{name: "comparison less", src: `p(X) :- q(X), X < 3.`, wantMsg: "premise 1: the builtin predicate :lt (a comparison or other builtin) is not representable"},
		{name: "comparison greater or equal", src: `p(X) :- q(X), X >= 3.`, wantMsg: "premise 1: the builtin predicate :ge"},
		{name: "equality", src: `p(X) :- q(X), X = 1.`, wantMsg: "premise 1: a comparison is not representable"},
		{name: "inequality", src: `p(X) :- q(X), X != 1.`, wantMsg: "premise 1: a comparison is not representable"},
		{name: "builtin atom", src: `p(X) :- q(M), :match_entry(M, "k", X).`, wantMsg: "premise 1: the builtin predicate :match_entry"},
		{name: "negated builtin", ast: ast.NewClause(ast.NewAtom("p"), []ast.Term{ast.NewNegAtom(":lt", ast.Number(1), ast.Number(2))}), wantMsg: "premise 0: the builtin predicate :lt"},
		{name: "temporal annotation in the body", src: `p(X) :- q(X) @[2024-01-01].`, wantMsg: "premise 0: a temporal literal is not representable"},
		{name: "temporal operator", src: `p(X) :- [-[0d, 1d] q(X).`, wantMsg: "premise 0: a temporal literal"},
		{name: "temporal head", src: `p(X)@[2024-01-01, 2024-02-01] :- q(X).`, wantMsg: "head: a temporal annotation is not representable"},
		{name: "transform", src: `p(X, N) :- q(X) |> do fn:group_by(X), let N = fn:count().`, wantMsg: "a transform (|> do or let) is not representable"},
		{name: "name constant", src: `p(/foo) :- q(X).`, wantMsg: "head: argument 0: a name constant is not representable"},
		{name: "name constant in the body", src: `p(X) :- q(X, /foo).`, wantMsg: "premise 0: argument 1: a name constant"},
		{name: "bytes constant", src: `p(b"ab") :- q(X).`, wantMsg: "a bytes constant"},
		{name: "struct", src: `p({/a: 1}) :- q(X).`, wantMsg: "the function application fn:struct is not representable"},
		{name: "arithmetic", src: `p(fn:plus(X, 1)) :- q(X).`, wantMsg: "the function application fn:plus"},
		{name: "name in a list", src: `p([X, /a]) :- q(X).`, wantMsg: "argument 0: list element 1: a name constant"},
		{name: "name in a constant list", ast: atom(ast.List([]ast.Constant{ast.Number(1), name})), wantMsg: "argument 0: list element 1: a name constant"},
		{name: "map with a number key", src: `p([1: X]) :- q(X).`, wantMsg: "map key 0: a key that is not a string constant"},
		{name: "map with a name key", src: `p([/a: 2]) :- q(X).`, wantMsg: "map key 0: a key that is not a string constant"},
		{name: "map with a variable key", src: `p(fn:map(K, 2)) :- q(K).`, wantMsg: "map key 0: a key that is not a string constant"},
		{name: "map with a repeated key", src: `p(["a": 1, "a": X]) :- q(X).`, wantMsg: "map key 1: a repeated map key"},
		{name: "map with an odd argument count", src: `p(fn:map("a")) :- q(X).`, wantMsg: "fn:map with an odd number of arguments"},
		{name: "constant map with a number key", ast: atom(numKeyMap), wantMsg: "map key 0: a key that is not a string is not representable"},
		{name: "time constant", ast: atom(ast.Time(0)), wantMsg: "a time constant"},
		{name: "duration constant", ast: atom(ast.Duration(1)), wantMsg: "a duration constant"},
		{name: "pair constant", ast: atom(pair), wantMsg: "a pair constant"},
		{name: "NaN", ast: atom(ast.Float64(math.NaN())), wantMsg: "a float that is not finite"},
		{name: "infinity", ast: atom(ast.Float64(math.Inf(1))), wantMsg: "a float that is not finite"},
		{name: "qualified predicate", src: `p(X) :- foo.bar(X).`, wantMsg: `body[0].predicate: predicate "foo.bar" must match`, wantCode: protocol.CodeInvalidFacts},
		{name: "predicate with a colon", src: `p(X) :- foo:bar(X).`, wantMsg: "body[0].predicate", wantCode: protocol.CodeInvalidFacts},
		{name: "variable with an underscore", ast: atom(ast.Variable{Symbol: "X_1"}), wantMsg: "head.args[0].name", wantCode: protocol.CodeInvalidFacts},
		{name: "string that is not UTF-8", ast: atom(ast.String("\xff")), wantMsg: "not valid UTF-8", wantCode: protocol.CodeInvalidFacts},
		{name: "empty predicate", ast: ast.NewClause(ast.NewAtom(""), nil), wantMsg: "head.predicate", wantCode: protocol.CodeInvalidFacts},
		{name: "eternal head annotation is fine", ast: ast.NewTemporalClause(ast.NewAtom("p", ast.Number(1)), &eternal, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.ast
			if tt.src != "" {
				c = parseClause(t, tt.src)
			}
			_, err := factcodec.ClauseFromAST(c)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("ClauseFromAST: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ClauseFromAST succeeded, want an error containing %q", tt.wantMsg)
			}
			if !errors.Is(err, factcodec.ErrNotRepresentable) {
				t.Errorf("error %v does not wrap ErrNotRepresentable", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantMsg)
			}
			pe, ok := protocol.AsError(err)
			switch {
			case tt.wantCode == "" && ok:
				t.Errorf("error wraps %v, want no protocol error", pe)
			case tt.wantCode != "" && (!ok || pe.Code != tt.wantCode):
				t.Errorf("error = %v, want it to wrap a %s protocol error", err, tt.wantCode)
			}
			// The error names places and kinds, never rule text.
			if strings.Contains(err.Error(), "q(X)") || strings.Contains(err.Error(), ":-") {
				t.Errorf("error %q quotes the clause", err)
			}
		})
	}
}

// A structured clause from the wire (Spec 03 section 7) compiles to a
// Mangle clause: a negated literal to a negated atom, a wildcard to _.
// Mangle prints atom arguments without a space after the commas.
func ExampleClauseToAST() {
	c, perr := protocol.DecodeClause([]byte(`{
		"head": {"predicate": "may_write", "args": [{"type": "variable", "name": "Path"}, {"type": "string", "value": "edit"}]},
		"body": [
			{"predicate": "file_exists", "args": [{"type": "variable", "name": "Path"}]},
			{"predicate": "locked", "args": [{"type": "variable", "name": "Path"}, {"type": "wildcard"}], "negated": true}
		]
	}`))
	if perr != nil {
		fmt.Println(perr)
		return
	}
	clause, err := factcodec.ClauseToAST(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(clause)
	// Output:
	// may_write(Path,"edit") :- file_exists(Path), !locked(Path,_).
}

// A Mangle rule converts to the structured clause format; a negated atom
// gets "negated": true. Comparisons cannot be represented.
func ExampleClauseFromAST() {
	rule, err := parse.Clause(`blocked(Path) :- file_exists(Path), !allowed(Path, [1, 2]).`)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := factcodec.ClauseFromAST(rule)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(c)
	fmt.Println(string(out))

	cmp, _ := parse.Clause(`big(X) :- size(X), X > 10.`)
	_, err = factcodec.ClauseFromAST(cmp)
	fmt.Println(errors.Is(err, factcodec.ErrNotRepresentable), err)
	// Output:
	// {"head":{"predicate":"blocked","args":[{"type":"variable","name":"Path"}]},"body":[{"predicate":"file_exists","args":[{"type":"variable","name":"Path"}]},{"predicate":"allowed","args":[{"type":"variable","name":"Path"},{"type":"list","elements":[{"type":"number","value":1},{"type":"number","value":2}]}],"negated":true}]}
	// true premise 1: the builtin predicate :gt (a comparison or other builtin) is not representable in the clause format
}
