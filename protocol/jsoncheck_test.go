package protocol

import (
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
