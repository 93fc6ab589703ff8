package factcodec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/kernel/factcodec"
	"github.com/manglecp/manglecp/protocol"
)

// anyProfile accepts one argument of any type, so every value the wire
// allows reaches the codec.
func anyProfile() *protocol.FactsProfile {
	return &protocol.FactsProfile{Predicates: []protocol.PredicateSchema{
		{Predicate: "v", Arity: 1, ArgTypes: []string{protocol.ArgAny}},
	}}
}

// acceptedValue wraps raw JSON as the argument of a fact and returns the
// normalized argument when protocol.ValidateFacts accepts it.
func acceptedValue(raw []byte) (protocol.Fact, bool) {
	if !json.Valid(raw) {
		return protocol.Fact{}, false
	}
	fact := json.RawMessage(`{"pred":"v","args":[` + string(raw) + `]}`)
	facts, vs := protocol.DecodeFacts([]json.RawMessage{fact})
	if len(vs) > 0 {
		return protocol.Fact{}, false
	}
	out, vs := protocol.ValidateFacts(facts, anyProfile(), protocol.Assert, nil)
	if len(vs) > 0 {
		return protocol.Fact{}, false
	}
	return out[0], true
}

// floatOverflow reports whether v holds a number that float64 cannot carry
// (see TestFloatOverflowAcceptedByValidation).
func floatOverflow(v any) bool {
	switch x := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			_, err := strconv.ParseFloat(string(x), 64)
			return errors.Is(err, strconv.ErrRange)
		}
	case []any:
		for _, e := range x {
			if floatOverflow(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if floatOverflow(e) {
				return true
			}
		}
	}
	return false
}

// FuzzConstantRoundTrip feeds every value ValidateFacts accepts through
// Constant and Value: the conversion succeeds, the JSON value encodes, is
// accepted again and converts to an equal constant; the whole fact makes
// the same trip through Atom and Fact.
func FuzzConstantRoundTrip(f *testing.F) {
	for _, s := range []string{
		`"hello"`, `""`, `"héllo 🚀"`, `"a\u0000b"`, `"/name"`, `"\ud800"`,
		`0`, `-0`, `42`, `-7`, `9007199254740991`, `9007199254740992`, `-9223372036854775808`, `9223372036854775807`,
		`{"_type":"int64","value":"9007199254740993"}`, `{"_type":"int64","value":"5"}`, `{"_type":"int64","value":"-9223372036854775808"}`,
		`3.14`, `-0.0`, `1e3`, `2.5E-3`, `2.0`, `1.7976931348623157e308`, `5e-324`, `1e-400`, `1e21`, `123456789012345678901234567890.5`,
		`true`, `false`,
		`[]`, `[1,"a",true,[2.5,[]]]`, `{}`, `{"a":1,"b":[{"c":"d"}],"":{"_type":"int64","value":"-1"}}`,
		`{"_type":"int64","value":"x"}`, `{"_type":"other"}`, `[null]`, `{"k":null}`, `null`, `1e400`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fact, ok := acceptedValue(raw)
		if !ok {
			return
		}
		v := fact.Args[0]
		c, err := factcodec.Constant(v)
		if err != nil {
			if floatOverflow(v) {
				t.Fatal("regression of a fixed bug (TestFloatOverflowAcceptedByValidation): " + err.Error())
			}
			t.Fatalf("Constant rejects the accepted value %s: %v", raw, err)
		}
		back, err := factcodec.Value(c)
		if err != nil {
			t.Fatalf("Value(%s): %v", c, err)
		}
		c2, err := factcodec.Constant(back)
		if err != nil || !c2.Equals(c) {
			t.Fatalf("Constant(Value(c)) = %v, %v; want %v", c2, err, c)
		}
		wire, err := json.Marshal(back)
		if err != nil {
			t.Fatalf("Value(%s) does not encode: %v", c, err)
		}
		again, ok := acceptedValue(wire)
		if !ok {
			t.Fatalf("the encoded value %s is not accepted again", wire)
		}
		c3, err := factcodec.Constant(again.Args[0])
		if err != nil || !c3.Equals(c) {
			t.Fatalf("the wire value %s converts to %v, %v; want %v", wire, c3, err, c)
		}
		// The whole fact: Atom, Fact, Atom.
		atom, err := factcodec.Atom(fact)
		if err != nil {
			t.Fatalf("Atom: %v", err)
		}
		wf, err := factcodec.Fact(atom)
		if err != nil {
			t.Fatalf("Fact: %v", err)
		}
		atom2, err := factcodec.Atom(wf)
		if err != nil || !atom2.Equals(atom) {
			t.Fatalf("Atom(Fact(a)) = %v, %v; want %v", atom2, err, atom)
		}
	})
}

// TestFloatOverflowAcceptedByValidation: protocol.ValidateFacts accepts
// numbers that round to +-Inf in float64 when their binary exponent is
// exactly 1024 (for example 1.7976931348623159e308), but
// factcodec.Constant rejects them; the server then answers invalid_facts
// without violations instead of type_mismatch with the fact's index.
func TestFloatOverflowAcceptedByValidation(t *testing.T) {
	for _, n := range []string{"1.7976931348623159e308", "-1.7976931348623159e308", "1.79769313486231581e308"} {
		fact, ok := acceptedValue([]byte(n))
		if !ok {
			continue // rejected by validation: fine
		}
		if _, err := factcodec.Constant(fact.Args[0]); err != nil {
			t.Fatalf("regression of a fixed bug: protocol/validate.go checkNumber accepts %s (big.Float MantExp is 1024, the test is > 1024) but it overflows float64 and factcodec.Constant fails: %v. Fix: in checkNumber test the conversion itself: if x, _ := f.Float64(); math.IsInf(x, 0) { reject }", n, err)
		}
	}
}

func clauseSeeds() []string {
	return []string{
		`{"head":{"predicate":"p","args":[{"type":"variable","name":"X"}]},"body":[{"predicate":"q","args":[{"type":"variable","name":"X"},{"type":"wildcard"}]}]}`,
		`{"head":{"predicate":"p","args":[{"type":"string","value":"a"},{"type":"number","value":42},{"type":"number","value":4.5},{"type":"number","value":{"_type":"int64","value":"9223372036854775807"}}]}}`,
		`{"head":{"predicate":"p","args":[{"type":"list","elements":[{"type":"number","value":1},{"type":"variable","name":"X"}]}]},"body":[{"predicate":"q","args":[{"type":"variable","name":"X"}],"negated":false},{"predicate":"r","args":[],"negated":true}]}`,
		`{"head":{"predicate":"p","args":[{"type":"map","entries":{"k":{"type":"string","value":"v"},"n":{"type":"map","entries":{}}}}]},"body":null}`,
		`{"head":{"predicate":"p","args":[{"type":"map","entries":{"k":{"type":"variable","name":"Y"}}}]},"body":[{"predicate":"q","args":[{"type":"variable","name":"Y"}]}]}`,
		`{"head":{"predicate":"p","args":[{"type":"number","value":-0},{"type":"number","value":-0.0},{"type":"number","value":1E5},{"type":"list","elements":[]}]}}`,
		`{"head":{"predicate":"p","args":[],"negated":true}}`,
		`{"head":{"predicate":"P","args":[]}}`,
		`{"head":{"predicate":"p","args":[{"type":"variable","name":"X_1"}]}}`,
		`{"head":{"predicate":"p","args":[{"type":"number","value":"1"}]}}`,
		`{"head":{"predicate":"p","args":[{"type":"number","value":{"_type":"int64","value":"+5"}}]}}`,
		`{"head":{"predicate":"p","args":[{"type":"number","value":1e400}]}}`,
		`{"head":{"predicate":"p","args":[{"type":"string","value":"a","name":"X"}]}}`,
		`{"head":{"predicate":"p","args":[{"type":"bytes","value":"a"}]}}`,
		`{"head":{"predicate":"p","args":[{"type":"string"}]}}`,
		`{"head":{"predicate":"p","args":{}}}`,
		`{"head":{"predicate":"p","args":[]},"body":[{"predicate":"q","args":[],"x":1}]}`,
		`{"head":{"predicate":"p","args":[]},"head":{"predicate":"q","args":[]}}`,
		`{"head":{"predicate":"p","args":[{"type":"string","value":"\ud800"}]}}`,
		`{"body":[]}`, `[]`, `null`, `{`,
	}
}

// FuzzClause decodes arbitrary JSON as a structured clause. Errors are
// malformed_message or invalid_facts; an accepted clause re-encodes to the
// same JSON, converts to a Mangle clause and back, and the second
// conversion gives an equal clause.
func FuzzClause(f *testing.F) {
	for _, s := range clauseSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, perr := protocol.DecodeClause(data)
		if perr != nil {
			if _, ok := protocol.Lookup(perr.Code); !ok || perr.Message == "" {
				t.Fatalf("DecodeClause error %q is not a registry error", perr.Code)
			}
			if perr.Code != protocol.CodeMalformedMessage && perr.Code != protocol.CodeInvalidFacts {
				t.Fatalf("DecodeClause code %s, want malformed_message or invalid_facts", perr.Code)
			}
			return
		}
		first, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("accepted clause does not encode: %v", err)
		}
		c2, perr := protocol.DecodeClause(first)
		if perr != nil {
			t.Fatalf("re-encoded clause rejected: %v\n%s", perr, first)
		}
		second, err := json.Marshal(c2)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("clause round trip differs (%v):\n%s\n%s", err, first, second)
		}
		a, err := factcodec.ClauseToAST(c)
		if err != nil {
			t.Fatalf("ClauseToAST rejects a decoded clause: %v\n%s", err, first)
		}
		back, err := factcodec.ClauseFromAST(a)
		if err != nil {
			t.Fatalf("ClauseFromAST rejects what ClauseToAST built (%s): %v", a, err)
		}
		a2, err := factcodec.ClauseToAST(back)
		if err != nil {
			t.Fatalf("ClauseToAST(ClauseFromAST(c)): %v", err)
		}
		if !clauseEqual(a, a2) || a.String() != a2.String() {
			t.Fatalf("AST round trip differs:\n%s\n%s", a, a2)
		}
		if _, err := json.Marshal(back); err != nil {
			t.Fatalf("ClauseFromAST result does not encode: %v", err)
		}
	})
}
