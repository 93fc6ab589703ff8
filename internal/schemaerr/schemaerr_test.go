package schemaerr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/manglecp/manglecp/internal/schemaerr"
)

func compile(t *testing.T, schema map[string]any) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("tool.json", schema); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("tool.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestErrors(t *testing.T) {
	s := compile(t, map[string]any{
		"type":                 "object",
		"required":             []any{"target", "count"},
		"additionalProperties": false,
		"properties": map[string]any{
			"target": map[string]any{"type": "string", "pattern": "^[a-z]+$"},
			"count":  map[string]any{"type": "integer", "maximum": 10},
			"list":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
	})
	long := strings.Repeat("x", 1<<20)
	tests := []struct {
		name string
		args map[string]any
		want []string // "path keyword", in order
	}{
		{"valid", map[string]any{"target": "a", "count": 1}, nil},
		{"missing", map[string]any{}, []string{"/count required", "/target required"}},
		{"unknown, bounded", map[string]any{"target": "a", "count": 1, long: 1}, []string{"/" + strings.Repeat("x", 64) + "... additionalProperties"}},
		{"nested", map[string]any{"target": "a", "count": 11, "list": []any{"a", 1}}, []string{"/count maximum", "/list/1 type"}},
		{"a value in a message is bounded", map[string]any{"target": strings.Repeat("1", 1<<20), "count": 1}, []string{"/target pattern"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schemaerr.Errors(s.Validate(tt.args))
			var keys []string
			for _, e := range got {
				keys = append(keys, e.Path+" "+e.Keyword)
				if len(e.Message) > 400 || len(e.Path) > 200 {
					t.Errorf("unbounded echo: path %d bytes, message %d bytes", len(e.Path), len(e.Message))
				}
			}
			if strings.Join(keys, "|") != strings.Join(tt.want, "|") {
				t.Errorf("errors %q, want %q", keys, tt.want)
			}
		})
	}
	if got := schemaerr.Errors(errors.New("other")); len(got) != 1 || got[0].Keyword != "$schema" {
		t.Errorf("another error gives %v", got)
	}
}

func TestErrorsAtMostMax(t *testing.T) {
	props := map[string]any{}
	args := map[string]any{}
	for i := range 50 {
		name := string(rune('a'+i%26)) + strings.Repeat("z", i/26+1)
		props[name] = map[string]any{"type": "integer"}
		args[name] = "not a number"
	}
	s := compile(t, map[string]any{"type": "object", "properties": props})
	if got := schemaerr.Errors(s.Validate(args)); len(got) != schemaerr.Max {
		t.Errorf("%d errors, want %d", len(got), schemaerr.Max)
	}
}
