package mcpbridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/manglecp/manglecp/internal/schema"
	"github.com/manglecp/manglecp/internal/schemaerr"
	"github.com/manglecp/manglecp/protocol"
)

// signature writes a macro-tool's input schema as the short signature a
// model reads once, in the answer that selected the tool:
//
//	name(path*: "src/a.go"|"src/b.go", old*: string, id="r2", depth: integer=3)
//
// Required parameters are starred; an enum lists its values (quoted
// strings), a default follows "="; an array of T is T[]. A required
// parameter the rules fixed (an enum of one) is name=VALUE, or name=fixed
// when the value is long: the model may leave it out (fillFixed).
// Parameters are sorted, required ones first. A tool whose schema was not disclosed
// (condensed or minimal disclosure) is name(...): the server validates.
func toolSignature(name string, schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	if len(schema) == 0 {
		return name + "(...)"
	}
	req := requiredOf(schema)
	names := paramNames(props, req)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		if v, ok := fixedValue(p, slices.Contains(req, n)); ok {
			// The rules fixed it: the bridge fills it in when left out.
			if js := compactJSON(v); len(js) <= maxShownFixed {
				parts = append(parts, n+"="+js)
			} else {
				parts = append(parts, n+"=fixed")
			}
			continue
		}
		s := n
		if slices.Contains(req, n) {
			s += "*"
		}
		s += ": " + typeOf(p)
		if d, ok := p["default"]; ok {
			s += "=" + compactJSON(d)
		}
		parts = append(parts, s)
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// maxShownFixed is the longest fixed value a signature shows (as JSON);
// a longer one (a diff) is written "=fixed": the model need not send it.
const maxShownFixed = 48

// fixedValue reports the one value a required parameter may take (an enum
// of one, which the rules bind from the facts).
func fixedValue(p map[string]any, required bool) (any, bool) {
	enum, _ := p["enum"].([]any)
	if !required || len(enum) != 1 {
		return nil, false
	}
	return enum[0], true
}

// fillFixed adds to args each required parameter the model left out whose
// value the rules fixed.
func fillFixed(schema map[string]any, args map[string]any) {
	props, _ := schema["properties"].(map[string]any)
	for _, n := range requiredOf(schema) {
		if _, ok := args[n]; ok {
			continue
		}
		p, _ := props[n].(map[string]any)
		if v, ok := fixedValue(p, true); ok {
			args[n] = v
		}
	}
}

// typeOf is a property's type as the signature writes it.
func typeOf(p map[string]any) string {
	if enum, ok := p["enum"].([]any); ok && len(enum) > 0 {
		vals := make([]string, len(enum))
		for i, v := range enum {
			vals[i] = compactJSON(v)
		}
		return strings.Join(vals, "|")
	}
	switch t := p["type"].(type) {
	case string:
		if t == "array" {
			if items, ok := p["items"].(map[string]any); ok {
				return typeOf(items) + "[]"
			}
		}
		if fields := fieldsOf(p); fields != "" {
			return fields
		}
		return t
	case []any:
		ts := make([]string, 0, len(t))
		for _, x := range t {
			ts = append(ts, fmt.Sprint(x))
		}
		return strings.Join(ts, "|")
	}
	return "any"
}

// fieldsOf is an object schema's fields as the signature writes them,
// {oldText*: string, newText*: string} (required ones starred and first),
// so that a model sees the fields of an array's items; "" when the schema
// lists no properties, or they are too many or too deep to be short.
func fieldsOf(p map[string]any) string {
	props, _ := p["properties"].(map[string]any)
	if len(props) == 0 || len(props) > 8 {
		return ""
	}
	req := requiredOf(p)
	names := paramNames(props, req)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		sub, _ := props[n].(map[string]any)
		if _, nested := sub["properties"]; nested {
			return "" // one level of fields: the signature stays one short line
		}
		s := n
		if slices.Contains(req, n) {
			s += "*"
		}
		parts = append(parts, s+": "+typeOf(sub))
	}
	out := "{" + strings.Join(parts, ", ") + "}"
	if len(out) > 160 {
		return ""
	}
	return out
}

// paramNames are the names of props in the order a signature writes
// them: the required ones (req) first, each group sorted.
func paramNames(props map[string]any, req []string) []string {
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		ra, rb := slices.Contains(req, a), slices.Contains(req, b)
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

func requiredOf(schema map[string]any) []string {
	var req []string
	switch r := schema["required"].(type) {
	case []any:
		for _, x := range r {
			if s, ok := x.(string); ok {
				req = append(req, s)
			}
		}
	case []string:
		req = r
	}
	return req
}

func compactJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(raw)
}

// validator checks a macro-tool's arguments against its full input
// schema (JSON Schema 2020-12, the dialect of Spec 06), compiled once by
// the repository's one schema setup (internal/schema): nothing outside the
// schema is loaded and its cost is bounded, whatever the server sent.
type validator struct {
	once    sync.Once
	schema  *schema.Schema
	refused error // the server's schema is not accepted (internal/schema's words)
}

// check returns the schema errors of args: each with the path of the
// argument and what is wrong, so the model can correct its call. A tool
// without a schema (condensed or minimal disclosure) is left to the
// server; one whose schema is refused (it refers outside itself, or is too
// costly to check) is x-bridge_schema_refused, before anything runs.
func (v *validator) check(sch map[string]any, args map[string]any) ([]protocol.SchemaError, *protocol.Error) {
	if len(sch) == 0 {
		return nil, nil
	}
	v.once.Do(func() {
		v.schema, v.refused = schema.Compile(sch, schema.Limits{})
	})
	if v.refused != nil {
		return nil, protocol.Errorf(CodeSchemaRefused, "the server's input schema of this tool is not accepted: %s", v.refused)
	}
	// Validate the arguments as JSON decodes them (json.Number kept).
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, nil
	}
	inst, err := schema.Decode(raw)
	if err != nil {
		return nil, nil
	}
	return schemaerr.Errors(v.schema.Validate(inst)), nil
}
