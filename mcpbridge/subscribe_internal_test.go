package mcpbridge

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToolSignature: the compact form in which a model reads a selected
// macro-tool once: types, enums, defaults and required marks, required
// parameters first.
func TestToolSignature(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"none disclosed", ``, `t(...)`},
		{"no parameters", `{"type":"object"}`, `t()`},
		{"required first, sorted", `{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"},"c":{"type":"string"}},"required":["c"]}`, `t(c*: string, a: string, b: integer)`},
		{"enum and default", `{"type":"object","properties":{"path":{"enum":["src/a.go","src/b.go"]},"net":{"type":"boolean","default":true}},"required":["path"]}`, `t(path*: "src/a.go"|"src/b.go", net: boolean=true)`},
		{"array", `{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"}}}}`, `t(paths: string[])`},
		{"fixed by the rules", `{"type":"object","properties":{"id":{"type":"string","enum":["r2"]},"diff":{"type":"string","enum":["--- a/src/util.go\n+++ b/src/util.go\n@@ -1,4 +1,4 @@\n-// widget helper"]},"x":{"type":"string","enum":["only"]}},"required":["id","diff"]}`, `t(diff=fixed, id="r2", x: "only")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var schema map[string]any
			if tt.schema != "" {
				if err := json.Unmarshal([]byte(tt.schema), &schema); err != nil {
					t.Fatal(err)
				}
			}
			if got := toolSignature("t", schema); got != tt.want {
				t.Errorf("toolSignature = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestValidatorSchemaErrors: the bridge checks a macro-tool's arguments
// against its full schema and names each wrong argument.
func TestValidatorSchemaErrors(t *testing.T) {
	var schema map[string]any
	_ = json.Unmarshal([]byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"path":{"type":"string","enum":["a.go"]},"n":{"type":"integer"}},"required":["path"],"additionalProperties":false}`), &schema)
	tests := []struct {
		name string
		args string
		want []string // substrings of the errors, in order
	}{
		{"valid", `{"path":"a.go","n":3}`, nil},
		{"missing", `{}`, []string{`/path: required argument "path" is missing`}},
		{"unknown and wrong type", `{"path":"a.go","n":"x","extra":1}`, []string{`/extra: argument "extra" is not a parameter`, `/n: `}},
		{"not in the enum", `{"path":"b.go"}`, []string{`/path: `}},
	}
	v := &validator{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args map[string]any
			_ = json.Unmarshal([]byte(tt.args), &args)
			errs, _ := v.check(schema, args)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %+v, want %d", errs, len(tt.want))
			}
			for i, w := range tt.want {
				if got := errs[i].Path + ": " + errs[i].Message; !strings.HasPrefix(got, w) {
					t.Errorf("error %d = %q, want %q...", i, got, w)
				}
			}
		})
	}
}
