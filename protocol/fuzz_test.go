package protocol_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// The fuzz targets of this file check the invariants of docs/RELIABILITY.md
// on arbitrary bytes: decoding never panics, every rejection is a registry
// error, a readable id is echoed, and whatever is accepted survives a JSON
// round trip unchanged. `go test` runs their seed corpora; scripts/fuzz.sh
// runs them for real.

// fuzzProfile covers every argument type, named args, a temporal predicate,
// an output predicate and a predicate without arg_names.
func fuzzProfile() *protocol.FactsProfile {
	return &protocol.FactsProfile{
		TimeFormats: []string{"rfc3339", "epoch_ms"},
		Predicates: []protocol.PredicateSchema{
			{Predicate: "current_url", Arity: 1, ArgTypes: []string{protocol.ArgString}, ArgNames: []string{"url"}, Direction: protocol.DirectionInput},
			{Predicate: "console_event", Arity: 4, ArgTypes: []string{protocol.ArgString, protocol.ArgString, protocol.ArgString, protocol.ArgNumber},
				ArgNames: []string{"session_id", "level", "message", "timestamp"}, Temporal: true, Direction: protocol.DirectionBoth},
			{Predicate: "flag", Arity: 1, ArgTypes: []string{protocol.ArgBoolean}, ArgNames: []string{"on"}},
			{Predicate: "anyp", Arity: 2, ArgTypes: []string{protocol.ArgAny, protocol.ArgAny}, ArgNames: []string{"a", "b"}, Temporal: true},
			{Predicate: "untyped", Arity: 1},
			{Predicate: "nullary", Arity: 0},
			{Predicate: "derived_thing", Arity: 1, ArgTypes: []string{protocol.ArgString}, Direction: protocol.DirectionOutput},
			{Predicate: "nonames", Arity: 2, ArgTypes: []string{protocol.ArgString, protocol.ArgNumber}},
		},
	}
}

// knownIssues are the violation issues that are not registry codes.
var knownIssues = map[protocol.Code]bool{
	protocol.IssueInvalidPredicateName: true, protocol.IssueOutputPredicate: true, protocol.IssueArgsAndNamedArgs: true,
	protocol.IssueMissingArgs: true, protocol.IssueUnknownNamedArg: true, protocol.IssueMissingNamedArg: true,
	protocol.IssueNamedArgsUnsupported: true, protocol.IssueInvalidTemporal: true, protocol.IssueNotTemporal: true,
	protocol.IssueInvalidCategory: true, protocol.IssueInvalidSource: true, protocol.IssueWildcardNotAllowed: true,
	protocol.IssueMissingRequiredFact: true, protocol.IssueMalformedFact: true,
}

// registered fails the test unless e is a registry error with a message.
func registered(t *testing.T, what string, e *protocol.Error) {
	t.Helper()
	if e == nil {
		t.Fatalf("%s: nil *protocol.Error", what)
	}
	if _, ok := protocol.Lookup(e.Code); !ok {
		t.Fatalf("%s: code %q is not in the registry", what, e.Code)
	}
	if e.Message == "" {
		t.Fatalf("%s: %s without a message", what, e.Code)
	}
	if e.Recoverable != e.Code.Recoverable() {
		t.Fatalf("%s: recoverable %v disagrees with the registry", what, e.Recoverable)
	}
}

// outOfRangeTime reports whether a time cannot be written as RFC 3339
// (years 0000 to 9999): see TestTimeOutsideRFC3339Range.
func outOfRangeTime(t *protocol.Time) bool {
	return t != nil && (t.Year() < 0 || t.Year() > 9999)
}

func envelopeSeeds() []string {
	env := func(typ, id, payload string) string {
		return `{"type":` + typ + `,"id":` + id + `,"manglecp":"2026-02-draft","payload":` + payload + `}`
	}
	return []string{
		env(`"intent_request"`, `"req-1"`, `{"intent":{"name":"diagnose_error","params":{"severity":"critical"}},"facts":[{"pred":"current_url","args":["https://app.example.com"]},{"pred":"console_event","args":["s1","error","TypeError",1771511400000],"t":{"at":"2026-02-19T14:30:00Z"}}],"eval_time":"2026-02-19T14:30:05Z","constraints":{"max_facts_created":100,"max_tools_returned":3},"options":{"include_proof_hints":true,"disclosure_preference":"full","x-include_rule_coverage":true}}`),
		env(`"intent_request"`, `"req-2"`, `{"intent":{"name":"observe"},"facts":[{"pred":"current_url","named_args":{"url":"u"}}],"eval_time":1771511400000}`),
		env(`"invoke_request"`, `"inv-1"`, `{"macro_id":"diagnose_causal_chain-0123456789abcdef","args":{"request_id":"r42","include_network":false},"eval_time":"2026-02-19T14:30:05.123456789+01:00","confirmation_token":"tok"}`),
		env(`"invoke_request"`, `"inv-2"`, `{"macro_id":"m","args":{"n":9007199254740993,"w":{"_type":"int64","value":"9223372036854775807"},"f":1.5e300,"l":[1,"a",null,true],"m":{}}}`),
		env(`"authenticate"`, `"a1"`, `{"scheme":"bearer","token":"0123456789abcdef"}`),
		env(`"cancel"`, `null`, `{"request_id":"req-1"}`),
		env(`"intent_request"`, `"v"`, `{}`)[:40],
		env(`"intent_request"`, `"v1"`, `{"intent":{"name":"a","name":"b"}}`),
		env(`"intent_request"`, `"v2"`, `{"intent":{"Name":"a"}}`),
		env(`"intent_request"`, `"v3"`, `{"intent":{"name":"observe"},"facts":{},"eval_time":9223372036854775807}`),
		env(`"intent_request"`, `"v4"`, `{"intent":{"name":"observe"},"constraints":{"max_compute_ms":9223372036854775808}}`),
		env(`"intent_request"`, `"v5"`, `{"intent":{"name":"observe"},"facts":[{"pred":"x","args":[1],"extra":1}]}`),
		env(`"invoke_request"`, `"v6"`, `{"macro_id":1,"args":[]}`),
		env(`"intent_request"`, `7`, `{}`),
		env(`"nope"`, `"t1"`, `{}`),
		env(`"intent_request"`, `""`, `{}`),
		`{"type":"intent_request","id":"x","manglecp":"2025-01-draft","payload":{}}`,
		`{"type":"intent_request","id":"x","manglecp":"2026-02-draft","payload":[]}`,
		`{"type":"intent_request","id":"x","manglecp":"2026-02-draft","payload":{},"extra":1}`,
		`{"type":"intent_request","id":"x","manglecp":"2026-02-draft"}`,
		"\xEF\xBB\xBF" + env(`"intent_request"`, `"bom"`, `{}`),
		env(`"intent_request"`, `"bad-`+"\xff"+`"`, `{}`),
		env(`"intent_request"`, `"deep"`, `{"intent":{"name":"a","params":{"p":`+strings.Repeat("[", 70)+strings.Repeat("]", 70)+`}}}`),
		`{"type":"intent_request","id":"n","manglecp":"2026-02-draft","payload":{"facts":[NaN]}}`,
		`{"type":"intent_request","id":"n","manglecp":"2026-02-draft","payload":{}} {}`,
		``, `null`, `[]`, `"x"`, `{}`, `{"id":"only"}`,
	}
}

// FuzzDecodeEnvelope decodes arbitrary bytes as an envelope and its payload
// as every request payload type.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		env, perr := protocol.DecodeEnvelope(data)
		id, readable := testenv.ReadableID(data, protocol.MaxNestingDepth)
		if readable && (env == nil || env.ID == nil || *env.ID != id) {
			t.Fatalf("the id %q was readable but not echoed (err %v)", id, perr)
		}
		if env != nil && env.ID != nil && !readable {
			t.Fatalf("an id %q was returned although the oracle could not read one", *env.ID)
		}
		if perr != nil {
			registered(t, "DecodeEnvelope", perr)
			// The error envelope itself must encode and decode again.
			raw, err := protocol.ErrorEnvelope(env.IDString(), perr).Encode()
			if err != nil {
				t.Fatalf("error envelope does not encode: %v", err)
			}
			if back, e := protocol.DecodeEnvelope(raw); e != nil || back.Type != protocol.TypeError || back.IDString() != env.IDString() {
				t.Fatalf("error envelope does not decode: %v %s", e, raw)
			}
			return
		}
		if !env.Type.Known() || env.Version != protocol.Version {
			t.Fatalf("accepted type %q version %q", env.Type, env.Version)
		}
		if env.Type.IsRequest() && env.IDString() == "" {
			t.Fatalf("accepted %s without an id", env.Type)
		}
		raw, err := env.Encode()
		if err != nil {
			t.Fatalf("accepted envelope does not encode: %v", err)
		}
		again, perr := protocol.DecodeEnvelope(raw)
		if perr != nil {
			t.Fatalf("re-encoded envelope rejected: %v\n%s", perr, raw)
		}
		if again.Type != env.Type || again.IDString() != env.IDString() || !jsonEqual(again.Payload, env.Payload) {
			t.Fatalf("envelope round trip differs:\n%s\n%s", data, raw)
		}
		payloadRoundTrip(t, env.Payload, func() any { return new(protocol.IntentRequest) })
		payloadRoundTrip(t, env.Payload, func() any { return new(protocol.InvokeRequest) })
		payloadRoundTrip(t, env.Payload, func() any { return new(protocol.Authenticate) })
		payloadRoundTrip(t, env.Payload, func() any { return new(protocol.Cancel) })
	})
}

// payloadRoundTrip decodes payload strictly into a fresh value; an accepted
// payload must encode, decode again and encode to the same bytes.
func payloadRoundTrip(t *testing.T, payload json.RawMessage, fresh func() any) {
	t.Helper()
	v := fresh()
	if perr := protocol.DecodePayload(payload, v); perr != nil {
		registered(t, "DecodePayload", perr)
		if perr.Code != protocol.CodeMalformedMessage {
			t.Fatalf("DecodePayload %T: code %s, want malformed_message", v, perr.Code)
		}
		return
	}
	if r, ok := v.(*protocol.IntentRequest); ok && outOfRangeTime(r.EvalTime) {
		t.Fatal("regression of a fixed bug (TestTimeOutsideRFC3339Range): an eval_time outside years 0000-9999 does not encode as RFC 3339")
	}
	if r, ok := v.(*protocol.InvokeRequest); ok && outOfRangeTime(r.EvalTime) {
		t.Fatal("regression of a fixed bug (TestTimeOutsideRFC3339Range): an eval_time outside years 0000-9999 does not encode as RFC 3339")
	}
	first, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("accepted %T does not encode: %v", v, err)
	}
	w := fresh()
	if perr := protocol.DecodePayload(first, w); perr != nil {
		t.Fatalf("re-encoded %T rejected: %v\n%s", v, perr, first)
	}
	second, err := json.Marshal(w)
	if err != nil {
		t.Fatalf("re-decoded %T does not encode: %v", w, err)
	}
	if !bytes.Equal(first, second) {
		t.Fatalf("%T round trip differs:\n%s\n%s", v, first, second)
	}
}

// jsonEqual compares two JSON texts by value (encoding/json escapes <, >
// and & when it re-encodes a RawMessage, so bytes may differ).
func jsonEqual(a, b []byte) bool {
	var x, y any
	for _, p := range []struct {
		raw []byte
		v   *any
	}{{a, &x}, {b, &y}} {
		dec := json.NewDecoder(bytes.NewReader(p.raw))
		dec.UseNumber()
		if dec.Decode(p.v) != nil {
			return false
		}
	}
	return reflect.DeepEqual(x, y)
}

func factSeeds() []string {
	return []string{
		`[{"pred":"current_url","args":["https://example.com"]}]`,
		`[{"pred":"current_url","named_args":{"url":"u"}}]`,
		`[{"pred":"console_event","args":["s1","error","TypeError",1771511400000],"t":{"at":"2026-02-19T14:30:00Z"}}]`,
		`[{"pred":"console_event","named_args":{"session_id":"s","level":"l","message":"m","timestamp":1.5},"t":{"start":"_","end":"now"}}]`,
		`[{"pred":"console_event","args":["s","l","m",{"_type":"int64","value":"9223372036854775807"}],"t":{"start":0,"end":1771511400000}}]`,
		`[{"pred":"console_event","args":["s","l","m",{"_type":"int64","value":"9223372036854775808"}]}]`,
		`[{"pred":"console_event","args":["s","l","m",{"_type":"int64","value":"+5"}]}]`,
		`[{"pred":"console_event","args":["s","l","m",9223372036854775808]}]`,
		`[{"pred":"console_event","args":["s","l","m",1e400]}]`,
		`[{"pred":"console_event","args":["s","l","m",1.7976931348623157e308]}]`,
		`[{"pred":"console_event","args":["s","l","m",-0.0]},{"pred":"console_event","args":["s","l","m",1e-400]}]`,
		`[{"pred":"console_event","args":["s","l","m","NaN"]}]`,
		`[{"pred":"console_event","args":["s","l","m",1],"t":{"at":"_"}}]`,
		`[{"pred":"console_event","args":["s","l","m",1],"t":{"start":"2026-02-19T14:30:00Z","end":"2026-02-19T14:00:00Z"}}]`,
		`[{"pred":"console_event","args":["s","l","m",1],"t":{"at":1,"start":2}}]`,
		`[{"pred":"console_event","args":["s","l","m",1],"t":{"at":1,"x":2}}]`,
		`[{"pred":"flag","args":[true]},{"pred":"flag","named_args":{"on":"yes"}}]`,
		`[{"pred":"anyp","args":[[1,"a",[true,{"k":{"_type":"int64","value":"-9223372036854775808"}}]],{"m":{"n":1.25}}]}]`,
		`[{"pred":"anyp","args":[[1,null],{"k":null}]}]`,
		`[{"pred":"anyp","args":[{"_type":"int64","value":"1","x":1},{"_type":"float","value":"1"}]}]`,
		`[{"pred":"anyp","named_args":{"a":1,"c":2}}]`,
		`[{"pred":"untyped","args":[{"deep":[[[[1]]]]}]},{"pred":"nullary","args":[]},{"pred":"nullary"}]`,
		`[{"pred":"nonames","named_args":{"x":"a"}},{"pred":"nonames","args":["a",2],"named_args":{}}]`,
		`[{"pred":"derived_thing","args":["x"]},{"pred":"_manglecp_x","args":[]},{"pred":"Bad-Name","args":[]},{"pred":""}]`,
		`[{"pred":"curent_url","args":["u"]},{"pred":"current_url","args":["a","b"]}]`,
		`[{"pred":"current_url","args":[null]},{"pred":"current_url","args":["u"],"category":"server"}]`,
		`[{"pred":"current_url","args":["u"],"source":{"source_type":"scan","source_id":"x","asserted_at":"2026-02-19T14:30:00Z"}},{"pred":"current_url","args":["u"],"source":{}},{"pred":"current_url","args":["u"],"source":{"nope":1}}]`,
		`[1,"x",null,[],{"pred":1},{"pred":"current_url","args":"u"},{"pred":"current_url","args":["u"],"t":"now"}]`,
		`[{"pred":"current_url","args":["\ud800"]},{"pred":"current_url","args":["` + strings.Repeat("é", 100) + `"]}]`,
	}
}

// FuzzFacts decodes and validates arbitrary JSON fact lists against a
// profile covering every argument type, in both modes. Accepted facts
// must encode, decode and validate again to the same facts.
func FuzzFacts(f *testing.F) {
	for _, s := range factSeeds() {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`[{"pred":"console_event","args":[null,null,"m",null]}]`), true)
	f.Fuzz(func(t *testing.T, data []byte, pattern bool) {
		var raws []json.RawMessage
		if json.Unmarshal(data, &raws) != nil {
			return
		}
		mode := protocol.Assert
		if pattern {
			mode = protocol.Pattern
		}
		profile := fuzzProfile()
		facts, vs := protocol.DecodeFacts(raws)
		if len(facts) != len(raws) {
			t.Fatalf("DecodeFacts returned %d facts for %d", len(facts), len(raws))
		}
		skip := map[int]bool{}
		for _, v := range vs {
			skip[v.FactIndex] = true
		}
		snapshot, _ := json.Marshal(facts)
		out, more := protocol.ValidateFacts(facts, profile, mode, skip)
		if after, _ := json.Marshal(facts); !bytes.Equal(snapshot, after) {
			t.Fatalf("ValidateFacts modified its input")
		}
		vs = append(vs, more...)
		bad := map[int]bool{}
		for _, v := range vs {
			if v.FactIndex < 0 || v.FactIndex >= len(raws) {
				t.Fatalf("violation index %d out of range: %+v", v.FactIndex, v)
			}
			if _, ok := protocol.Lookup(v.Issue); !ok && !knownIssues[v.Issue] {
				t.Fatalf("violation issue %q is neither a registry code nor a documented issue", v.Issue)
			}
			if v.Message == "" {
				t.Fatalf("violation without a message: %+v", v)
			}
			bad[v.FactIndex] = true
		}
		if len(out)+len(bad) != len(raws) {
			t.Fatalf("%d accepted + %d rejected facts != %d facts", len(out), len(bad), len(raws))
		}
		if len(vs) > 0 {
			registered(t, "FactsError", protocol.FactsError(vs))
		}
		for _, fact := range out {
			checkAccepted(t, fact, profile, mode)
		}
	})
}

// checkAccepted checks one normalized fact: positional, of the profile's
// arity, and unchanged by an encode, decode, validate round trip.
func checkAccepted(t *testing.T, fact protocol.Fact, profile *protocol.FactsProfile, mode protocol.FactMode) {
	t.Helper()
	schema := profile.Predicate(fact.Pred)
	if schema == nil || len(fact.Args) != schema.Arity || fact.NamedArgs != nil {
		t.Fatalf("accepted fact is not normalized: %+v", fact)
	}
	if mode == protocol.Assert && fact.Category != protocol.CategorySession {
		t.Fatalf("accepted asserted fact has category %q", fact.Category)
	}
	first, err := json.Marshal(fact)
	if err != nil {
		if strings.Contains(err.Error(), "invalid number literal") {
			t.Fatal("regression of a fixed bug (TestInt64WrapperNotCanonical): an accepted int64 wrapper becomes a json.Number that does not encode: " + err.Error())
		}
		t.Fatalf("accepted fact does not encode: %v", err)
	}
	again, vs := protocol.DecodeFacts([]json.RawMessage{first})
	if len(vs) > 0 {
		t.Fatalf("re-encoded fact is malformed: %+v\n%s", vs, first)
	}
	out, vs := protocol.ValidateFacts(again, profile, mode, nil)
	if len(vs) > 0 || len(out) != 1 {
		t.Fatalf("re-encoded fact rejected: %+v\n%s", vs, first)
	}
	second, err := json.Marshal(out[0])
	if err != nil {
		t.Fatalf("re-validated fact does not encode: %v", err)
	}
	if !bytes.Equal(first, second) {
		t.Fatalf("fact round trip differs:\n%s\n%s", first, second)
	}
	if !reflect.DeepEqual(normalize(t, first), normalize(t, second)) {
		t.Fatalf("fact values differ after a round trip")
	}
}

func normalize(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestInt64WrapperNotCanonical: the int64 wrapper's value is parsed with
// strconv.ParseInt, which accepts "+404" and "0404"; ValidateFacts then
// normalizes the wrapper to json.Number("+404"), which is not a JSON
// number. Any later json.Marshal of the fact fails: through the server the
// intent_response (proof hints, invoke results echoing facts) becomes a
// masked internal_error (HTTP 500) for an input that validation accepted.
func TestInt64WrapperNotCanonical(t *testing.T) {
	for _, v := range []string{"+404", "0404", "-0404", "+0"} {
		raw := json.RawMessage(`{"pred":"console_event","args":["s","l","m",{"_type":"int64","value":"` + v + `"}]}`)
		facts, _ := protocol.DecodeFacts([]json.RawMessage{raw})
		out, vs := protocol.ValidateFacts(facts, fuzzProfile(), protocol.Assert, nil)
		if len(vs) > 0 {
			continue // rejected: fine
		}
		if _, err := json.Marshal(out[0]); err != nil {
			t.Fatalf("regression of a fixed bug: protocol/validate.go unwrapInt64 returns json.Number(%q) for the wrapper value %q; json.Marshal of the accepted fact fails (%v) and the server answers internal_error. Fix: return json.Number(strconv.FormatInt(n, 10)) (canonical decimal) from unwrapInt64, or reject values whose text is not the canonical decimal", v, v, err)
		}
	}
}

// TestTimeOutsideRFC3339Range: protocol.Time accepts epoch milliseconds of
// any int64, but MarshalJSON writes time.Format output, which is not RFC
// 3339 outside years 0000-9999 ("292278994-08-17T07:12:55.807Z"): the
// server's eval_time_used cannot be parsed back, and the kernel converts
// such times with UnixNano, which overflows outside 1678-2262.
func TestTimeOutsideRFC3339Range(t *testing.T) {
	// Found by FuzzDecodeEnvelope: an offset carries the time out of the
	// years RFC 3339 writes once in UTC. Both are refused.
	for _, in := range []string{`"0000-01-01T00:00:00+01:00"`, `"9999-12-31T23:30:00-01:00"`} {
		var tm protocol.Time
		if err := json.Unmarshal([]byte(in), &tm); err == nil {
			t.Errorf("%s accepted as %v", in, tm.Time)
		}
	}
	for _, in := range []string{`"0000-01-01T00:00:00-01:00"`, `"9999-12-31T23:30:00+01:00"`, `"9999-12-31T23:59:59Z"`} {
		var tm protocol.Time
		if err := json.Unmarshal([]byte(in), &tm); err != nil {
			t.Errorf("%s refused: %v", in, err)
		}
	}
	var tm protocol.Time
	if err := json.Unmarshal([]byte(`9223372036854775807`), &tm); err != nil {
		return // rejected: fine
	}
	raw, err := json.Marshal(tm)
	if err != nil {
		return // refused to encode: fine, the server masks it
	}
	var back protocol.Time
	if err := json.Unmarshal(raw, &back); err != nil || !back.Equal(tm.Time) {
		t.Fatalf("regression of a fixed bug: protocol/messages.go ParseTime accepts epoch ms %d (year %d) but Time.MarshalJSON writes %s, which Time.UnmarshalJSON rejects (%v). Fix: in ParseTime reject instants outside what the engine represents, [time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)] (years 1677-2262), as a malformed eval_time and an invalid_temporal violation for \"t\" bounds", int64(9223372036854775807), tm.Year(), raw, err)
	}
}
