package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestCheckJSONMatchesTokenWalk: the byte scan answers exactly as the
// token walk does, valid or not.
func TestCheckJSONMatchesTokenWalk(t *testing.T) {
	many := func(dupAt int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range 40 {
			if i > 0 {
				b.WriteString(",")
			}
			k := i
			if i == dupAt {
				k = 3
			}
			fmt.Fprintf(&b, `"k%d":[%d,{"x":"y\"}"}]`, k, i)
		}
		b.WriteString("}")
		return b.String()
	}
	inputs := []string{
		`{}`, `[]`, `"s"`, `1`, `null`, ` {"a":1} `,
		`{"a":1,"b":{"a":2},"c":[{"a":1,"a":2}]}`,
		`{"a":1,"a":2}`,
		`{"a":1,"\u0061":2}`,
		`{"a\"b":1,"a\"b":2}`,
		`{"k":"a,b","k2":"{\"k\":1}"}`,
		`{"x":[1,2,{"y":[{"z":{}}]}],"y":{"x":1,"y":[]}}`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64),
		strings.Repeat("[", 65) + strings.Repeat("]", 65),
		strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
		many(-1), many(30),
		`{"a":1} {"b":2}`, `{"a":1,}`, `{"a"}`, `[1,2`, `{"a":1,"a":2`, ``, `nul`,
		strings.Repeat("[", 65) + "x",
		"{\"\xff\":1,\"\xfe\":2}",
	}
	for _, in := range inputs {
		fast, slow := checkJSON([]byte(in)), checkJSONTokens([]byte(in))
		if fmt.Sprint(fast) != fmt.Sprint(slow) {
			t.Errorf("checkJSON(%.60q) = %v, token walk %v", in, fast, slow)
		}
	}
}

func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `[{"b":[1,{"c":"\u0063"}]}]`, `{"a":"\\","b":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		fast, slow := checkJSON([]byte(in)), checkJSONTokens([]byte(in))
		if fmt.Sprint(fast) != fmt.Sprint(slow) {
			t.Errorf("checkJSON(%q) = %v, token walk %v", in, fast, slow)
		}
	})
}

// TestDecodeSimpleMatchesDecoder: where decodeSimple answers, it answers
// as the decoder with UseNumber does.
func TestDecodeSimpleMatchesDecoder(t *testing.T) {
	for _, in := range []string{
		`[]`, `[ ]`, `["a",1,-2.5e3,true,false,null]`, ` [ "x" , 2 ] `, `["é"]`, `["a\"b"]`, `[{"a":1}]`, `[[1]]`,
		`"pred"`, `"a\nb"`, `5`, `[1,"b",null]`, ` "2026-02-19T14:30:05Z" `, `1771510200000`, `-0.5e3`, `true`, `null`, `"now"`, `"\u00e9"`, `01`, `"x" 1`,
	} {
		var fastArgs, slowArgs []any
		fastOK := decodeSimple([]byte(in), &fastArgs)
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		slowErr := dec.Decode(&slowArgs)
		if fastOK && (slowErr != nil || fmt.Sprintf("%#v", fastArgs) != fmt.Sprintf("%#v", slowArgs)) {
			t.Errorf("args %s: fast %#v, decoder %#v (%v)", in, fastArgs, slowArgs, slowErr)
		}
		var fastV, slowV any
		fastOK = decodeSimple([]byte(in), &fastV)
		dec = json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		slowErr = dec.Decode(&slowV)
		if fastOK && (slowErr != nil || fmt.Sprintf("%#v", fastV) != fmt.Sprintf("%#v", slowV)) {
			t.Errorf("any %s: fast %#v, decoder %#v (%v)", in, fastV, slowV, slowErr)
		}
		var fastS, slowS string
		fastOK = decodeSimple([]byte(in), &fastS)
		slowErr = json.Unmarshal([]byte(in), &slowS)
		if fastOK && (slowErr != nil || fastS != slowS) {
			t.Errorf("string %s: fast %q, decoder %q (%v)", in, fastS, slowS, slowErr)
		}
	}
}

func FuzzDecodeSimple(f *testing.F) {
	f.Add(`["a",1,true,null]`)
	f.Add(`"x"`)
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		var fast, slow []any
		if decodeSimple([]byte(in), &fast) {
			dec := json.NewDecoder(strings.NewReader(in))
			dec.UseNumber()
			if err := dec.Decode(&slow); err != nil || fmt.Sprintf("%#v", fast) != fmt.Sprintf("%#v", slow) {
				t.Errorf("%s: fast %#v, decoder %#v (%v)", in, fast, slow, err)
			}
		}
		var fastV, slowV any
		if decodeSimple([]byte(in), &fastV) {
			dec := json.NewDecoder(strings.NewReader(in))
			dec.UseNumber()
			if err := dec.Decode(&slowV); err != nil || fmt.Sprintf("%#v", fastV) != fmt.Sprintf("%#v", slowV) {
				t.Errorf("any %s: fast %#v, decoder %#v (%v)", in, fastV, slowV, err)
			}
		}
	})
}

// onePassCases are messages valid and not, for the one-pass scan.
var onePassCases = []string{
	`{}`, `[]`, `""`, `0`, `-0.5e+3`, `true`, `null`, ` { } `, `[ ]`, `{"a":[]}`, `{"a":{}}`,
	`{"type":"intent_request","id":"1","manglecp":"v","payload":{"facts":[{"pred":"a","args":["x\"y\\\/\b\f\n\r\t\u00e9",1,2.5,true,false,null]}]}}`,
	`{"a":1,"a":2}`, `{"a":{"b":1},"c":{"b":2}}`, `{"a":[{"b":1},{"b":1}]}`,
	`{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{"a":}`, `{,}`, `[,1]`, `{"a":1}}`, `[1]]`, `[}`, `{]`, `{"a":1]`,
	`01`, `1.`, `.5`, `-`, `1e`, `1e+`, `--1`, `+1`, `tru`, `nulll`, `"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01\"", `"abc`,
	`{"\u0061":1}`, "{\"é\":1}", `{"a":1} {"b":2}`, ``, ` `,
	strings.Repeat("[", 64) + strings.Repeat("]", 64),
	strings.Repeat("[", 65) + strings.Repeat("]", 65),
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k3":3}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":{"k3":1}}`,
}

// TestValidJSONOnePass: what the one-pass scan accepts, json.Valid and
// scanValidJSON accept; and it accepts the common messages, so checkJSON
// answers as the slow path does.
func TestValidJSONOnePass(t *testing.T) {
	accepted := 0
	for _, in := range onePassCases {
		if validJSONOnePass([]byte(in)) {
			accepted++
			if err := checkJSONSlow([]byte(in)); err != nil {
				t.Errorf("one pass accepts %.80q; the slow path says %v", in, err)
			}
		}
		if fast, slow := checkJSON([]byte(in)), checkJSONSlow([]byte(in)); fmt.Sprint(fast) != fmt.Sprint(slow) {
			t.Errorf("checkJSON(%.80q) = %v, slow path %v", in, fast, slow)
		}
	}
	if accepted < 14 {
		t.Errorf("the one-pass scan accepted only %d cases", accepted)
	}
}

func FuzzValidJSONOnePass(f *testing.F) {
	for _, in := range onePassCases {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if validJSONOnePass([]byte(in)) {
			if !json.Valid([]byte(in)) || scanValidJSON([]byte(in)) != nil {
				t.Errorf("one pass accepts %q; json.Valid %v, scanValidJSON %v", in, json.Valid([]byte(in)), scanValidJSON([]byte(in)))
			}
		}
	})
}
