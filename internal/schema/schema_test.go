package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/manglecp/manglecp/internal/schema"
	"github.com/manglecp/manglecp/internal/schemaerr"
)

// Exponential is a schema of about 3.7 KB whose checking doubles with
// every definition: each one is anyOf two references to the next. The
// library's default setup took 40 s to validate one string with n=20 and
// twice that per further level.
func Exponential(n int) map[string]any {
	defs := map[string]any{}
	for i := 0; i < n; i++ {
		next := fmt.Sprintf("#/$defs/d%d", i+1)
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": []any{
			map[string]any{"$ref": next},
			map[string]any{"$ref": next, "type": "string"},
		}}
	}
	defs[fmt.Sprintf("d%d", n)] = map[string]any{"type": "integer"}
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d0"}},
		"$defs":      defs,
	}
}

func TestFileReferenceIsNotRead(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"string","description":"TOP-SECRET-CONTENT"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]map[string]any{
		"ref":           {"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "file://" + secret}}},
		"schema":        {"$schema": "file://" + secret},
		"id":            {"$id": "file://" + filepath.Dir(secret) + "/", "properties": map[string]any{"x": map[string]any{"$ref": "secret.json"}}},
		"passwd":        {"$ref": "file:///etc/passwd"},
		"http":          {"$ref": "http://127.0.0.1:1/schema.json"},
		"relative-path": {"$ref": "../../../../etc/passwd"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := schema.Compile(doc, schema.Limits{})
			if err == nil {
				t.Fatal("a schema referring outside itself compiled")
			}
			msg := err.Error()
			for _, leak := range []string{"TOP-SECRET", "secret.json", "passwd", "root:", "127.0.0.1", "file:"} {
				if strings.Contains(msg, leak) {
					t.Errorf("error %q repeats %q", msg, leak)
				}
			}
		})
	}
	// The library's default setup reads the file: what the package prevents.
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://a.json", map[string]any{"$ref": "file://" + secret}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("mem://a.json"); err != nil {
		t.Fatalf("the default loader did not read the file (the test's premise): %v", err)
	}
}

func TestExponentialSchemaRefusedFast(t *testing.T) {
	doc := Exponential(20)
	raw, _ := json.Marshal(doc)
	t.Logf("schema of %d bytes", len(raw))
	_, err := schema.Compile(doc, schema.Limits{})
	if !errors.Is(err, schema.ErrRefused) {
		t.Fatalf("Compile = %v, want a refusal", err)
	}
	if !strings.Contains(err.Error(), "subschema checks") {
		t.Errorf("error %q does not say why", err)
	}
	// A small one is fine and validates.
	s, err := schema.Compile(Exponential(4), schema.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(map[string]any{"x": json.Number("3")}); err != nil {
		t.Errorf("valid arguments: %v", err)
	}
	if errs := schemaerr.Errors(s.Validate(map[string]any{"x": true})); len(errs) == 0 {
		t.Error("invalid arguments passed")
	}
}

func TestLimits(t *testing.T) {
	deep := map[string]any{"type": "string"}
	for i := 0; i < 100; i++ {
		deep = map[string]any{"type": "object", "properties": map[string]any{"a": deep}}
	}
	big := map[string]any{"type": "object", "description": strings.Repeat("x", 300<<10)}
	many := map[string]any{}
	for i := 0; i < 5000; i++ {
		many[fmt.Sprint("p", i)] = map[string]any{"type": "string"}
	}
	loop := map[string]any{"$defs": map[string]any{
		"a": map[string]any{"allOf": []any{map[string]any{"$ref": "#/$defs/b"}}},
		"b": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/a"}, map[string]any{"type": "string"}}},
	}, "$ref": "#/$defs/a"}
	// Two paths to the same child at every level: 2^depth checks of a
	// deep value, though each level alone is small.
	doubling := map[string]any{"$defs": map[string]any{
		"n": map[string]any{"allOf": []any{
			map[string]any{"properties": map[string]any{"c": map[string]any{"$ref": "#/$defs/n"}}},
			map[string]any{"properties": map[string]any{"c": map[string]any{"$ref": "#/$defs/n"}}},
		}},
	}, "$ref": "#/$defs/n"}
	for _, tc := range []struct {
		name string
		doc  map[string]any
		want string
	}{
		{"deep", deep, "nests deeper"},
		{"big", big, "bytes"},
		{"many", map[string]any{"type": "object", "properties": many}, "objects"},
		{"inplace-loop", loop, "refers to itself"},
		{"doubling-through-properties", doubling, "subschema checks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schema.Compile(tc.doc, schema.Limits{})
			if !errors.Is(err, schema.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

func TestRecursiveSchemasAccepted(t *testing.T) {
	tree := map[string]any{
		"$defs": map[string]any{"node": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"left":     map[string]any{"$ref": "#/$defs/node"},
				"right":    map[string]any{"$ref": "#/$defs/node"},
				"children": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/node"}},
				"value":    map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
			},
		}},
		"$ref": "#/$defs/node",
	}
	s, err := schema.Compile(tree, schema.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var v any = map[string]any{"value": "leaf"}
	for i := 0; i < 30; i++ {
		v = map[string]any{"left": v, "children": []any{map[string]any{"value": 1}}}
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("a deep valid tree: %v", err)
	}
}

func TestArgumentsTooCostly(t *testing.T) {
	// Each item is checked against 1+8 subschemas: 20,000 items are over
	// the bound of 100,000 checks and refused before checking.
	alts := []any{}
	for i := 0; i < 8; i++ {
		alts = append(alts, map[string]any{"type": "integer", "minimum": i})
	}
	s, err := schema.Compile(map[string]any{"type": "object", "properties": map[string]any{
		"xs": map[string]any{"type": "array", "items": map[string]any{"anyOf": alts}},
	}}, schema.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]any, 20000)
	for i := range xs {
		xs[i] = json.Number("9")
	}
	errs := schemaerr.Errors(s.Validate(map[string]any{"xs": xs}))
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "too large") {
		t.Fatalf("errors = %+v, want one saying the arguments are too large", errs)
	}
	if err := s.Validate(map[string]any{"xs": xs[:100]}); err != nil {
		t.Errorf("100 items: %v", err)
	}
}

func TestInvalidSchema(t *testing.T) {
	_, err := schema.Compile(map[string]any{"type": 7}, schema.Limits{})
	var se *schema.Error
	if !errors.As(err, &se) || se.Refused {
		t.Fatalf("Compile = %v, want an invalid-schema error", err)
	}
	_, err = schema.Compile(map[string]any{"$ref": "#/$defs/missing"}, schema.Limits{})
	if err == nil || errors.Is(err, schema.ErrRefused) {
		t.Fatalf("Compile = %v, want an invalid-schema error", err)
	}
}

func ExampleCompile() {
	s, err := schema.Compile(map[string]any{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required":   []any{"path"},
	}, schema.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range schemaerr.Errors(s.Validate(map[string]any{})) {
		fmt.Println(e.Keyword, e.Message)
	}
	// Output: required required argument "path" is missing
}

func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{3, 1000} {
		props := map[string]any{}
		for i := 0; i < n; i++ {
			props[fmt.Sprint("p", i)] = map[string]any{"type": "string"}
		}
		doc := map[string]any{"type": "object", "properties": props}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := schema.Compile(doc, schema.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExponentialRefused: the time to refuse the exponential schema
// (n=24 levels; the library's default setup validated one value of n=20 in
// about 40 s, doubling per level).
func BenchmarkExponentialRefused(b *testing.B) {
	doc := Exponential(24)
	for b.Loop() {
		if _, err := schema.Compile(doc, schema.Limits{}); !errors.Is(err, schema.ErrRefused) {
			b.Fatal(err)
		}
	}
}
