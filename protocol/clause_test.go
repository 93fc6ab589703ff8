package protocol_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// specClauseJSON is the example of Spec 03 section 7.1.
const specClauseJSON = `{
  "head": {
    "predicate": "safe_action",
    "args": [
      {"type": "string", "value": "read"},
      {"type": "variable", "name": "Target"},
      {"type": "wildcard"}
    ]
  },
  "body": [
    {
      "predicate": "file_exists",
      "args": [{"type": "variable", "name": "Target"}]
    }
  ]
}`

// lit builds a literal.
func lit(pred string, args ...protocol.ArgDescriptor) protocol.Literal {
	if args == nil {
		args = []protocol.ArgDescriptor{}
	}
	return protocol.Literal{Predicate: pred, Args: args}
}

// neg builds a negated literal.
func neg(pred string, args ...protocol.ArgDescriptor) protocol.Literal {
	l := lit(pred, args...)
	l.Negated = true
	return l
}

// headOnly wraps one argument JSON text in a clause p(arg).
func headOnly(arg string) string {
	return `{"head":{"predicate":"p","args":[` + arg + `]}}`
}

// bodyOnly wraps a body literal JSON text in a clause p() :- literal.
func bodyOnly(literal string) string {
	return `{"head":{"predicate":"p","args":[]},"body":[` + literal + `]}`
}

func TestDecodeClause(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want protocol.Clause
	}{
		{
			name: "spec 03 section 7.1 example",
			in:   specClauseJSON,
			want: protocol.Clause{
				Head: lit("safe_action", protocol.StringArg("read"), protocol.VariableArg("Target"), protocol.WildcardArg()),
				Body: []protocol.Literal{lit("file_exists", protocol.VariableArg("Target"))},
			},
		},
		{name: "fact without body", in: `{"head":{"predicate":"p","args":[{"type":"number","value":1}]}}`, want: protocol.Clause{Head: lit("p", protocol.IntArg(1))}},
		{name: "null body is a fact", in: `{"head":{"predicate":"p","args":[]},"body":null}`, want: protocol.Clause{Head: lit("p")}},
		{name: "empty body is a fact", in: `{"head":{"predicate":"p","args":[]},"body":[]}`, want: protocol.Clause{Head: lit("p")}},
		{name: "arity zero", in: bodyOnly(`{"predicate":"q","args":[]}`), want: protocol.Clause{Head: lit("p"), Body: []protocol.Literal{lit("q")}}},
		{
			name: "negated body literal",
			in:   `{"head":{"predicate":"p","args":[{"type":"variable","name":"X"}]},"body":[{"predicate":"q","args":[{"type":"variable","name":"X"}]},{"predicate":"r","args":[{"type":"variable","name":"X"}],"negated":true}]}`,
			want: protocol.Clause{
				Head: lit("p", protocol.VariableArg("X")),
				Body: []protocol.Literal{lit("q", protocol.VariableArg("X")), neg("r", protocol.VariableArg("X"))},
			},
		},
		{name: "negated false and null are positive", in: `{"head":{"predicate":"p","args":[],"negated":false},"body":[{"predicate":"q","args":[],"negated":null}]}`, want: protocol.Clause{Head: lit("p"), Body: []protocol.Literal{lit("q")}}},
		{name: "variable with digits", in: headOnly(`{"type":"variable","name":"X1y"}`), want: protocol.Clause{Head: lit("p", protocol.VariableArg("X1y"))}},
		{name: "empty string", in: headOnly(`{"type":"string","value":""}`), want: protocol.Clause{Head: lit("p", protocol.StringArg(""))}},
		{name: "unicode string", in: headOnly(`{"type":"string","value":"h\u00e9llo 🚀"}`), want: protocol.Clause{Head: lit("p", protocol.StringArg("héllo 🚀"))}},
		{name: "negative integer", in: headOnly(`{"type":"number","value":-7}`), want: protocol.Clause{Head: lit("p", protocol.IntArg(-7))}},
		{name: "float", in: headOnly(`{"type":"number","value":3.25}`), want: protocol.Clause{Head: lit("p", protocol.FloatArg(3.25))}},
		{name: "float with exponent keeps its text", in: headOnly(`{"type":"number","value":1e3}`), want: protocol.Clause{Head: lit("p", protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: json.Number("1e3")})}},
		{name: "integer beyond 2^53 accepted exactly", in: headOnly(`{"type":"number","value":9007199254740993}`), want: protocol.Clause{Head: lit("p", protocol.IntArg(9007199254740993))}},
		{name: "int64 wrapper", in: headOnly(`{"type":"number","value":{"_type":"int64","value":"-9223372036854775808"}}`), want: protocol.Clause{Head: lit("p", protocol.IntArg(math.MinInt64))}},
		{name: "empty list", in: headOnly(`{"type":"list","elements":[]}`), want: protocol.Clause{Head: lit("p", protocol.ListArg())}},
		{
			name: "nested list",
			in:   headOnly(`{"type":"list","elements":[{"type":"number","value":1},{"type":"list","elements":[{"type":"variable","name":"X"},{"type":"wildcard"}]}]}`),
			want: protocol.Clause{Head: lit("p", protocol.ListArg(protocol.IntArg(1), protocol.ListArg(protocol.VariableArg("X"), protocol.WildcardArg())))},
		},
		{name: "empty map", in: headOnly(`{"type":"map","entries":{}}`), want: protocol.Clause{Head: lit("p", protocol.MapArg(nil))}},
		{
			name: "map",
			in:   headOnly(`{"type":"map","entries":{"k":{"type":"string","value":"v"},"":{"type":"variable","name":"V"}}}`),
			want: protocol.Clause{Head: lit("p", protocol.MapArg(map[string]protocol.ArgDescriptor{"k": protocol.StringArg("v"), "": protocol.VariableArg("V")}))},
		},
		{name: "predicate of 128 characters", in: `{"head":{"predicate":"` + strings.Repeat("a", 128) + `","args":[]}}`, want: protocol.Clause{Head: lit(strings.Repeat("a", 128))}},
		{name: "variable of 128 characters", in: headOnly(`{"type":"variable","name":"` + strings.Repeat("X", 128) + `"}`), want: protocol.Clause{Head: lit("p", protocol.VariableArg(strings.Repeat("X", 128)))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := protocol.DecodeClause([]byte(tt.in))
			if err != nil {
				t.Fatalf("DecodeClause: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("DecodeClause =\n%#v\nwant\n%#v", got, tt.want)
			}
			// json.Unmarshal goes through Clause.UnmarshalJSON and agrees.
			var viaUnmarshal protocol.Clause
			if err := json.Unmarshal([]byte(tt.in), &viaUnmarshal); err != nil {
				t.Fatalf("json.Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(viaUnmarshal, tt.want) {
				t.Errorf("json.Unmarshal =\n%#v\nwant\n%#v", viaUnmarshal, tt.want)
			}
		})
	}
}

func TestDecodeClauseErrors(t *testing.T) {
	const (
		malformed = protocol.CodeMalformedMessage
		invalid   = protocol.CodeInvalidFacts
	)
	deep := headOnly(strings.Repeat(`{"type":"list","elements":[`, 40) + strings.Repeat(`]}`, 40))
	tests := []struct {
		name      string
		in        string
		wantCode  protocol.Code
		wantField string
		wantMsg   string // substring of the message
	}{
		// malformed_message: the JSON does not have the shape of the wire types.
		{name: "empty input", in: ``, wantCode: malformed, wantMsg: "must be a JSON object"},
		{name: "syntax error", in: `{"head":}`, wantCode: malformed, wantMsg: "not valid JSON"},
		{name: "trailing data", in: specClauseJSON + ` x`, wantCode: malformed, wantMsg: "more than one JSON value"},
		{name: "duplicate key", in: `{"head":{"predicate":"p","args":[]},"head":{"predicate":"q","args":[]}}`, wantCode: malformed, wantMsg: `duplicate object key "head"`},
		{name: "nesting too deep", in: deep, wantCode: malformed, wantMsg: "nesting deeper than 64"},
		{name: "clause is an array", in: `[]`, wantCode: malformed, wantMsg: "a clause must be a JSON object"},
		{name: "clause is null", in: `null`, wantCode: malformed, wantMsg: "a clause must be a JSON object"},
		{name: "unknown clause field", in: `{"head":{"predicate":"p","args":[]},"rules":[]}`, wantCode: malformed, wantField: "rules", wantMsg: `unknown field "rules"`},
		{name: "field names are case-sensitive", in: `{"Head":{"predicate":"p","args":[]}}`, wantCode: malformed, wantField: "Head"},
		{name: "head is a string", in: `{"head":"p(X)"}`, wantCode: malformed, wantField: "head", wantMsg: "a literal must be a JSON object"},
		{name: "body is an object", in: `{"head":{"predicate":"p","args":[]},"body":{}}`, wantCode: malformed, wantField: "body", wantMsg: "must be an array of literals, got JSON object"},
		{name: "unknown literal field", in: `{"head":{"pred":"p","args":[]}}`, wantCode: malformed, wantField: "head.pred"},
		{name: "predicate is a number", in: `{"head":{"predicate":42,"args":[]}}`, wantCode: malformed, wantField: "head.predicate", wantMsg: "must be a string, got JSON number"},
		{name: "predicate is null", in: `{"head":{"predicate":null,"args":[]}}`, wantCode: malformed, wantField: "head.predicate", wantMsg: "got JSON null"},
		{name: "args is an object", in: `{"head":{"predicate":"p","args":{}}}`, wantCode: malformed, wantField: "head.args"},
		{name: "args is null", in: `{"head":{"predicate":"p","args":null}}`, wantCode: malformed, wantField: "head.args"},
		{name: "negated is a string", in: bodyOnly(`{"predicate":"q","args":[],"negated":"yes"}`), wantCode: malformed, wantField: "body[0].negated", wantMsg: "must be a boolean"},
		{name: "plain JSON value as an argument", in: headOnly(`"read"`), wantCode: malformed, wantField: "head.args[0]", wantMsg: "an argument descriptor must be a JSON object"},
		{name: "null as an argument", in: headOnly(`null`), wantCode: malformed, wantField: "head.args[0]"},
		{name: "unknown descriptor field", in: headOnly(`{"type":"string","val":"x"}`), wantCode: malformed, wantField: "head.args[0].val"},
		{name: "type is a number", in: headOnly(`{"type":1}`), wantCode: malformed, wantField: "head.args[0].type"},
		{name: "name is a number", in: headOnly(`{"type":"variable","name":1}`), wantCode: malformed, wantField: "head.args[0].name"},
		{name: "elements is an object", in: headOnly(`{"type":"list","elements":{}}`), wantCode: malformed, wantField: "head.args[0].elements"},
		{name: "elements is null", in: headOnly(`{"type":"list","elements":null}`), wantCode: malformed, wantField: "head.args[0].elements"},
		{name: "entries is an array", in: headOnly(`{"type":"map","entries":[]}`), wantCode: malformed, wantField: "head.args[0].entries"},
		{name: "entries is null", in: headOnly(`{"type":"map","entries":null}`), wantCode: malformed, wantField: "head.args[0].entries"},
		{name: "malformed list element", in: headOnly(`{"type":"list","elements":[{"type":"wildcard"},"x"]}`), wantCode: malformed, wantField: "head.args[0].elements[1]"},

		// invalid_facts: the shape is right, the content breaks a rule.
		{name: "missing head", in: `{"body":[]}`, wantCode: invalid, wantField: "head", wantMsg: "needs a head"},
		{name: "missing predicate", in: `{"head":{"args":[]}}`, wantCode: invalid, wantField: "head.predicate"},
		{name: "missing args", in: `{"head":{"predicate":"p"}}`, wantCode: invalid, wantField: "head.args", wantMsg: "needs args"},
		{name: "empty predicate", in: `{"head":{"predicate":"","args":[]}}`, wantCode: invalid, wantField: "head.predicate", wantMsg: "empty"},
		{name: "uppercase predicate", in: `{"head":{"predicate":"Safe","args":[]}}`, wantCode: invalid, wantField: "head.predicate", wantMsg: "[a-z][a-z0-9_]*"},
		{name: "qualified predicate", in: bodyOnly(`{"predicate":"pkg.q","args":[]}`), wantCode: invalid, wantField: "body[0].predicate"},
		{name: "builtin predicate", in: bodyOnly(`{"predicate":":lt","args":[]}`), wantCode: invalid, wantField: "body[0].predicate"},
		{name: "reserved prefix", in: `{"head":{"predicate":"_manglecp_x","args":[]}}`, wantCode: invalid, wantField: "head.predicate"},
		{name: "predicate too long", in: `{"head":{"predicate":"` + strings.Repeat("a", 129) + `","args":[]}}`, wantCode: invalid, wantField: "head.predicate", wantMsg: "129 characters"},
		{name: "negated head", in: `{"head":{"predicate":"p","args":[],"negated":true}}`, wantCode: invalid, wantField: "head.negated", wantMsg: "cannot be negated"},
		{name: "missing type", in: headOnly(`{"value":"x"}`), wantCode: invalid, wantField: "head.args[0].type", wantMsg: "no type"},
		{name: "unknown type", in: headOnly(`{"type":"boolean","value":true}`), wantCode: invalid, wantField: "head.args[0].type", wantMsg: `unknown argument descriptor type "boolean"`},
		{name: "empty type", in: headOnly(`{"type":""}`), wantCode: invalid, wantField: "head.args[0].type"},
		{name: "type is case-sensitive", in: headOnly(`{"type":"String","value":"x"}`), wantCode: invalid, wantField: "head.args[0].type"},
		{name: "string without value", in: headOnly(`{"type":"string"}`), wantCode: invalid, wantField: "head.args[0].value", wantMsg: `needs field "value"`},
		{name: "string with a number value", in: headOnly(`{"type":"string","value":42}`), wantCode: invalid, wantField: "head.args[0].value", wantMsg: "got JSON number"},
		{name: "string with a null value", in: headOnly(`{"type":"string","value":null}`), wantCode: invalid, wantField: "head.args[0].value", wantMsg: "got JSON null"},
		{name: "string with a name", in: headOnly(`{"type":"string","value":"x","name":"X"}`), wantCode: invalid, wantField: "head.args[0].name", wantMsg: `not used by type "string"`},
		{name: "number without value", in: headOnly(`{"type":"number"}`), wantCode: invalid, wantField: "head.args[0].value"},
		{name: "number as a string", in: headOnly(`{"type":"number","value":"42"}`), wantCode: invalid, wantField: "head.args[0].value", wantMsg: "got JSON string"},
		{name: "number as a boolean", in: headOnly(`{"type":"number","value":true}`), wantCode: invalid, wantField: "head.args[0].value"},
		{name: "number null", in: headOnly(`{"type":"number","value":null}`), wantCode: invalid, wantField: "head.args[0].value"},
		{name: "integer outside int64", in: headOnly(`{"type":"number","value":9223372036854775808}`), wantCode: invalid, wantField: "head.args[0].value", wantMsg: "outside int64"},
		{name: "float outside float64", in: headOnly(`{"type":"number","value":1e400}`), wantCode: invalid, wantField: "head.args[0].value", wantMsg: "outside float64"},
		{name: "bad int64 wrapper", in: headOnly(`{"type":"number","value":{"_type":"int64","value":"1.5"}}`), wantCode: invalid, wantField: "head.args[0].value", wantMsg: "not a decimal int64"},
		{name: "wrapper with an extra key", in: headOnly(`{"type":"number","value":{"_type":"int64","value":"1","x":1}}`), wantCode: invalid, wantField: "head.args[0].value"},
		{name: "variable without name", in: headOnly(`{"type":"variable"}`), wantCode: invalid, wantField: "head.args[0].name"},
		{name: "variable with empty name", in: headOnly(`{"type":"variable","name":""}`), wantCode: invalid, wantField: "head.args[0].name", wantMsg: "needs a name"},
		{name: "lowercase variable", in: headOnly(`{"type":"variable","name":"target"}`), wantCode: invalid, wantField: "head.args[0].name", wantMsg: "uppercase ASCII letter"},
		{name: "wildcard as a variable name", in: headOnly(`{"type":"variable","name":"_"}`), wantCode: invalid, wantField: "head.args[0].name"},
		{name: "variable starting with an underscore", in: headOnly(`{"type":"variable","name":"_X"}`), wantCode: invalid, wantField: "head.args[0].name"},
		{name: "variable with an underscore", in: headOnly(`{"type":"variable","name":"X_1"}`), wantCode: invalid, wantField: "head.args[0].name"},
		{name: "non-ASCII variable", in: headOnly(`{"type":"variable","name":"Ärger"}`), wantCode: invalid, wantField: "head.args[0].name"},
		{name: "variable too long", in: headOnly(`{"type":"variable","name":"` + strings.Repeat("X", 129) + `"}`), wantCode: invalid, wantField: "head.args[0].name", wantMsg: "129 characters"},
		{name: "wildcard with a name", in: headOnly(`{"type":"wildcard","name":"X"}`), wantCode: invalid, wantField: "head.args[0].name"},
		{name: "list without elements", in: headOnly(`{"type":"list"}`), wantCode: invalid, wantField: "head.args[0].elements"},
		{name: "list with entries", in: headOnly(`{"type":"list","elements":[],"entries":{}}`), wantCode: invalid, wantField: "head.args[0].entries"},
		{name: "map without entries", in: headOnly(`{"type":"map"}`), wantCode: invalid, wantField: "head.args[0].entries"},
		{name: "map with elements", in: headOnly(`{"type":"map","entries":{},"elements":[]}`), wantCode: invalid, wantField: "head.args[0].elements"},
		{name: "invalid list element", in: headOnly(`{"type":"list","elements":[{"type":"wildcard"},{"type":"variable","name":"x"}]}`), wantCode: invalid, wantField: "head.args[0].elements[1].name"},
		{name: "invalid map entry", in: headOnly(`{"type":"map","entries":{"a.b":{"type":"null"}}}`), wantCode: invalid, wantField: `head.args[0].entries["a.b"].type`},
		{name: "invalid body argument", in: bodyOnly(`{"predicate":"q","args":[{"type":"wildcard"},{"type":"string","value":1}]}`), wantCode: invalid, wantField: "body[0].args[1].value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := protocol.DecodeClause([]byte(tt.in))
			if err == nil {
				t.Fatalf("DecodeClause succeeded, want %s", tt.wantCode)
			}
			if err.Code != tt.wantCode {
				t.Errorf("code = %s, want %s (%v)", err.Code, tt.wantCode, err)
			}
			field := ""
			if err.Details != nil {
				field = err.Details.Field
			}
			if field != tt.wantField {
				t.Errorf("details.field = %q, want %q (%v)", field, tt.wantField, err)
			}
			if !strings.Contains(err.Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", err.Message, tt.wantMsg)
			}
			if err.Recoverable != tt.wantCode.Recoverable() {
				t.Errorf("recoverable = %v, want the registry's %v", err.Recoverable, tt.wantCode.Recoverable())
			}
			// json.Unmarshal reports the same *Error once its own syntax
			// check has passed.
			if !json.Valid([]byte(tt.in)) {
				return
			}
			var c protocol.Clause
			uerr := json.Unmarshal([]byte(tt.in), &c)
			if pe, ok := protocol.AsError(uerr); !ok || pe.Code != tt.wantCode {
				t.Errorf("json.Unmarshal error = %v, want code %s", uerr, tt.wantCode)
			}
		})
	}
}

func TestClauseValidate(t *testing.T) {
	num := func(v any) protocol.ArgDescriptor {
		return protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: v}
	}
	tests := []struct {
		name      string
		clause    protocol.Clause
		wantField string // "" means valid
		wantMsg   string
	}{
		{name: "nil args", clause: protocol.Clause{Head: protocol.Literal{Predicate: "p"}}},
		{name: "Go int", clause: protocol.Clause{Head: lit("p", num(7))}},
		{name: "Go int64", clause: protocol.Clause{Head: lit("p", num(int64(math.MaxInt64)))}},
		{name: "Go float64", clause: protocol.Clause{Head: lit("p", num(0.5))}},
		{name: "nil list and map", clause: protocol.Clause{Head: lit("p", protocol.ArgDescriptor{Type: protocol.DescriptorList}, protocol.ArgDescriptor{Type: protocol.DescriptorMap})}},
		{name: "zero clause", clause: protocol.Clause{}, wantField: "head.predicate", wantMsg: "empty"},
		{name: "zero descriptor", clause: protocol.Clause{Head: lit("p", protocol.ArgDescriptor{})}, wantField: "head.args[0].type", wantMsg: "no type"},
		{name: "negated head", clause: protocol.Clause{Head: neg("p")}, wantField: "head.negated"},
		{name: "negated body is fine", clause: protocol.Clause{Head: lit("p"), Body: []protocol.Literal{neg("q")}}},
		{name: "NaN", clause: protocol.Clause{Head: lit("p", protocol.FloatArg(math.NaN()))}, wantField: "head.args[0].value", wantMsg: "not a finite number"},
		{name: "infinity", clause: protocol.Clause{Head: lit("p", num(math.Inf(-1)))}, wantField: "head.args[0].value", wantMsg: "not a finite number"},
		{name: "number as a Go string", clause: protocol.Clause{Head: lit("p", num("42"))}, wantField: "head.args[0].value", wantMsg: "got a string"},
		{name: "number as a Go float32", clause: protocol.Clause{Head: lit("p", num(float32(1)))}, wantField: "head.args[0].value", wantMsg: "got a Go float32"},
		{name: "json.Number that is not a number", clause: protocol.Clause{Head: lit("p", num(json.Number("abc")))}, wantField: "head.args[0].value", wantMsg: "not a JSON number"},
		{name: "empty json.Number", clause: protocol.Clause{Head: lit("p", num(json.Number("")))}, wantField: "head.args[0].value", wantMsg: "not a JSON number"},
		{name: "json.Number with a space", clause: protocol.Clause{Head: lit("p", num(json.Number(" 1")))}, wantField: "head.args[0].value"},
		{name: "json.Number outside int64", clause: protocol.Clause{Head: lit("p", num(json.Number("99999999999999999999")))}, wantField: "head.args[0].value", wantMsg: "outside int64"},
		{name: "string as a Go int", clause: protocol.Clause{Head: lit("p", protocol.ArgDescriptor{Type: protocol.DescriptorString, Value: 1})}, wantField: "head.args[0].value", wantMsg: "got a number"},
		{name: "string not UTF-8", clause: protocol.Clause{Head: lit("p", protocol.StringArg("a\xffb"))}, wantField: "head.args[0].value", wantMsg: "UTF-8"},
		{name: "map key not UTF-8", clause: protocol.Clause{Head: lit("p", protocol.MapArg(map[string]protocol.ArgDescriptor{"\xff": protocol.WildcardArg()}))}, wantField: `head.args[0].entries["\xff"]`, wantMsg: "UTF-8"},
		{name: "string with elements", clause: protocol.Clause{Head: lit("p", protocol.ArgDescriptor{Type: protocol.DescriptorString, Value: "x", Elements: []protocol.ArgDescriptor{}})}, wantField: "head.args[0].elements"},
		{name: "variable with a value", clause: protocol.Clause{Head: lit("p", protocol.ArgDescriptor{Type: protocol.DescriptorVariable, Name: "X", Value: "x"})}, wantField: "head.args[0].value"},
		{name: "list with entries", clause: protocol.Clause{Head: lit("p", protocol.ArgDescriptor{Type: protocol.DescriptorList, Entries: map[string]protocol.ArgDescriptor{}})}, wantField: "head.args[0].entries"},
		{name: "wildcard with a name", clause: protocol.Clause{Head: lit("p", protocol.ArgDescriptor{Type: protocol.DescriptorWildcard, Name: "X"})}, wantField: "head.args[0].name"},
		{name: "bad second body literal", clause: protocol.Clause{Head: lit("p"), Body: []protocol.Literal{lit("q"), lit("Q")}}, wantField: "body[1].predicate"},
		{name: "deep invalid element", clause: protocol.Clause{Head: lit("p", protocol.ListArg(protocol.MapArg(map[string]protocol.ArgDescriptor{"k": protocol.VariableArg("k")})))}, wantField: `head.args[0].elements[0].entries["k"].name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.clause.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want an error at %s", tt.wantField)
			}
			if err.Code != protocol.CodeInvalidFacts || err.Details == nil || err.Details.Field != tt.wantField {
				t.Errorf("Validate = %v (details %+v), want invalid_facts at %s", err, err.Details, tt.wantField)
			}
			if !strings.Contains(err.Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", err.Message, tt.wantMsg)
			}
		})
	}
}

// TestClauseMarshal pins the wire form of each descriptor type and checks
// that decoding it gives back the same value.
func TestClauseMarshal(t *testing.T) {
	tests := []struct {
		name string
		arg  protocol.ArgDescriptor
		want string
		// back is the decoded descriptor when it differs from arg.
		back *protocol.ArgDescriptor
	}{
		{name: "string", arg: protocol.StringArg("read"), want: `{"type":"string","value":"read"}`},
		{name: "string with escapes", arg: protocol.StringArg("a\"b\n<"), want: `{"type":"string","value":"a\"b\n\u003c"}`},
		{name: "integer", arg: protocol.IntArg(42), want: `{"type":"number","value":42}`},
		{name: "2^53-1 stays a number", arg: protocol.IntArg(1<<53 - 1), want: `{"type":"number","value":9007199254740991}`},
		{name: "2^53 is wrapped", arg: protocol.IntArg(1 << 53), want: `{"type":"number","value":{"_type":"int64","value":"9007199254740992"}}`},
		{name: "min int64 is wrapped", arg: protocol.IntArg(math.MinInt64), want: `{"type":"number","value":{"_type":"int64","value":"-9223372036854775808"}}`},
		{name: "Go int", arg: protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: 7}, want: `{"type":"number","value":7}`, back: ptr(protocol.IntArg(7))},
		{name: "Go int64 is wrapped", arg: protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: int64(-1 << 60)}, want: `{"type":"number","value":{"_type":"int64","value":"-1152921504606846976"}}`, back: ptr(protocol.IntArg(-1 << 60))},
		{name: "integral float keeps a point", arg: protocol.FloatArg(2), want: `{"type":"number","value":2.0}`},
		{name: "float", arg: protocol.FloatArg(-0.25), want: `{"type":"number","value":-0.25}`},
		{name: "negative zero", arg: protocol.FloatArg(math.Copysign(0, -1)), want: `{"type":"number","value":-0.0}`},
		{name: "large float", arg: protocol.FloatArg(1e21), want: `{"type":"number","value":1e+21}`},
		{name: "small float", arg: protocol.FloatArg(1e-7), want: `{"type":"number","value":1e-7}`},
		{name: "max float", arg: protocol.FloatArg(math.MaxFloat64), want: `{"type":"number","value":1.7976931348623157e+308}`},
		{name: "Go float64", arg: protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: 3.0}, want: `{"type":"number","value":3.0}`, back: ptr(protocol.FloatArg(3))},
		{name: "variable", arg: protocol.VariableArg("Target"), want: `{"type":"variable","name":"Target"}`},
		{name: "wildcard", arg: protocol.WildcardArg(), want: `{"type":"wildcard"}`},
		{name: "empty list", arg: protocol.ListArg(), want: `{"type":"list","elements":[]}`},
		{name: "nil list", arg: protocol.ArgDescriptor{Type: protocol.DescriptorList}, want: `{"type":"list","elements":[]}`, back: ptr(protocol.ListArg())},
		{name: "list", arg: protocol.ListArg(protocol.IntArg(1), protocol.WildcardArg()), want: `{"type":"list","elements":[{"type":"number","value":1},{"type":"wildcard"}]}`},
		{name: "empty map", arg: protocol.MapArg(nil), want: `{"type":"map","entries":{}}`},
		{name: "nil map", arg: protocol.ArgDescriptor{Type: protocol.DescriptorMap}, want: `{"type":"map","entries":{}}`, back: ptr(protocol.MapArg(nil))},
		{
			name: "map keys are sorted",
			arg:  protocol.MapArg(map[string]protocol.ArgDescriptor{"b": protocol.StringArg("x"), "a": protocol.VariableArg("A")}),
			want: `{"type":"map","entries":{"a":{"type":"variable","name":"A"},"b":{"type":"string","value":"x"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.arg)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s\nwant      %s", got, tt.want)
			}
			var back protocol.ArgDescriptor
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			want := tt.arg
			if tt.back != nil {
				want = *tt.back
			}
			if !reflect.DeepEqual(back, want) {
				t.Errorf("round trip = %#v, want %#v", back, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestClauseMarshalShape(t *testing.T) {
	tests := []struct {
		name   string
		clause protocol.Clause
		want   string
	}{
		{
			name:   "fact omits body, arity zero keeps args",
			clause: protocol.Clause{Head: protocol.Literal{Predicate: "p"}},
			want:   `{"head":{"predicate":"p","args":[]}}`,
		},
		{
			name:   "negated only when true",
			clause: protocol.Clause{Head: lit("p"), Body: []protocol.Literal{lit("q"), neg("r")}},
			want:   `{"head":{"predicate":"p","args":[]},"body":[{"predicate":"q","args":[]},{"predicate":"r","args":[],"negated":true}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.clause)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s\nwant      %s", got, tt.want)
			}
		})
	}
}

func TestClauseMarshalErrors(t *testing.T) {
	tests := []struct {
		name    string
		arg     protocol.ArgDescriptor
		wantErr string
	}{
		{name: "unknown type", arg: protocol.ArgDescriptor{Type: "boolean"}, wantErr: `unknown argument descriptor type "boolean"`},
		{name: "zero descriptor", arg: protocol.ArgDescriptor{}, wantErr: `unknown argument descriptor type ""`},
		{name: "string with a number value", arg: protocol.ArgDescriptor{Type: protocol.DescriptorString, Value: 1}, wantErr: "string descriptor has a int value"},
		{name: "number with a string value", arg: protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: "1"}, wantErr: "number descriptor has a string value"},
		{name: "NaN", arg: protocol.FloatArg(math.NaN()), wantErr: "not finite"},
		{name: "json.Number outside int64", arg: protocol.ArgDescriptor{Type: protocol.DescriptorNumber, Value: json.Number("99999999999999999999")}, wantErr: "not an int64"},
		{name: "nested", arg: protocol.ListArg(protocol.ArgDescriptor{Type: "x"}), wantErr: `unknown argument descriptor type "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := json.Marshal(tt.arg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Marshal error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// TestClauseInPayload checks that a payload holding clauses is decoded
// strictly by DecodePayload, and that a clause error keeps its own code.
func TestClauseInPayload(t *testing.T) {
	type payload struct {
		Rules []protocol.Clause `json:"rules"`
	}
	tests := []struct {
		name      string
		in        string
		wantCode  protocol.Code // "" means success
		wantField string
	}{
		{name: "valid", in: `{"rules":[` + specClauseJSON + `]}`},
		{name: "invalid clause", in: `{"rules":[{"head":{"predicate":"P","args":[]}}]}`, wantCode: protocol.CodeInvalidFacts, wantField: "head.predicate"},
		{name: "malformed clause", in: `{"rules":[{"head":{"predicate":"p","args":[],"x":1}}]}`, wantCode: protocol.CodeMalformedMessage, wantField: "head.x"},
		{name: "unknown payload field", in: `{"rules":[],"clauses":[]}`, wantCode: protocol.CodeMalformedMessage, wantField: "clauses"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p payload
			err := protocol.DecodePayload(json.RawMessage(tt.in), &p)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("DecodePayload = %v", err)
				}
				if len(p.Rules) != 1 || p.Rules[0].Head.Predicate != "safe_action" {
					t.Errorf("rules = %+v", p.Rules)
				}
				return
			}
			if err == nil || err.Code != tt.wantCode || err.Details == nil || err.Details.Field != tt.wantField {
				t.Fatalf("DecodePayload = %v, want %s at %s", err, tt.wantCode, tt.wantField)
			}
			if !errors.Is(err, protocol.Errorf(tt.wantCode, "")) {
				t.Errorf("errors.Is does not match the code")
			}
		})
	}
}

// TestLiteralAndArgUnmarshal checks that the parts decode strictly on
// their own too.
func TestLiteralAndArgUnmarshal(t *testing.T) {
	var l protocol.Literal
	if err := json.Unmarshal([]byte(`{"predicate":"q","args":[{"type":"wildcard"}],"negated":true}`), &l); err != nil {
		t.Fatalf("Literal: %v", err)
	}
	if want := neg("q", protocol.WildcardArg()); !reflect.DeepEqual(l, want) {
		t.Errorf("Literal = %#v, want %#v", l, want)
	}
	tests := []struct {
		name      string
		in        string
		into      any
		wantCode  protocol.Code
		wantField string
	}{
		{name: "literal with a bad predicate", in: `{"predicate":"Q","args":[]}`, into: &protocol.Literal{}, wantCode: protocol.CodeInvalidFacts, wantField: "predicate"},
		{name: "literal with duplicate keys", in: `{"predicate":"q","predicate":"r","args":[]}`, into: &protocol.Literal{}, wantCode: protocol.CodeMalformedMessage},
		{name: "literal with a bad argument", in: `{"predicate":"q","args":[{"type":"variable","name":"x"}]}`, into: &protocol.Literal{}, wantCode: protocol.CodeInvalidFacts, wantField: "args[0].name"},
		{name: "descriptor with an unknown type", in: `{"type":"name","value":"/x"}`, into: &protocol.ArgDescriptor{}, wantCode: protocol.CodeInvalidFacts, wantField: "type"},
		{name: "descriptor with an unknown field", in: `{"type":"wildcard","x":1}`, into: &protocol.ArgDescriptor{}, wantCode: protocol.CodeMalformedMessage, wantField: "x"},
		{name: "descriptor with duplicate keys", in: `{"type":"wildcard","type":"wildcard"}`, into: &protocol.ArgDescriptor{}, wantCode: protocol.CodeMalformedMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := json.Unmarshal([]byte(tt.in), tt.into)
			pe, ok := protocol.AsError(err)
			if !ok || pe.Code != tt.wantCode {
				t.Fatalf("Unmarshal = %v, want code %s", err, tt.wantCode)
			}
			field := ""
			if pe.Details != nil {
				field = pe.Details.Field
			}
			if field != tt.wantField {
				t.Errorf("details.field = %q, want %q", field, tt.wantField)
			}
		})
	}
}

// A server that accepts structured clauses (Spec 03 section 7) decodes
// them with DecodeClause, which validates names and descriptor types.
func ExampleDecodeClause() {
	c, err := protocol.DecodeClause([]byte(`{
		"head": {"predicate": "safe_action", "args": [
			{"type": "string", "value": "read"},
			{"type": "variable", "name": "Target"},
			{"type": "wildcard"}
		]},
		"body": [{"predicate": "file_exists", "args": [{"type": "variable", "name": "Target"}]}]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Head.Predicate, len(c.Head.Args), len(c.Body))
	for _, a := range c.Head.Args {
		fmt.Printf("%s %v %q\n", a.Type, a.Value, a.Name)
	}

	_, err = protocol.DecodeClause([]byte(`{"head": {"predicate": "p", "args": [{"type": "variable", "name": "x"}]}}`))
	fmt.Println(err.Code, err.Details.Field)
	// Output:
	// safe_action 3 1
	// string read ""
	// variable <nil> "Target"
	// wildcard <nil> ""
	// invalid_facts head.args[0].name
}
