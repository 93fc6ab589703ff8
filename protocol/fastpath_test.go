package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// listWire is an intent request's payload with its facts kept raw, as the
// server decodes it.
type listWire struct {
	Intent      *Intent           `json:"intent"`
	Facts       []json.RawMessage `json:"facts"`
	EvalTime    *Time             `json:"eval_time"`
	Constraints *Constraints      `json:"constraints"`
	Options     *Options          `json:"options"`
}

var payloadCases = []string{
	`{}`,
	`{"intent":{"name":"x"},"facts":[]}`,
	`{"intent":{"name":"x"},"facts":[{"pred":"a","args":[1]}, {"pred":"b"} ,"s",1,null,[1,[2]],{"x":{"y":"]}\"["}}]}`,
	` { "facts" : [ 1 ] , "intent" : { "name" : "x" } } `,
	`{"intent":{"name":"x"},"facts":null}`,
	`{"intent":{"name":"x"},"facts":{}}`,
	`{"intent":{"name":"x"},"facts":"x"}`,
	`{"intent":{"name":"x"},"facts":[1],"bogus":1}`,
	`{"intent":{"name":1},"facts":[1]}`,
	`{"intent":{"Name":"x"},"facts":[1]}`,
	`{"intent":{"name":"x"},"facts":[1],"constraints":{"max_compute_ms":"x"}}`,
	`{"intent":{"name":"x"},"facts":[1],"constraints":{"max_compute_ms":1.5}}`,
	`{"intent":{"name":"x"},"facts":[1],"eval_time":"nope"}`,
	`{"intent":{"name":"x"},"facts":[1],"eval_time":"2026-02-19T14:30:05Z","options":{"include_proof_hints":true}}`,
	`{"intent":{"name":"x"},"fact\u0073":[1]}`,
	`{"intent":{"name":"x"},"facts":[1],"\u0062ogus":1}`,
	`{"facts":[1],"intent":{"name":"x","params":{"a":[1,{"b":null}]}},"options":{"disclosure_preference":"full","x-include_rule_coverage":true}}`,
	`{"intent":null,"facts":[{"pred":"a"}],"options":null}`,
	`{"intent":{"name":"x"},"facts":[1],"intent2":{}}`,
	`{"intent":{"name":"x","bogus":1},"facts":[1]}`,
	`{"intent":{"n\u0061me":"x"},"facts":[1]}`,
	`{"intent":{"name":"x"},"facts":[1],"constraints":{"max_compute_ms":5,"zz":1,"aa":2}}`,
	`{"intent":{"name":"x"},"facts":[1],"options":{"include_proof_hints":"yes"}}`,
	`{"intent":{"name":"x"},"facts":[1],"options":[]}`,
	`{"intent":"x","facts":[1]}`,
	`{"facts":[],"facts2":[]}`,
	` {"intent" : {"name" : "x" , "params" : {"k" : [ {"a" : 1} ] } } , "facts" : [ {"pred" : "a"} ] } `,
	`{"intent":{"name":"x","facts":[9]},"facts":[{"facts":[8]},[[7]]],"options":{"facts":[6]}}`,
	`{"facts":[ ],"intent":{"name":"x"}}`,
	"{\"facts\":[\n\t{\"pred\":\"a\"}\r\n,\t\"}\\\"\" ,-1.5e3,true,false],\"intent\":{\"name\":\"x\"}}",
	`{"intent":{"name":"x"},"facts":[{"pred":"\u00e9"}, "\ud83d\ude00", {"pred":"é"}]}`,
}

// decodeList decodes payload as a message read by DecodeEnvelope, by
// DecodePayloadList and by DecodePayload of the whole. The payload is the
// message's last member, or its first (first), which the one-pass scan
// handles differently. DecodePayloadList is checked twice: with the items
// DecodeEnvelope split (when it did), and splitting them itself; both
// must answer alike, and fast is the first answer.
func decodeList(t testing.TB, payload string, first bool) (fast, slow listWire, fastErr, slowErr *Error, ok bool) {
	msg := `{"type":"intent_request","id":"1","manglecp":"` + Version + `","payload":` + payload + `}`
	if first {
		msg = "{ \"payload\" :" + payload + " ,\n" + `"type":"intent_request","id":"1","manglecp":"` + Version + `"}`
	}
	env, perr := DecodeEnvelope([]byte(msg))
	if perr != nil {
		return fast, slow, nil, nil, false
	}
	if !env.checked {
		t.Fatalf("DecodeEnvelope did not mark %s checked", payload)
	}
	fastErr = DecodePayloadList(env, &fast, "facts", &fast.Facts)
	if env.list != nil {
		var split listWire
		unsplit := *env
		unsplit.list = nil
		splitErr := DecodePayloadList(&unsplit, &split, "facts", &split.Facts)
		if d := sameList(fast, split, fastErr, splitErr); d != "" {
			t.Errorf("%s: the items DecodeEnvelope split: %s; split again", payload, d)
		}
	}
	// Into a kept list too small for the items, and into one with room.
	for _, room := range []int{1, 4096} {
		facts := make([]json.RawMessage, 0, room)
		envInto, used, perr := DecodeEnvelopeInto([]byte(msg), facts)
		if perr != nil {
			t.Fatalf("%s: DecodeEnvelopeInto refused what DecodeEnvelope accepted: %v", payload, perr)
		}
		var into listWire
		intoErr := DecodePayloadList(envInto, &into, "facts", &into.Facts)
		if d := sameList(fast, into, fastErr, intoErr); d != "" {
			t.Errorf("%s: DecodeEnvelopeInto (room %d): %s", payload, room, d)
		}
		for i, it := range facts[:cap(facts)] {
			if it != nil && !(sameArray(used, facts) && i < len(used)) {
				t.Errorf("%s: the kept list (room %d) holds item %d outside the items returned", payload, room, i)
			}
		}
	}
	slowErr = DecodePayload(env.Payload, &slow)
	return fast, slow, fastErr, slowErr, true
}

func sameList(fast, slow listWire, fastErr, slowErr *Error) string {
	fe, _ := json.Marshal(fastErr)
	se, _ := json.Marshal(slowErr)
	if !bytes.Equal(fe, se) {
		return fmt.Sprintf("error %s, whole payload %s", fe, se)
	}
	if fastErr != nil {
		return ""
	}
	if len(fast.Facts) != len(slow.Facts) {
		return fmt.Sprintf("facts %q, whole payload %q", fast.Facts, slow.Facts)
	}
	for i := range fast.Facts {
		if !bytes.Equal(fast.Facts[i], slow.Facts[i]) {
			return fmt.Sprintf("fact %d %q, whole payload %q", i, fast.Facts[i], slow.Facts[i])
		}
	}
	fast.Facts, slow.Facts = nil, nil
	if !reflect.DeepEqual(fast, slow) {
		return fmt.Sprintf("%#v, whole payload %#v", fast, slow)
	}
	return ""
}

// TestDecodePayloadListMatchesDecodePayload: splitting the facts off the
// payload answers exactly what decoding the whole payload answers: the
// same error, or the same values and the same raw facts.
func TestDecodePayloadListMatchesDecodePayload(t *testing.T) {
	for _, in := range payloadCases {
		for _, first := range []bool{false, true} {
			fast, slow, fe, se, ok := decodeList(t, in, first)
			if !ok {
				t.Errorf("%s: the envelope does not decode", in)
				continue
			}
			if d := sameList(fast, slow, fe, se); d != "" {
				t.Errorf("%s (payload first: %v): %s", in, first, d)
			}
		}
	}
}

// TestDecodeEnvelopeSplitsFacts: the one-pass check splits payload.facts,
// and only that array, wherever the payload is among the members.
func TestDecodeEnvelopeSplitsFacts(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		items []string // nil: not split by DecodeEnvelope
	}{
		{`{"type":"intent_request","id":"1","manglecp":"` + Version + `","payload":{"facts":[1, {"a":[2]} ,"3"]}}`, []string{`1`, `{"a":[2]}`, `"3"`}},
		{`{"payload":{"intent":{"facts":[0]},"facts":[ ]},"type":"intent_request","id":"1","manglecp":"` + Version + `"}`, []string{}},
		{`{"type":"intent_request","id":"1","manglecp":"` + Version + `","payload":{"intent":{"facts":[0]}}}`, nil},
		{`{"type":"intent_request","id":"1","manglecp":"` + Version + `","facts":[1],"payload":{}}`, nil},
		{`{"type":"intent_request","id":"1","manglecp":"` + Version + `","payload":{"facts":{"a":[1]}}}`, nil},
		{`{"type":"intent_request","id":"1","manglecp":"` + Version + `","payload":{"fact\u0073":[1]}}`, nil},
	} {
		env, perr := DecodeEnvelope([]byte(tc.msg))
		if perr != nil {
			if tc.items != nil {
				t.Errorf("%s: %v", tc.msg, perr)
			}
			continue
		}
		var got []string
		if env.list != nil {
			got = []string{}
			for _, it := range env.list.items {
				got = append(got, string(it))
			}
		}
		if !reflect.DeepEqual(got, tc.items) {
			t.Errorf("%s: split into %q, want %q", tc.msg, got, tc.items)
		}
	}
}

func FuzzDecodePayloadList(f *testing.F) {
	for _, in := range payloadCases {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, first := range []bool{false, true} {
			fast, slow, fe, se, ok := decodeList(t, in, first)
			if !ok {
				return
			}
			if d := sameList(fast, slow, fe, se); d != "" {
				t.Errorf("%q (payload first: %v): %s", in, first, d)
			}
		}
	})
}

// TestEnvelopeMembersMatchUnmarshal: the envelope's members split by the
// byte scan are those json.Unmarshal gives, whether the scan is told
// where the last member's value starts (checkJSONLast) or finds it.
func TestEnvelopeMembersMatchUnmarshal(t *testing.T) {
	for _, in := range []string{
		`{}`, ` {"type":"x" , "id":null,"manglecp":"v","payload":{"a":[1,"}"]} } `,
		`{"type":"x","payload":{"facts":[{"pred":"a\"b"}]},"extra":[1,2]}`,
		`{"ty\u0070e":"x"}`, `[]`,
		"{\"payload\":{\"a\":{\"b\":[]}}\n\t}\r\n", `{"a":1,"b":"}"}`, `{"a":[{"b":1}],"c":null}`, `{"a":{"z":1},"b":-2.5e3 }`,
		`[{"a":1},{"b":2}]`, `{"a":[{"b":{"c":1}}]}`,
	} {
		checkMembers(t, in)
	}
}

func checkMembers(t *testing.T, in string) {
	last, err := checkJSONLast([]byte(in), nil)
	if err != nil {
		return
	}
	if last >= 0 {
		checkMembersLast(t, in, -1) // found by a scan, too
	}
	checkMembersLast(t, in, last)
}

func checkMembersLast(t *testing.T, in string, last int) {
	got, ok := envelopeMembers([]byte(in), last)
	if !ok {
		return
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Errorf("%s: split %q, Unmarshal fails: %v", in, got, err)
		return
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("%s: split %q, Unmarshal %q", in, got, want)
	}
}

func FuzzEnvelopeMembers(f *testing.F) {
	f.Add(`{"type":"x","payload":{"a":[1,"}"]}}`)
	f.Fuzz(checkMembers)
}

// TestEncodeMatchesMarshal: an envelope made by NewEnvelope,
// NewEnvelopeMarshaled (of json.Marshal's output) or ErrorEnvelope encodes
// to exactly json.Marshal's bytes, whatever its id and
// payload hold; and one whose payload was replaced after is marshaled.
func TestEncodeMatchesMarshal(t *testing.T) {
	payloads := []any{
		map[string]any{"a": "<b>&</b>", "c": "\u2028\u2029", "d": []any{1, 2.5, nil}},
		&IntentResponse{MacroTools: []MacroTool{}},
		json.RawMessage(` { "spaced" : [ 1 , 2 ] , "html" : "<" } `),
		nil,
	}
	ids := []string{"", "r1", "a\"b", "<id>", "é", "\xff", "tab\t", "a&b", "\u2028"}
	for _, p := range payloads {
		for _, id := range ids {
			env, err := NewEnvelope(TypeIntentResponse, id, p)
			if err != nil {
				t.Fatal(err)
			}
			checkEncode(t, env)
		}
	}
	for _, p := range payloads {
		marshaled, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			checkEncode(t, NewEnvelopeMarshaled(TypeIntentResponse, id, marshaled))
		}
	}
	for _, id := range ids {
		checkEncode(t, ErrorEnvelope(id, Errorf(CodeMalformedMessage, "bad <%s>", id).WithDetails(&ErrorDetails{Field: id})))
		env := ErrorEnvelope(id, Errorf(CodeRateLimited, "x"))
		env.Payload = json.RawMessage(` { "replaced" : "<" } `)
		checkEncode(t, env)
	}
}

func checkEncode(t *testing.T, env *Envelope) {
	t.Helper()
	got, err := env.Encode()
	want, werr := json.Marshal(env)
	if err != nil || werr != nil || !bytes.Equal(got, want) {
		t.Errorf("Encode %s (%v), json.Marshal %s (%v)", got, err, want, werr)
	}
}

func FuzzEncode(f *testing.F) {
	f.Add("r1", "<a>", "\u2028")
	f.Fuzz(func(t *testing.T, id, s, k string) {
		env, err := NewEnvelope(TypeIntentResponse, id, map[string]any{k: s, "n": []any{s}})
		if err != nil {
			return
		}
		checkEncode(t, env)
	})
}

// TestDecodeEnvelopeIntoBuffer: the items go to the caller's array when it
// has room, and the array holds no item unless the items returned are in
// it (a message refused, a list that outgrew it, one that did not fit).
func TestDecodeEnvelopeIntoBuffer(t *testing.T) {
	msg := func(payload string, extra string) []byte {
		return []byte(`{"type":"intent_request","id":"1","manglecp":"` + Version + `","payload":` + payload + extra + `}`)
	}
	many := "[" + strings.Repeat("1,", 400) + "1]" // 401 items of 2 bytes: more than the room kept for them
	for _, tc := range []struct {
		name     string
		data     []byte
		room     int
		want     int  // items returned
		inBuffer bool // in the caller's array
	}{
		{"fits", msg(`{"facts":[{"pred":"a"},2,"3"]}`, ""), 64, 3, true},
		{"too small", msg(`{"facts":[{"pred":"a"},2,"3"]}`, ""), 2, 3, false},
		{"refused", msg(`{"facts":[{"pred":"a"},2,"3"]}`, `,"extra":1`), 64, 0, false},
		{"no facts", msg(`{"intent":{"name":"x"}}`, ""), 64, 0, false},
		{"outgrown", msg(`{"facts":`+many+`}`, ""), 40, 401, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			facts := make([]json.RawMessage, 0, tc.room)
			env, used, perr := DecodeEnvelopeInto(tc.data, facts)
			if len(used) != tc.want {
				t.Fatalf("%d items returned, want %d (error %v)", len(used), tc.want, perr)
			}
			if got := sameArray(used, facts); got != tc.inBuffer {
				t.Fatalf("items in the caller's array: %v, want %v", got, tc.inBuffer)
			}
			for i, it := range facts[:cap(facts)] {
				if it != nil && !(tc.inBuffer && i < len(used)) {
					t.Fatalf("the caller's array keeps item %d %q", i, it)
				}
			}
			if tc.want > 0 {
				var w listWire
				if perr := DecodePayloadList(env, &w, "facts", &w.Facts); perr != nil {
					t.Fatal(perr)
				}
				if !sameArray(w.Facts, used) || len(w.Facts) != len(used) {
					t.Fatal("DecodePayloadList did not hand over the items DecodeEnvelopeInto returned")
				}
			}
		})
	}
}
