package protocol

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// factKeyCases are facts in every form a key distinguishes or does not:
// the canonical forms of protocol.FactKey, held in
// testdata/fact_keys.golden. Each line of a case is one fact as a client
// may send it; the golden holds the key of each as a server holds it
// (decoded and validated against factKeyProfile).
var factKeyCases = []struct {
	name  string
	facts []string
}{
	{"strings", []string{
		`{"pred":"p","args":["a","a b","é","\u2028","a\"b","<&>"]}`,
		`{"pred":"p","args":["a\\b","",0,0,0,0]}`,
	}},
	{"numbers: integer and float differ, text is kept", []string{
		`{"pred":"p","args":[404,404.0,4.04e2,-0,1e3,1.5]}`,
		`{"pred":"p","args":[{"_type":"int64","value":"404"},{"_type":"int64","value":"9007199254740993"},0,0,0,0]}`,
	}},
	{"booleans, lists and objects (keys sorted)", []string{
		`{"pred":"p","args":[true,false,[],[1,"a",[true]],{},{"b":1,"a":[2]}]}`,
	}},
	{"named arguments resolve to positions", []string{
		`{"pred":"q","named_args":{"b":2,"a":"x"}}`,
		`{"pred":"q","args":["x",2]}`,
	}},
	{"temporal annotations by their text", []string{
		`{"pred":"q","args":["x",1],"t":{"at":"2026-02-19T14:30:00Z"}}`,
		`{"pred":"q","args":["x",1],"t":{"at":1771511400000}}`,
		`{"pred":"q","args":["x",1],"t":{"start":"_","end":"now"}}`,
		`{"pred":"q","args":["x",1],"t":{"start":"2026-02-19T14:30:00.5+01:00","end":"_"}}`,
	}},
	{"provenance and category are not identity", []string{
		`{"pred":"q","args":["x",1],"source":{"source_type":"client"},"category":"session"}`,
	}},
}

var factKeyProfile = &FactsProfile{
	TimeFormats: []string{"rfc3339", "epoch_ms"},
	Predicates: []PredicateSchema{
		{Predicate: "p", Arity: 6},
		{Predicate: "q", Arity: 2, ArgTypes: []string{ArgString, ArgNumber}, ArgNames: []string{"a", "b"}, Temporal: true},
	},
}

// TestFactKeyGolden holds the canonical forms: a change to them changes
// every macro_id (the root package's goldens hold those) and what clients
// and servers count as one fact. go test ./protocol -update rewrites it.
func TestFactKeyGolden(t *testing.T) {
	var b strings.Builder
	for _, c := range factKeyCases {
		b.WriteString("# " + c.name + "\n")
		for _, raw := range c.facts {
			f := factKeyFact(t, raw)
			key := FactKey(f)
			b.WriteString(raw + "\n\t" + key + "\n")
			if c, ok := CanonicalFact(f, factKeyProfile); !ok || FactKey(c) != key {
				t.Errorf("%s: CanonicalFact changes the key of a decoded fact: %q, want %q", raw, FactKey(c), key)
			}
		}
	}
	path := filepath.Join("testdata", "fact_keys.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./protocol -update writes it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("fact keys changed (every macro_id would change with them):\ngot:\n%s\nwant:\n%s", got, want)
	}
}

// factKeyFact decodes and validates one fact as a server does.
func factKeyFact(t *testing.T, raw string) Fact {
	t.Helper()
	facts, vs := DecodeFacts([]json.RawMessage{json.RawMessage(raw)})
	if len(vs) > 0 {
		t.Fatalf("%s: %v", raw, vs)
	}
	out, vs := ValidateFacts(facts, factKeyProfile, Assert, nil)
	if len(vs) > 0 || len(out) != 1 {
		t.Fatalf("%s: %v", raw, vs)
	}
	return out[0]
}

// TestCanonicalFactOfGoValues: facts built in Go key as the server keys
// their JSON.
func TestCanonicalFactOfGoValues(t *testing.T) {
	tests := []struct {
		name string
		f    Fact
		json string
	}{
		{"Go integers", Fact{Pred: "q", Args: []any{"x", 404}}, `{"pred":"q","args":["x",404]}`},
		{"Go floats", Fact{Pred: "p", Args: []any{1.5, 2.0, int64(7), uint8(1), "s", true}}, `{"pred":"p","args":[1.5,2,7,1,"s",true]}`},
		{"int64 wrapper", Fact{Pred: "q", Args: []any{"x", map[string]any{"_type": "int64", "value": "404"}}}, `{"pred":"q","args":["x",404]}`},
		{"nested Go values", Fact{Pred: "p", Args: []any{[]any{1, "a"}, map[string]any{"k": 2}, []string{"a"}, 0, 0, 0}}, `{"pred":"p","args":[[1,"a"],{"k":2},["a"],0,0,0]}`},
		{"temporal", Fact{Pred: "q", Args: []any{"x", 1}, T: &Temporal{At: int64(1771511400000)}}, `{"pred":"q","args":["x",1],"t":{"at":1771511400000}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := CanonicalFact(tt.f, factKeyProfile)
			if !ok {
				t.Fatalf("CanonicalFact(%#v) failed", tt.f)
			}
			if got, want := FactKey(c), FactKey(factKeyFact(t, tt.json)); got != want {
				t.Errorf("key %q, the server's %q", got, want)
			}
		})
	}
}
