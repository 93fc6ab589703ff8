package protocol

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// factCases are facts of every shape the fast path takes and of shapes it
// leaves to encoding/json, valid and not.
var factCases = []string{
	`{"pred":"a","args":[]}`,
	`{"pred":"a","args":["x",1,-2.5e3,true,false,null]}`,
	` { "pred" : "net_request" , "args" : [ "s1" , "r1" , 200 , 1771510200000 ] } `,
	`{"args":["x"],"pred":"a","category":"session"}`,
	`{"pred":"a","args":null}`,
	`{"pred":"a","args":[],"category":null,"t":null}`,
	`{"pred":"a","args":["x"],"t":{"at":"2026-02-19T14:30:05Z"}}`,
	`{"pred":"a","args":["x"],"t":{"start":1771510200000,"end":"_"}}`,
	`{"pred":"a","args":["x"],"t":{"at":null}}`,
	`{"pred":"a","args":["x"],"t":{}}`,
	`{"pred":"a","args":["x"],"t":{"at":1,"bad":2}}`,
	`{"pred":"a","args":["x"],"t":{"at":[1]}}`,
	`{"pred":"a","args":["x"],"t":5}`,
	`{"pred":"a\u0062","args":["a\"b","\u00e9\ud83d\ude00","\ud800"]}`,
	`{"pred":"é","args":["é"]}`,
	"{\"pred\":\"a\xff\",\"args\":[\"\xfe\"]}",
	`{"pred":"a","args":[[1],{"b":2}]}`,
	`{"pred":"a","args":[{"_type":"int64","value":"9007199254740993"}]}`,
	`{"pred":"a","named_args":{"x":1}}`,
	`{"pred":"a","args":[1],"source":{"source_type":"client"}}`,
	`{"pred":"a","args":[1],"extra":1}`,
	`{"pre\u0064":"a","args":[1]}`,
	`{"pred":1,"args":[1]}`,
	`{"pred":null,"args":[1]}`,
	`{"pred":"a","args":"x"}`,
	`{"pred":"a","category":5}`,
	`{}`, `[]`, `"x"`, `null`, `1`,
	`{"pred":"a","args":[01]}`, `{"pred":"a","args":[1.]}`, `{"pred":"a","args":[-]}`, `{"pred":"a","args":[1e]}`,
	`{"pred":"a","args":[1 2]}`, `{"pred":"a","args":[1,]}`, `{"pred":"a",}`, `{"pred":"a"} x`,
	`{"pred":"a","args":[tru]}`, `{"pred":"a","args":[truex]}`, "{\"pred\":\"a\tb\"}", `{"pred":"a\`,
	`{"pred":"a","args":[1],"args":null}`, `{"pred":"a","category":"x","category":null}`,
	`{"pred":"a","t":{"at":1},"t":null}`, `{"pred":"a","pred":"b","args":[]}`,
}

// decodeBoth decodes raw by the fast path and by encoding/json.
func decodeBoth(raw string) (fast, slow Fact, fastOK bool, slowErr error) {
	fastOK = decodeFactFast([]byte(raw), &fast)
	if err := json.Unmarshal([]byte(raw), &json.RawMessage{}); err != nil {
		return fast, slow, fastOK, err // invalid JSON never reaches UnmarshalJSON
	}
	slowErr = slow.decodeSlow([]byte(raw))
	return fast, slow, fastOK, slowErr
}

// TestDecodeFactFastMatchesSlow: wherever the fast path answers, the
// encoding/json path answers the same fact (every field, unexported ones
// included) without error; and the fast path takes the common shapes.
func TestDecodeFactFastMatchesSlow(t *testing.T) {
	taken := 0
	for _, in := range factCases {
		fast, slow, ok, err := decodeBoth(in)
		if !ok {
			continue
		}
		taken++
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s:\nfast %#v\nslow %#v (%v)", in, fast, slow, err)
		}
	}
	if taken < 15 {
		t.Errorf("the fast path took only %d of the cases", taken)
	}
	for _, in := range factCases[:9] {
		var f Fact
		if !decodeFactFast([]byte(in), &f) {
			t.Errorf("%s: not taken by the fast path", in)
		}
	}
}

// TestDecodeFactsUnchanged: DecodeFacts answers the same facts and
// violations with the fast path as encoding/json alone does.
func TestDecodeFactsUnchanged(t *testing.T) {
	raws := make([]json.RawMessage, len(factCases))
	for i, in := range factCases {
		raws[i] = json.RawMessage(in)
	}
	var valid []json.RawMessage
	for _, r := range raws {
		if json.Valid(r) {
			valid = append(valid, r)
		}
	}
	facts, vs := DecodeFacts(valid)
	for i, raw := range valid {
		var want Fact
		err := want.decodeSlow(raw)
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(facts[i], want) {
			t.Errorf("%s: %#v, want %#v", raw, facts[i], want)
		}
	}
	got := fmt.Sprint(vs)
	for _, v := range vs {
		var f Fact
		if f.decodeSlow(valid[v.FactIndex]) == nil {
			t.Errorf("violation for a fact encoding/json decodes: %v", v)
		}
	}
	if !strings.Contains(got, "malformed_fact") {
		t.Errorf("no malformed facts among the cases: %s", got)
	}
}

func FuzzDecodeFactFast(f *testing.F) {
	for _, in := range factCases {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		fast, slow, ok, err := decodeBoth(in)
		if ok && (err != nil || !reflect.DeepEqual(fast, slow)) {
			t.Errorf("%q:\nfast %#v\nslow %#v (%v)", in, fast, slow, err)
		}
	})
}

// TestValidPredicateNameMatchesRegexp: the byte loop accepts exactly what
// ^[a-z][a-z0-9_]*$ matches.
func TestValidPredicateNameMatchesRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for _, s := range []string{"", "a", "net_request", "a1_", "_a", "1a", "A", "aB", "a-b", "a b", "a\n", "é", "a\x00", "zz9", "a.b"} {
		if got, want := validPredicateName(s), re.MatchString(s); got != want {
			t.Errorf("validPredicateName(%q) = %v, regexp %v", s, got, want)
		}
	}
}

func FuzzValidPredicateName(f *testing.F) {
	re := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	f.Add("net_request")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validPredicateName(s), re.MatchString(s); got != want {
			t.Errorf("validPredicateName(%q) = %v, regexp %v", s, got, want)
		}
	})
}

// TestCheckValueShortcuts: the shortcuts for strings and integers answer
// as the general path does, for every declared type.
func TestCheckValueShortcuts(t *testing.T) {
	values := []any{"", "x", json.Number("0"), json.Number("-12"), json.Number("9223372036854775807"), json.Number("9223372036854775808"),
		json.Number("1.5"), json.Number("4e2"), json.Number("-0"), json.Number("007")}
	for _, v := range values {
		for _, want := range []string{"", ArgAny, ArgString, ArgNumber, ArgBoolean, "custom"} {
			n1, g1, m1 := checkValue(v, want)
			n2, g2, m2 := checkValueSlow(v, want)
			if fmt.Sprintf("%#v %q %q", n1, g1, m1) != fmt.Sprintf("%#v %q %q", n2, g2, m2) {
				t.Errorf("checkValue(%#v, %q) = %#v %q %q, general path %#v %q %q", v, want, n1, g1, m1, n2, g2, m2)
			}
		}
	}
}

// TestDecodeFactsArenaChunks: facts decoded through the arena's shared
// chunks (many facts, long and short text, across chunk boundaries) are
// those encoding/json decodes, and appending to one fact's arguments
// leaves the others alone.
func TestDecodeFactsArenaChunks(t *testing.T) {
	var raws []json.RawMessage
	for i := range 3000 {
		long := strings.Repeat(fmt.Sprint(i%10), i%3000)
		raws = append(raws, json.RawMessage(fmt.Sprintf(`{"pred":"p%d","args":["s%d",%d,"%s",true,null,-1.5e%d]}`, i%7, i, i*1000, long, i%5)))
	}
	facts := decodeLikeSlow(t, raws)
	_ = append(facts[0].Args, "x")
	if facts[1].Args[0] != "s1" {
		t.Errorf("appending to fact 0's arguments changed fact 1's: %v", facts[1].Args)
	}
}

// TestDecodeFactsRecentArgs: arguments shared with the last fact of the
// same predicate (recentArgs) decode as encoding/json decodes them: the
// same text as a string and as a number, the same text at another
// position or under another predicate, more predicates than recent holds,
// positions beyond recentArity, escaped strings next to plain ones, and
// "args" before "pred" or twice.
func TestDecodeFactsRecentArgs(t *testing.T) {
	preds := []string{"a", "b", "a", "c", "d", "e", "f", "a", "a", "b"}
	var raws []json.RawMessage
	for i := range 2000 {
		p := preds[i%len(preds)]
		var args []string
		switch i % 4 {
		case 0:
			args = []string{`"12"`, `12`, `"s1"`, `"x"`}
		case 1:
			args = []string{`12`, `"12"`, `"s1"`, `"x\u0079"`}
		case 2:
			args = []string{`"s1"`, `"12"`, `12.0`, `"x"`, `1`, `2`, `3`, `4`, `"nine"`, `"ten"`}
		default:
			args = []string{`"s1"`, fmt.Sprint(i % 3), `"é"`, `null`, `true`, `"x"`, `"x"`, `"x"`, `"nine"`, fmt.Sprintf(`"%d"`, i%2)}
		}
		list := strings.Join(args, ",")
		switch i % 3 {
		case 0:
			raws = append(raws, json.RawMessage(fmt.Sprintf(`{"pred":%q,"args":[%s]}`, p, list)))
		case 1: // the arguments first, as encoders that sort keys write them
			raws = append(raws, json.RawMessage(fmt.Sprintf(`{"args":[%s],"category":"session","pred":%q}`, list, p)))
		default: // two "args": the last counts
			raws = append(raws, json.RawMessage(fmt.Sprintf(`{"args":["first"],"pred":%q,"args":[%s]}`, p, list)))
		}
	}
	decodeLikeSlow(t, raws)
}

// decodeLikeSlow decodes raws with DecodeFacts, failing t unless every
// fact is valid and what encoding/json decodes, and returns the facts.
func decodeLikeSlow(t *testing.T, raws []json.RawMessage) []Fact {
	t.Helper()
	facts, vs := DecodeFacts(raws)
	if len(vs) > 0 {
		t.Fatalf("violations: %v", vs)
	}
	for i, raw := range raws {
		var want Fact
		if err := want.decodeSlow(raw); err != nil || !reflect.DeepEqual(facts[i], want) {
			t.Fatalf("fact %d: %#v, want %#v (%v)", i, facts[i], want, err)
		}
	}
	return facts
}

// FuzzDecodeFactsList: a list of facts long enough for the arena (its
// shared chunks, repeated predicates and recent arguments) decodes each
// fact as encoding/json does. The input's lines are the facts, repeated
// to arenaFacts and more.
func FuzzDecodeFactsList(f *testing.F) {
	f.Add(strings.Join(factCases, "\n"))
	f.Add("{\"pred\":\"a\",\"args\":[\"12\",12]}\n{\"pred\":\"a\",\"args\":[12,\"12\"]}\n{\"pred\":\"b\",\"args\":[\"12\"]}")
	f.Fuzz(func(t *testing.T, in string) {
		var raws []json.RawMessage
		for _, line := range strings.Split(in, "\n") {
			if json.Valid([]byte(line)) {
				raws = append(raws, json.RawMessage(line))
			}
		}
		if len(raws) == 0 {
			return
		}
		for len(raws) < 2*arenaFacts {
			raws = append(raws, raws...)
		}
		facts, _ := DecodeFacts(raws)
		for i, raw := range raws {
			var want Fact
			if want.decodeSlow(raw) == nil && !reflect.DeepEqual(facts[i], want) {
				t.Fatalf("fact %d %s: %#v, want %#v", i, raw, facts[i], want)
			}
		}
	})
}
