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
		`"pred"`, `"a\nb"`, `5`, `[1,"b",null]`,
	} {
		var fastArgs, slowArgs []any
		fastOK := decodeSimple([]byte(in), &fastArgs)
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		slowErr := dec.Decode(&slowArgs)
		if fastOK && (slowErr != nil || fmt.Sprintf("%#v", fastArgs) != fmt.Sprintf("%#v", slowArgs)) {
			t.Errorf("args %s: fast %#v, decoder %#v (%v)", in, fastArgs, slowArgs, slowErr)
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
	})
}
