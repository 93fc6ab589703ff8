package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testProfile is the facts profile of the validation tests. It returns a
// fresh value on each call, so no test can disturb another.
func testProfile() *FactsProfile {
	return &FactsProfile{
		TimeFormats: []string{"rfc3339", "epoch_ms"},
		Predicates: []PredicateSchema{
			{Predicate: "current_url", Arity: 1, ArgTypes: []string{ArgString}, ArgNames: []string{"url"}, Direction: DirectionInput},
			{Predicate: "console_event", Arity: 4, ArgTypes: []string{ArgString, ArgString, ArgString, ArgNumber},
				ArgNames: []string{"session_id", "level", "message", "timestamp"}, Temporal: true},
			{Predicate: "flag", Arity: 1, ArgTypes: []string{ArgBoolean}},
			{Predicate: "anyp", Arity: 1, ArgTypes: []string{ArgAny}},
			{Predicate: "derived_thing", Arity: 1, ArgTypes: []string{ArgString}, Direction: DirectionOutput},
			{Predicate: "nonames", Arity: 2, ArgTypes: []string{ArgString, ArgNumber}},
		},
	}
}

// decodeTestFacts decodes JSON facts the way a server does, failing the
// test if any is malformed.
func decodeTestFacts(t *testing.T, facts []string) []Fact {
	t.Helper()
	raws := make([]json.RawMessage, len(facts))
	for i, f := range facts {
		raws[i] = json.RawMessage(f)
	}
	out, vs := DecodeFacts(raws)
	if len(vs) > 0 {
		t.Fatalf("DecodeFacts: %+v", vs)
	}
	return out
}

// Helpers for expected violations (fact_index 0, messages compared apart).
func viol(pred string, issue Code) Violation { return Violation{Predicate: pred, Issue: issue} }

func typeViol(pred string, arg int, want, got string) Violation {
	return Violation{Predicate: pred, Issue: CodeTypeMismatch, ArgumentIndex: intPtr(arg), ExpectedType: want, ActualType: got}
}

func arityViol(pred string, want, got int) Violation {
	return Violation{Predicate: pred, Issue: CodeArityMismatch, ExpectedArity: intPtr(want), ActualArity: intPtr(got)}
}

type validateCase struct {
	name  string
	facts []string
	mode  FactMode
	// want are the expected violations, messages ignored.
	want []Violation
	// wantMsg are substrings expected in the messages of want, in order
	// ("" skips one).
	wantMsg []string
	// wantOut are the normalized facts, as JSON; nil means none.
	wantOut []string
	check   func(t *testing.T, out []Fact)
}

func validateCases() []validateCase {
	long := strings.Repeat("a", MaxPredicateLength)
	return []validateCase{
		// Valid facts and normalization.
		{
			name:    "positional args, category defaults to session",
			facts:   []string{`{"pred":"current_url","args":["https://example.com"]}`},
			wantOut: []string{`{"pred":"current_url","args":["https://example.com"],"category":"session"}`},
		},
		{
			name:    "explicit session category and provenance",
			facts:   []string{`{"pred":"current_url","args":["https://example.com"],"category":"session","source":{"source_type":"client","source_id":"tab-1"}}`},
			wantOut: []string{`{"pred":"current_url","args":["https://example.com"],"source":{"source_type":"client","source_id":"tab-1"},"category":"session"}`},
		},
		{
			name: "named_args become positional args",
			facts: []string{`{"pred":"console_event","named_args":{"timestamp":1771510200000,"message":"TypeError","level":"error","session_id":"s1"},` +
				`"t":{"at":"2026-02-19T14:30:00Z"}}`},
			wantOut: []string{`{"pred":"console_event","args":["s1","error","TypeError",1771510200000],"t":{"at":"2026-02-19T14:30:00Z"},"category":"session"}`},
			check: func(t *testing.T, out []Fact) {
				if out[0].HasNamedArgs() || !out[0].HasArgs() {
					t.Errorf("HasNamedArgs %v, HasArgs %v; want positional only", out[0].HasNamedArgs(), out[0].HasArgs())
				}
			},
		},
		{
			name:    "int64 wrapper becomes json.Number",
			facts:   []string{`{"pred":"anyp","args":[{"_type":"int64","value":"9007199254740993"}]}`},
			wantOut: []string{`{"pred":"anyp","args":[{"_type":"int64","value":"9007199254740993"}],"category":"session"}`}, // wrapped again on the way out
			check: func(t *testing.T, out []Fact) {
				if n, ok := out[0].Args[0].(json.Number); !ok || n != "9007199254740993" {
					t.Errorf("arg = %#v, want json.Number(\"9007199254740993\")", out[0].Args[0])
				}
			},
		},
		{
			name:    "negative int64 wrapper for a number argument",
			facts:   []string{`{"pred":"nonames","args":["a",{"_type":"int64","value":"-9223372036854775808"}]}`},
			wantOut: []string{`{"pred":"nonames","args":["a",{"_type":"int64","value":"-9223372036854775808"}],"category":"session"}`},
		},
		{
			name:    "integral float for number becomes an integer",
			facts:   []string{`{"pred":"console_event","args":["s1","warn","slow",1.5e3]}`},
			wantOut: []string{`{"pred":"console_event","args":["s1","warn","slow",1500],"category":"session"}`},
		},
		{
			name:    "integral floats in every spelling",
			facts:   []string{`{"pred":"console_event","args":["s1","warn","slow",404.0]}`, `{"pred":"console_event","args":["s1","warn","slow",4e2]}`, `{"pred":"console_event","args":["s1","warn","slow",-0.0]}`, `{"pred":"console_event","args":["s1","warn","slow",40400E-2]}`},
			wantOut: []string{`{"pred":"console_event","args":["s1","warn","slow",404],"category":"session"}`, `{"pred":"console_event","args":["s1","warn","slow",400],"category":"session"}`, `{"pred":"console_event","args":["s1","warn","slow",0],"category":"session"}`, `{"pred":"console_event","args":["s1","warn","slow",404],"category":"session"}`},
		},
		{
			name:    "non-integral float for number refused",
			facts:   []string{`{"pred":"console_event","args":["s1","warn","slow",404.5]}`},
			want:    []Violation{typeViol("console_event", 3, ArgNumber, "number")},
			wantMsg: []string{"404.5", "not a whole number"},
		},
		{
			name:    "integral float beyond int64 for number refused",
			facts:   []string{`{"pred":"console_event","args":["s1","warn","slow",1e19]}`},
			want:    []Violation{typeViol("console_event", 3, ArgNumber, "number")},
			wantMsg: []string{"outside int64"},
		},
		{
			name:    "float for any stays a float",
			facts:   []string{`{"pred":"anyp","args":[404.0]}`},
			wantOut: []string{`{"pred":"anyp","args":[404.0],"category":"session"}`},
		},
		{
			name:    "boolean",
			facts:   []string{`{"pred":"flag","args":[false]}`},
			wantOut: []string{`{"pred":"flag","args":[false],"category":"session"}`},
		},
		{
			name: "any accepts lists and maps",
			facts: []string{
				`{"pred":"anyp","args":[[1,"a",{"k":[true]}]]}`,
				`{"pred":"anyp","args":[{"k":"v","n":{"_type":"int64","value":"1"}}]}`,
				`{"pred":"anyp","args":["s"]}`,
			},
			wantOut: []string{
				`{"pred":"anyp","args":[[1,"a",{"k":[true]}]],"category":"session"}`,
				`{"pred":"anyp","args":[{"k":"v","n":{"_type":"int64","value":"1"}}],"category":"session"}`,
				`{"pred":"anyp","args":["s"],"category":"session"}`,
			},
		},
		{
			name:    "plain integers that fit int64 are kept exactly",
			facts:   []string{`{"pred":"anyp","args":[9223372036854775807]}`},
			wantOut: []string{`{"pred":"anyp","args":[{"_type":"int64","value":"9223372036854775807"}],"category":"session"}`},
		},
		{
			name:    "output predicate allowed in a retract pattern",
			facts:   []string{`{"pred":"derived_thing","args":["x"]}`},
			mode:    Pattern,
			wantOut: []string{`{"pred":"derived_thing","args":["x"]}`},
		},

		// Predicate names.
		{
			name:    "reserved prefix",
			facts:   []string{`{"pred":"_manglecp_internal","args":["hack"]}`},
			want:    []Violation{viol("_manglecp_internal", CodeReservedPredicate)},
			wantMsg: []string{"Predicates starting with '_manglecp_' are reserved for protocol use"},
		},
		{
			name:  "reserved prefix reported alone",
			facts: []string{`{"pred":"_manglecp_X","args":[1,2],"named_args":{},"category":"server"}`},
			want:  []Violation{viol("_manglecp_X", CodeReservedPredicate)},
		},
		{
			name:    "uppercase name",
			facts:   []string{`{"pred":"CurrentURL","args":["x"]}`},
			want:    []Violation{viol("CurrentURL", IssueInvalidPredicateName)},
			wantMsg: []string{"must match [a-z][a-z0-9_]*"},
		},
		{
			name:  "name with a dot",
			facts: []string{`{"pred":"current.url","args":["x"]}`},
			want:  []Violation{viol("current.url", IssueInvalidPredicateName)},
		},
		{
			name:  "name starting with a digit",
			facts: []string{`{"pred":"1url","args":["x"]}`},
			want:  []Violation{viol("1url", IssueInvalidPredicateName)},
		},
		{
			name:  "name starting with an underscore",
			facts: []string{`{"pred":"_url","args":["x"]}`},
			want:  []Violation{viol("_url", IssueInvalidPredicateName)},
		},
		{
			name:  "name with a dash",
			facts: []string{`{"pred":"current-url","args":["x"]}`},
			want:  []Violation{viol("current-url", IssueInvalidPredicateName)},
		},
		{
			name:    "name of 129 characters",
			facts:   []string{`{"pred":"` + long + `a","args":[]}`},
			want:    []Violation{viol(Clip(long+"a"), IssueInvalidPredicateName)}, // the echo is bounded (issue 9)
			wantMsg: []string{"129 characters long; the maximum is 128"},
		},
		{
			name:  "name of 128 characters is valid but undeclared",
			facts: []string{`{"pred":"` + long + `","args":[]}`},
			want:  []Violation{viol(long, CodeUnknownPredicate)},
		},
		{
			name:    "empty name",
			facts:   []string{`{"pred":"","args":[]}`},
			want:    []Violation{viol("", IssueInvalidPredicateName)},
			wantMsg: []string{`"pred" is required`},
		},
		{
			name:  "missing pred",
			facts: []string{`{"args":["x"]}`},
			want:  []Violation{viol("", IssueInvalidPredicateName)},
		},

		// Unknown and output predicates.
		{
			name:    "unknown predicate with suggestion",
			facts:   []string{`{"pred":"console_evnt","args":["s1","error","m",1]}`},
			want:    []Violation{{Predicate: "console_evnt", Issue: CodeUnknownPredicate, Suggestion: "Did you mean 'console_event'?"}},
			wantMsg: []string{"Predicate 'console_evnt' is not declared in the server's facts profile"},
		},
		{
			name:  "unknown predicate with suggestion by insertion",
			facts: []string{`{"pred":"curent_url","args":["x"]}`},
			want:  []Violation{{Predicate: "curent_url", Issue: CodeUnknownPredicate, Suggestion: "Did you mean 'current_url'?"}},
		},
		{
			name:  "unknown predicate without suggestion",
			facts: []string{`{"pred":"user_intent","args":["x"]}`},
			want:  []Violation{viol("user_intent", CodeUnknownPredicate)},
		},
		{
			name:  "unknown short predicate without suggestion",
			facts: []string{`{"pred":"zzz","args":[]}`},
			want:  []Violation{viol("zzz", CodeUnknownPredicate)},
		},
		{
			name:    "output predicate accepted (a state delta fed back)",
			facts:   []string{`{"pred":"derived_thing","args":["x"],"category":"server","source":{"source_type":"server"}}`},
			wantOut: []string{`{"pred":"derived_thing","args":["x"],"source":{"source_type":"server"},"category":"session"}`},
		},
		{
			name:  "output predicate checked like any other",
			facts: []string{`{"pred":"derived_thing","args":[]}`},
			want:  []Violation{arityViol("derived_thing", 1, 0)},
		},

		// args and named_args.
		{
			name:  "args and named_args",
			facts: []string{`{"pred":"current_url","args":["x"],"named_args":{"url":"x"}}`},
			want:  []Violation{viol("current_url", IssueArgsAndNamedArgs)},
		},
		{
			name:  "neither args nor named_args",
			facts: []string{`{"pred":"current_url"}`},
			want:  []Violation{viol("current_url", IssueMissingArgs)},
		},
		{
			name:  "args null counts as absent",
			facts: []string{`{"pred":"current_url","args":null}`},
			want:  []Violation{viol("current_url", IssueMissingArgs)},
		},
		{
			name:  "named_args unknown key",
			facts: []string{`{"pred":"current_url","named_args":{"url":"x","uri":"y"}}`},
			want:  []Violation{viol("current_url", IssueUnknownNamedArg)},
			wantMsg: []string{
				`Unknown named argument "uri"; 'current_url' has url`,
			},
		},
		{
			name:  "named_args misspelled key",
			facts: []string{`{"pred":"current_url","named_args":{"uri":"y"}}`},
			want: []Violation{
				viol("current_url", IssueUnknownNamedArg),
				{Predicate: "current_url", Issue: IssueMissingNamedArg, ArgumentIndex: intPtr(0)},
			},
		},
		{
			name:    "named_args missing key",
			facts:   []string{`{"pred":"console_event","named_args":{"session_id":"s1","level":"error","message":"m"}}`},
			want:    []Violation{{Predicate: "console_event", Issue: IssueMissingNamedArg, ArgumentIndex: intPtr(3)}},
			wantMsg: []string{`Missing named argument "timestamp"`},
		},
		{
			name:    "named_args on a predicate without arg_names",
			facts:   []string{`{"pred":"nonames","named_args":{"a":"x","b":1}}`},
			want:    []Violation{viol("nonames", IssueNamedArgsUnsupported)},
			wantMsg: []string{"declares no arg_names"},
		},
		{
			name:  "named_args value type-checked after resolution",
			facts: []string{`{"pred":"current_url","named_args":{"url":5}}`},
			want:  []Violation{typeViol("current_url", 0, ArgString, "integer")},
		},

		// Arity.
		{
			name:    "arity mismatch lists arg names",
			facts:   []string{`{"pred":"console_event","args":["s1","error","TypeError"]}`},
			want:    []Violation{arityViol("console_event", 4, 3)},
			wantMsg: []string{"Predicate 'console_event' expects 4 arguments (session_id, level, message, timestamp), got 3"},
		},
		{
			name:    "arity mismatch without arg names",
			facts:   []string{`{"pred":"nonames","args":["a","b","c"]}`},
			want:    []Violation{arityViol("nonames", 2, 3)},
			wantMsg: []string{"Predicate 'nonames' expects 2 arguments, got 3"},
		},
		{
			name:  "empty args",
			facts: []string{`{"pred":"current_url","args":[]}`},
			want:  []Violation{arityViol("current_url", 1, 0)},
		},

		// Types.
		{
			name:    "string given an integer",
			facts:   []string{`{"pred":"current_url","args":[5]}`},
			want:    []Violation{typeViol("current_url", 0, ArgString, "integer")},
			wantMsg: []string{"Argument 0 (url) of 'current_url' must be a string, got integer"},
		},
		{
			name:  "string given a float",
			facts: []string{`{"pred":"current_url","args":[0.5]}`},
			want:  []Violation{typeViol("current_url", 0, ArgString, "number")},
		},
		{
			name:  "string given a boolean",
			facts: []string{`{"pred":"current_url","args":[true]}`},
			want:  []Violation{typeViol("current_url", 0, ArgString, "boolean")},
		},
		{
			name:  "string given an array",
			facts: []string{`{"pred":"current_url","args":[["x"]]}`},
			want:  []Violation{typeViol("current_url", 0, ArgString, "array")},
		},
		{
			name:  "string given an object",
			facts: []string{`{"pred":"current_url","args":[{"u":"x"}]}`},
			want:  []Violation{typeViol("current_url", 0, ArgString, "object")},
		},
		{
			name:  "string given an int64 wrapper",
			facts: []string{`{"pred":"current_url","args":[{"_type":"int64","value":"9007199254740993"}]}`},
			want:  []Violation{typeViol("current_url", 0, ArgString, "integer")},
		},
		{
			name:    "number given a string",
			facts:   []string{`{"pred":"console_event","args":["s1","error","m","soon"]}`},
			want:    []Violation{typeViol("console_event", 3, ArgNumber, "string")},
			wantMsg: []string{"Argument 3 (timestamp) of 'console_event' must be a number, got string"},
		},
		{
			name:  "number given a boolean",
			facts: []string{`{"pred":"nonames","args":["a",false]}`},
			want:  []Violation{typeViol("nonames", 1, ArgNumber, "boolean")},
		},
		{
			name:  "boolean given a string",
			facts: []string{`{"pred":"flag","args":["true"]}`},
			want:  []Violation{typeViol("flag", 0, ArgBoolean, "string")},
		},
		{
			name:  "boolean given an integer",
			facts: []string{`{"pred":"flag","args":[1]}`},
			want:  []Violation{typeViol("flag", 0, ArgBoolean, "integer")},
		},
		{
			name:  "every bad argument reported",
			facts: []string{`{"pred":"console_event","args":[1,"error",false,"x"]}`},
			want: []Violation{
				typeViol("console_event", 0, ArgString, "integer"),
				typeViol("console_event", 2, ArgString, "boolean"),
				typeViol("console_event", 3, ArgNumber, "string"),
			},
		},

		// Null and numbers.
		{
			name:    "null wildcard rejected in an asserted fact",
			facts:   []string{`{"pred":"current_url","args":[null]}`},
			want:    []Violation{{Predicate: "current_url", Issue: IssueWildcardNotAllowed, ArgumentIndex: intPtr(0), ExpectedType: ArgString, ActualType: "null"}},
			wantMsg: []string{"allowed only in retract patterns"},
		},
		{
			name:    "null wildcard accepted in a pattern",
			facts:   []string{`{"pred":"console_event","args":["s1",null,null,null]}`},
			mode:    Pattern,
			wantOut: []string{`{"pred":"console_event","args":["s1",null,null,null]}`},
		},
		{
			name:    "null inside a list rejected",
			facts:   []string{`{"pred":"anyp","args":[[1,null]]}`},
			want:    []Violation{typeViol("anyp", 0, ArgAny, "array")},
			wantMsg: []string{"holds null inside a list"},
		},
		{
			name:  "null inside a list rejected in a pattern too",
			facts: []string{`{"pred":"anyp","args":[[null]]}`},
			mode:  Pattern,
			want:  []Violation{typeViol("anyp", 0, ArgAny, "array")},
		},
		{
			name:    "null inside a map rejected",
			facts:   []string{`{"pred":"anyp","args":[{"k":null}]}`},
			want:    []Violation{typeViol("anyp", 0, ArgAny, "object")},
			wantMsg: []string{`holds null at key "k"`},
		},
		{
			name:    "integer beyond int64",
			facts:   []string{`{"pred":"anyp","args":[9223372036854775808]}`},
			want:    []Violation{typeViol("anyp", 0, ArgAny, "integer")},
			wantMsg: []string{"outside int64"},
		},
		{
			name:  "negative integer beyond int64",
			facts: []string{`{"pred":"nonames","args":["a",-9223372036854775809]}`},
			want:  []Violation{typeViol("nonames", 1, ArgNumber, "integer")},
		},
		{
			name:  "integer beyond int64 inside a list",
			facts: []string{`{"pred":"anyp","args":[[1,99999999999999999999]]}`},
			want:  []Violation{typeViol("anyp", 0, ArgAny, "array")},
		},
		{
			name:    "float beyond float64",
			facts:   []string{`{"pred":"nonames","args":["a",1e400]}`},
			want:    []Violation{typeViol("nonames", 1, ArgNumber, "number")},
			wantMsg: []string{"outside float64"},
		},
		{
			name:    "int64 wrapper with a non-decimal value",
			facts:   []string{`{"pred":"anyp","args":[{"_type":"int64","value":"12x"}]}`},
			want:    []Violation{typeViol("anyp", 0, ArgAny, "object")},
			wantMsg: []string{`value "12x" is not a decimal int64`},
		},
		{
			name:  "int64 wrapper beyond int64",
			facts: []string{`{"pred":"anyp","args":[{"_type":"int64","value":"9223372036854775808"}]}`},
			want:  []Violation{typeViol("anyp", 0, ArgAny, "object")},
		},
		{
			name:    "int64 wrapper with a numeric value",
			facts:   []string{`{"pred":"anyp","args":[{"_type":"int64","value":5}]}`},
			want:    []Violation{typeViol("anyp", 0, ArgAny, "object")},
			wantMsg: []string{`"value" is not a decimal string`},
		},
		{
			name:    "unknown typed wrapper",
			facts:   []string{`{"pred":"anyp","args":[{"_type":"int32","value":"5"}]}`},
			want:    []Violation{typeViol("anyp", 0, ArgAny, "object")},
			wantMsg: []string{"the only typed wrapper"},
		},
		{
			name:  "int64 wrapper with an extra key",
			facts: []string{`{"pred":"anyp","args":[{"_type":"int64","value":"5","sign":"-"}]}`},
			want:  []Violation{typeViol("anyp", 0, ArgAny, "object")},
		},
		{
			name:  "bad int64 wrapper nested in a list",
			facts: []string{`{"pred":"anyp","args":[[{"_type":"int64","value":"x"}]]}`},
			want:  []Violation{typeViol("anyp", 0, ArgAny, "array")},
		},

		// Temporal annotations.
		{
			name:    "t on a non-temporal predicate",
			facts:   []string{`{"pred":"current_url","args":["x"],"t":{"at":"2026-02-19T14:30:00Z"}}`},
			want:    []Violation{viol("current_url", IssueNotTemporal)},
			wantMsg: []string{"Predicate 'current_url' is not temporal"},
		},
		{
			name: "valid t forms",
			facts: []string{
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":"2026-02-19T14:30:00Z"}}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":1771511400000}}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":"now"}}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"2026-02-19T14:30:00Z","end":"_"}}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"_","end":"2026-02-19T14:30:00+01:00"}}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"_","end":"_"}}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"now","end":"_"}}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":1771511400000,"end":"2026-02-19T14:30:00Z"}}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":null}`,
			},
			wantOut: []string{
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":"2026-02-19T14:30:00Z"},"category":"session"}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":1771511400000},"category":"session"}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":"now"},"category":"session"}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"2026-02-19T14:30:00Z","end":"_"},"category":"session"}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"_","end":"2026-02-19T14:30:00+01:00"},"category":"session"}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"_","end":"_"},"category":"session"}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"now","end":"_"},"category":"session"}`,
				`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":1771511400000,"end":"2026-02-19T14:30:00Z"},"category":"session"}`,
				`{"pred":"console_event","args":["s1","e","m",1],"category":"session"}`,
			},
		},
		{
			name:    "at is unbounded",
			facts:   []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":"_"}}`},
			want:    []Violation{viol("console_event", IssueInvalidTemporal)},
			wantMsg: []string{`"t.at" must be a time, not "_"`},
		},
		{
			name:    "start after end",
			facts:   []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"2026-02-19T15:00:00Z","end":"2026-02-19T14:00:00Z"}}`},
			want:    []Violation{viol("console_event", IssueInvalidTemporal)},
			wantMsg: []string{`"t.start" is after "t.end"`},
		},
		{
			name:  "start after end across formats",
			facts: []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":1771511400001,"end":"2026-02-19T14:30:00Z"}}`},
			want:  []Violation{viol("console_event", IssueInvalidTemporal)},
		},
		{
			name:    "both forms",
			facts:   []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":"2026-02-19T14:30:00Z","end":"_"}}`},
			want:    []Violation{viol("console_event", IssueInvalidTemporal)},
			wantMsg: []string{"not both forms"},
		},
		{
			name:    "bad time string",
			facts:   []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":"19 Feb 2026"}}`},
			want:    []Violation{viol("console_event", IssueInvalidTemporal)},
			wantMsg: []string{`"t.at": time "19 Feb 2026" is not RFC 3339`},
		},
		{
			name:    "bad end time",
			facts:   []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"_","end":"later"}}`},
			want:    []Violation{viol("console_event", IssueInvalidTemporal)},
			wantMsg: []string{`"t.end": time "later" is not RFC 3339`},
		},
		{
			name:  "fractional epoch milliseconds",
			facts: []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":1771511400000.5}}`},
			want:  []Violation{viol("console_event", IssueInvalidTemporal)},
		},
		{
			name:    "start without end",
			facts:   []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{"start":"2026-02-19T14:30:00Z"}}`},
			want:    []Violation{viol("console_event", IssueInvalidTemporal)},
			wantMsg: []string{`use "_" for an unbounded end`},
		},
		{
			name:  "empty t",
			facts: []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{}}`},
			want:  []Violation{viol("console_event", IssueInvalidTemporal)},
		},
		{
			name:  "at null",
			facts: []string{`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":null}}`},
			want:  []Violation{viol("console_event", IssueInvalidTemporal)},
		},

		// Category and provenance.
		{
			name:    "category server read as session",
			facts:   []string{`{"pred":"current_url","args":["x"],"category":"server"}`},
			wantOut: []string{`{"pred":"current_url","args":["x"],"category":"session"}`},
		},
		{
			name:    "category derived read as session",
			facts:   []string{`{"pred":"current_url","args":["x"],"category":"derived"}`},
			wantOut: []string{`{"pred":"current_url","args":["x"],"category":"session"}`},
		},
		{
			name:    "unknown category rejected",
			facts:   []string{`{"pred":"current_url","args":["x"],"category":"client"}`},
			want:    []Violation{viol("current_url", IssueInvalidCategory)},
			wantMsg: []string{`Category must be "session"`, `got "client"`},
		},
		{
			name:    "category not checked in a pattern",
			facts:   []string{`{"pred":"current_url","args":["x"],"category":"server"}`},
			mode:    Pattern,
			wantOut: []string{`{"pred":"current_url","args":["x"],"category":"server"}`},
		},
		{
			name:    "source without source_type",
			facts:   []string{`{"pred":"current_url","args":["x"],"source":{"source_id":"tab-1"}}`},
			want:    []Violation{viol("current_url", IssueInvalidSource)},
			wantMsg: []string{"source.source_type is required"},
		},
		{
			name:  "several issues on one fact",
			facts: []string{`{"pred":"current_url","args":[7],"t":{"at":"now"},"category":"bogus","source":{}}`},
			want: []Violation{
				typeViol("current_url", 0, ArgString, "integer"),
				viol("current_url", IssueNotTemporal),
				viol("current_url", IssueInvalidCategory),
				viol("current_url", IssueInvalidSource),
			},
		},
	}
}

func TestValidateFacts(t *testing.T) {
	cases := validateCases()
	// The golden file pins the exact normalized facts and violations
	// (messages included) of every case.
	var golden bytes.Buffer
	golden.WriteString("# For each case of TestValidateFacts: the normalized facts (out) and the violations.\n")
	golden.WriteString("# Generated by: go test ./protocol -run TestValidateFacts -update\n")
	for _, tt := range cases {
		out, vs := ValidateFacts(decodeTestFacts(t, tt.facts), testProfile(), tt.mode, nil)
		fmt.Fprintf(&golden, "\n-- %s --\n", tt.name)
		for _, f := range out {
			fmt.Fprintf(&golden, "out: %s\n", mustJSON(t, f))
		}
		for _, v := range vs {
			fmt.Fprintf(&golden, "violation: %s\n", mustJSON(t, v))
		}
	}
	checkGolden(t, filepath.Join("testdata", "validate_facts.golden"), golden.Bytes())

	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			facts := decodeTestFacts(t, tt.facts)
			out, vs := ValidateFacts(facts, testProfile(), tt.mode, nil)

			got := make([]Violation, len(vs))
			for i, v := range vs {
				if v.Message == "" {
					t.Errorf("violation %d has no message", i)
				}
				if i < len(tt.wantMsg) && !strings.Contains(v.Message, tt.wantMsg[i]) {
					t.Errorf("violation %d message = %q, want it to contain %q", i, v.Message, tt.wantMsg[i])
				}
				v.Message = ""
				got[i] = v
			}
			want := tt.want
			if want == nil {
				want = []Violation{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("violations:\n got  %s\n want %s", mustJSON(t, got), mustJSON(t, want))
			}

			var gotOut []string
			for _, f := range out {
				gotOut = append(gotOut, string(mustJSON(t, f)))
			}
			if !reflect.DeepEqual(gotOut, tt.wantOut) {
				t.Errorf("normalized facts:\n got  %q\n want %q", gotOut, tt.wantOut)
			}
			if tt.check != nil && len(out) > 0 {
				tt.check(t, out)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestValidateFactsAllReported checks that one call reports every violation
// of every fact, with the index of the fact in the list.
func TestValidateFactsAllReported(t *testing.T) {
	facts := decodeTestFacts(t, []string{
		/* 0 */ `{"pred":"current_url","args":["https://example.com"]}`,
		/* 1 */ `{"pred":"console_event","args":["s1","error","TypeError"]}`,
		/* 2 */ `{"pred":"_manglecp_internal","args":["hack"]}`,
		/* 3 */ `{"pred":"flag","args":[true]}`,
		/* 4 */ `{"pred":"flag","args":["yes"]}`,
		/* 5 */ `{"pred":"console_evnt","args":[]}`,
		/* 6 */ `{"pred":"current_url","args":["x"],"t":{"at":"now"},"category":"bogus"}`,
		/* 7 */ `{"pred":"anyp","args":[null]}`,
	})
	out, vs := ValidateFacts(facts, testProfile(), Assert, nil)

	type key struct {
		index int
		issue Code
	}
	var got []key
	for _, v := range vs {
		got = append(got, key{v.FactIndex, v.Issue})
	}
	want := []key{
		{1, CodeArityMismatch},
		{2, CodeReservedPredicate},
		{4, CodeTypeMismatch},
		{5, CodeUnknownPredicate},
		{6, IssueNotTemporal},
		{6, IssueInvalidCategory},
		{7, IssueWildcardNotAllowed},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("violations (fact_index, issue):\n got  %v\n want %v", got, want)
	}
	if len(out) != 2 || out[0].Pred != "current_url" || out[1].Pred != "flag" {
		t.Errorf("valid facts = %+v, want facts 0 and 3", out)
	}

	err := FactsError(vs)
	if err.Code != CodeInvalidFacts || err.Message != "7 fact validation errors" || !err.Recoverable || err.HTTPStatus() != 400 {
		t.Errorf("FactsError = %+v", err)
	}
	if err.Details == nil || !reflect.DeepEqual(err.Details.Violations, vs) {
		t.Errorf("FactsError details = %+v, want the violations", err.Details)
	}
}

func TestValidateFactsSkip(t *testing.T) {
	facts := decodeTestFacts(t, []string{
		`{"pred":"flag","args":[true]}`,
		`{"pred":"flag","args":["bad"]}`,
		`{"pred":"flag","args":[1]}`,
	})
	out, vs := ValidateFacts(facts, testProfile(), Assert, map[int]bool{1: true})
	if len(vs) != 1 || vs[0].FactIndex != 2 {
		t.Errorf("violations = %+v, want only fact 2", vs)
	}
	if len(out) != 1 {
		t.Errorf("out = %+v, want fact 0 only", out)
	}
}

// TestValidateFactsDoesNotModifyInput checks that normalization works on
// copies: the caller's facts keep their original arguments.
func TestValidateFactsDoesNotModifyInput(t *testing.T) {
	facts := decodeTestFacts(t, []string{`{"pred":"anyp","args":[{"_type":"int64","value":"9007199254740993"}]}`})
	before := fmt.Sprintf("%#v", facts[0].Args)
	out, vs := ValidateFacts(facts, testProfile(), Assert, nil)
	if len(vs) != 0 || len(out) != 1 {
		t.Fatalf("out %+v, violations %+v", out, vs)
	}
	after := fmt.Sprintf("%#v", facts[0].Args)
	if before != after {
		t.Fatalf("ValidateFacts modified the caller's args: %s became %s", before, after)
	}
}

// TestSpec09Section8 replays the example of Spec 09 section 8: the request
// and the error response are transcribed from the spec into testdata.
func TestSpec09Section8(t *testing.T) {
	req, err := os.ReadFile(filepath.Join("testdata", "spec09_section8_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantResp, err := os.ReadFile(filepath.Join("testdata", "spec09_section8_response.json"))
	if err != nil {
		t.Fatal(err)
	}

	env, perr := DecodeEnvelope(req)
	if perr != nil {
		t.Fatalf("DecodeEnvelope: %v", perr)
	}
	var payload struct {
		Intent Intent            `json:"intent"`
		Facts  []json.RawMessage `json:"facts"`
	}
	if perr := DecodePayload(env.Payload, &payload); perr != nil {
		t.Fatalf("DecodePayload: %v", perr)
	}
	facts, vs := DecodeFacts(payload.Facts)
	if len(vs) != 0 {
		t.Fatalf("DecodeFacts: %+v", vs)
	}
	_, vs = ValidateFacts(facts, testProfile(), Assert, nil)
	got, encErr := ErrorEnvelope(env.IDString(), FactsError(vs)).Encode()
	if encErr != nil {
		t.Fatal(encErr)
	}

	var gotV, wantV any
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(wantResp, &wantV); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotV, wantV) {
		t.Errorf("response differs from Spec 09 section 8:\n got  %s\n want %s", got, bytes.Join(bytes.Fields(wantResp), nil))
	}
}

func TestDecodeFacts(t *testing.T) {
	raws := []json.RawMessage{
		/* 0 */ json.RawMessage(`{"pred":"flag","args":[true]}`),
		/* 1 */ json.RawMessage(`{"pred":"flag","args":[true],"color":"red"}`),
		/* 2 */ json.RawMessage(`{"pred":5,"args":[]}`),
		/* 3 */ json.RawMessage(`{"pred":"flag","args":"true"}`),
		/* 4 */ json.RawMessage(`{"pred":"console_event","args":["s1","e","m",1],"t":{"at":"now","during":1}}`),
		/* 5 */ json.RawMessage(`{"pred":"console_event","args":["s1","e","m",1],"t":"now"}`),
		/* 6 */ json.RawMessage(`{"pred":"current_url","args":["x"],"source":{"source_type":"client","trust":"high"}}`),
		/* 7 */ json.RawMessage(`"flag"`),
		/* 8 */ json.RawMessage(`{"pred":"flag","named_args":[true]}`),
		/* 9 */ json.RawMessage(`{"pred":"current_url","named_args":{"url":"https://example.com"}}`),
	}
	facts, vs := DecodeFacts(raws)
	if len(facts) != len(raws) {
		t.Fatalf("DecodeFacts returned %d facts for %d inputs", len(facts), len(raws))
	}
	wantMalformed := []struct {
		index int
		pred  string
		msg   string
	}{
		{1, "flag", `unknown field "color"`},
		{2, "", "pred"},
		{3, "flag", `field "args" has the wrong type: got JSON string`},
		{4, "console_event", `unknown field "t.during"`},
		{5, "console_event", `"t" must be an object`},
		{6, "current_url", `unknown field "source.trust"`},
		{7, "", "a fact must be a JSON object"},
		{8, "flag", `field "named_args" has the wrong type: got JSON array`},
	}
	if len(vs) != len(wantMalformed) {
		t.Fatalf("got %d violations, want %d: %+v", len(vs), len(wantMalformed), vs)
	}
	skip := map[int]bool{}
	for i, w := range wantMalformed {
		t.Run(fmt.Sprintf("fact %d", w.index), func(t *testing.T) {
			v := vs[i]
			if v.FactIndex != w.index || v.Issue != IssueMalformedFact || v.Predicate != w.pred {
				t.Errorf("violation = %+v, want fact_index %d, issue %s, predicate %q", v, w.index, IssueMalformedFact, w.pred)
			}
			if !strings.Contains(v.Message, w.msg) {
				t.Errorf("message = %q, want it to contain %q", v.Message, w.msg)
			}
		})
		skip[vs[i].FactIndex] = true
	}

	// The well-formed facts decode and validate; the malformed ones are
	// skipped.
	out, more := ValidateFacts(facts, testProfile(), Assert, skip)
	if len(more) != 0 {
		t.Errorf("ValidateFacts reported %+v", more)
	}
	var got []string
	for _, f := range out {
		got = append(got, string(mustJSON(t, f)))
	}
	want := []string{
		`{"pred":"flag","args":[true],"category":"session"}`,
		`{"pred":"current_url","args":["https://example.com"],"category":"session"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("valid facts = %q, want %q", got, want)
	}
	if FactsError(vs).Code != CodeInvalidFacts {
		t.Errorf("malformed facts give %s, want invalid_facts", FactsError(vs).Code)
	}
}

func TestFactsError(t *testing.T) {
	v := func(issue Code) Violation { return Violation{Issue: issue, Message: "problem with " + string(issue)} }
	tests := []struct {
		name            string
		vs              []Violation
		wantCode        Code
		wantRecoverable bool
		wantMsg         string
	}{
		{"one arity mismatch", []Violation{v(CodeArityMismatch)}, CodeArityMismatch, true, "1 fact validation error: problem with arity_mismatch"},
		{"all unknown predicates", []Violation{v(CodeUnknownPredicate), v(CodeUnknownPredicate)}, CodeUnknownPredicate, true, "2 fact validation errors"},
		{"all type mismatches", []Violation{v(CodeTypeMismatch), v(CodeTypeMismatch), v(CodeTypeMismatch)}, CodeTypeMismatch, true, "3 fact validation errors"},
		{"all reserved", []Violation{v(CodeReservedPredicate), v(CodeReservedPredicate)}, CodeReservedPredicate, false, "2 fact validation errors"},
		{"one reserved", []Violation{v(CodeReservedPredicate)}, CodeReservedPredicate, false, "1 fact validation error: problem with reserved_predicate"},
		{"mixed registry issues", []Violation{v(CodeArityMismatch), v(CodeTypeMismatch)}, CodeInvalidFacts, true, "2 fact validation errors"},
		{"reserved mixed with arity", []Violation{v(CodeReservedPredicate), v(CodeArityMismatch)}, CodeInvalidFacts, true, "2 fact validation errors"},
		{"registry and other issue", []Violation{v(CodeTypeMismatch), v(IssueInvalidTemporal)}, CodeInvalidFacts, true, "2 fact validation errors"},
		{"same non-registry issue", []Violation{v(IssueInvalidTemporal), v(IssueInvalidTemporal)}, CodeInvalidFacts, true, "2 fact validation errors"},
		{"one non-registry issue", []Violation{v(IssueMissingArgs)}, CodeInvalidFacts, true, "1 fact validation error: problem with missing_args"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := FactsError(tt.vs)
			if err.Code != tt.wantCode || err.Recoverable != tt.wantRecoverable || err.Message != tt.wantMsg {
				t.Errorf("FactsError = {%s, recoverable %v, %q}, want {%s, %v, %q}",
					err.Code, err.Recoverable, err.Message, tt.wantCode, tt.wantRecoverable, tt.wantMsg)
			}
			if err.HTTPStatus() != 400 {
				t.Errorf("HTTP status %d, want 400", err.HTTPStatus())
			}
			if err.Details == nil || !reflect.DeepEqual(err.Details.Violations, tt.vs) {
				t.Errorf("details = %+v, want the violations", err.Details)
			}
		})
	}
}
