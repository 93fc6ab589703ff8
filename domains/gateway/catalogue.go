package gateway

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/manglecp/manglecp/internal/schema"
	"github.com/manglecp/manglecp/upstream"
)

// Bounds of what the catalogue keeps of an upstream's tool list.
const (
	maxDescription      = 200 // bytes of a tool description: what a model reads every time, its first sentence
	maxSummary          = 120 // bytes of a tool summary
	maxParamDescription = 160 // bytes of a parameter description
	maxParams           = 32  // parameters of one tool
	maxSchemaBytes      = upstream.MaxSchemaBytes
)

var (
	paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)
	unsafeRun = regexp.MustCompile(`[^A-Za-z0-9_]+`)
)

// entry is one upstream tool as the gateway serves it.
type entry struct {
	name     string         // the MangleCP tool name (prefixed)
	original string         // the upstream's name
	schema   *schema.Schema // the upstream's input schema, compiled
	tool     upstream.Tool
	// more is what the upstream's schema says of some parameters beyond
	// their type (items and their fields, lengths, patterns, enums): the
	// macro-tool's input schema carries it (ActionSpec.ParamSchemas).
	more map[string]map[string]any
}

// toolName is the MangleCP name of an upstream tool: the upstream's name,
// "_", and the tool's name with every run of other characters than
// letters, digits and "_" made one "_", at most 64 bytes.
func toolName(up, tool string) string {
	n := up + "_" + strings.Trim(unsafeRun.ReplaceAllString(tool, "_"), "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// catalogue builds the entries of u's tools and the facts declaring them
// (a .mg file); skipped says which tools were left out and why.
func catalogue(up string, pack string, tools []upstream.Tool) (entries map[string]*entry, facts string, skipped []string) {
	entries = map[string]*entry{}
	var b strings.Builder
	fmt.Fprintf(&b, "# The catalogue of upstream %s, written by the gateway from its tool list.\n", up)
	fmt.Fprintf(&b, "upstream(%s).\n", mgString(up))
	if pack != "" {
		fmt.Fprintf(&b, "upstream_pack(%s, %s).\n", mgString(up), mgString(pack))
	}
	for _, t := range tools {
		name := toolName(up, t.Name)
		if _, dup := entries[name]; dup || t.Name == "" {
			skipped = append(skipped, fmt.Sprintf("%s: its name collides with another tool's as %s", upstream.Truncate(t.Name, 64), name))
			continue
		}
		if t.Problem != "" {
			skipped = append(skipped, fmt.Sprintf("%s: %s", upstream.Truncate(t.Name, 64), t.Problem))
			continue
		}
		params, required, sch, err := readSchema(t.InputSchema)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", upstream.Truncate(t.Name, 64), err))
			continue
		}
		entries[name] = &entry{name: name, original: t.Name, schema: sch, tool: t, more: paramSchemas(t.InputSchema)}
		q := mgString(name)
		fmt.Fprintf(&b, "\nupstream_tool(%s, %s, %s).\n", mgString(up), q, mgString(t.Name))
		fmt.Fprintf(&b, "tool(%s).\ntool_action(%s, %s).\n", q, q, mgString(up))
		desc := sentences(upstream.Sanitize(t.Description, 4*maxDescription), maxDescription)
		if desc == "" {
			desc = upstream.Sanitize(t.Title, maxDescription)
		}
		if desc == "" {
			desc = t.Name
		}
		fmt.Fprintf(&b, "tool_description(%s, %s).\n", q, mgString(desc))
		fmt.Fprintf(&b, "tool_summary(%s, %s).\n", q, mgString(summary(t, desc)))
		for _, h := range hints(t) {
			fmt.Fprintf(&b, "upstream_hint(%s, %s).\n", q, mgString(h))
		}
		for _, p := range params {
			fmt.Fprintf(&b, "tool_param(%s, %s, %s, %s).\n", q, mgString(p.name), mgString(p.typ), mgString(p.desc))
			// A parameter with a default is filled in by the server, so
			// it is not required of the caller.
			if p.def != "" {
				fmt.Fprintf(&b, "tool_param_default(%s, %s, %s).\n", q, mgString(p.name), p.def)
			} else if required[p.name] {
				fmt.Fprintf(&b, "tool_param_required(%s, %s).\n", q, mgString(p.name))
			}
		}
	}
	return entries, b.String(), skipped
}

// summary is the one line of a tool: its title, else the first sentence
// of its description.
func summary(t upstream.Tool, desc string) string {
	if s := upstream.Sanitize(t.Title, maxSummary); s != "" {
		return s
	}
	if i := strings.Index(desc, ". "); i >= 0 {
		desc = desc[:i+1]
	}
	return upstream.Truncate(desc, maxSummary)
}

func hints(t upstream.Tool) []string {
	var out []string
	if t.ReadOnly {
		out = append(out, "read_only")
	}
	if t.Destructive {
		out = append(out, "destructive")
	}
	if t.Idempotent {
		out = append(out, "idempotent")
	}
	if t.OpenWorld {
		out = append(out, "open_world")
	}
	return out
}

type param struct {
	name, typ, desc string
	def             string // the default as a Mangle constant, "" for none
}

// readSchema reads the top-level parameters of an input schema (for the
// tool_param facts) and compiles the whole schema (to validate arguments
// before the call). A schema that is not an object schema, does not
// compile, is too large, or has a parameter whose name cannot be a
// parameter is an error: the tool is left out.
func readSchema(s map[string]any) ([]param, map[string]bool, *schema.Schema, error) {
	if s == nil {
		s = map[string]any{"type": "object"}
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("its input schema does not encode")
	}
	if len(raw) > maxSchemaBytes {
		return nil, nil, nil, fmt.Errorf("its input schema is over %d bytes", maxSchemaBytes)
	}
	if t, ok := s["type"]; ok && t != "object" {
		return nil, nil, nil, fmt.Errorf("its input schema is not an object schema")
	}
	sch, err := schema.Compile(raw, schema.Limits{MaxBytes: maxSchemaBytes})
	if err != nil {
		// The package's words: never an address or a text of the schema.
		return nil, nil, nil, fmt.Errorf("its input schema is not accepted: %s", err)
	}
	props, _ := s["properties"].(map[string]any)
	if len(props) > maxParams {
		return nil, nil, nil, fmt.Errorf("it has over %d parameters", maxParams)
	}
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	var params []param
	for name, v := range props {
		if !paramName.MatchString(name) {
			return nil, nil, nil, fmt.Errorf("parameter %q has a name a tool parameter cannot have", upstream.Truncate(name, 40))
		}
		p, _ := v.(map[string]any)
		pr := param{name: name, typ: paramType(p), desc: paramDescription(p)}
		if d, ok := p["default"].(float64); ok && (d > maxExact || d < -maxExact) {
			return nil, nil, nil, fmt.Errorf("parameter %s has a default (%g) beyond the integers the rules can hold (±2^53)", name, d)
		}
		pr.def = defaultConstant(p["default"], pr.typ)
		params = append(params, pr)
	}
	sort.Slice(params, func(i, j int) bool { return params[i].name < params[j].name })
	return params, required, sch, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// paramType is the one JSON Schema type a parameter's facts can carry:
// its type, the first of a list that is not "null", or the type its other
// keywords imply; "string" when nothing says.
func paramType(p map[string]any) string {
	switch t := p["type"].(type) {
	case string:
		if validType(t) {
			return t
		}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" && validType(s) {
				return s
			}
		}
	}
	switch {
	case p["properties"] != nil:
		return "object"
	case p["items"] != nil:
		return "array"
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := p[key].([]any); ok {
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok {
					if t, ok := m["type"].(string); ok && t != "null" && validType(t) {
						return t
					}
				}
			}
		}
	}
	return "string"
}

func validType(t string) bool {
	switch t {
	case "array", "boolean", "integer", "null", "number", "object", "string":
		return true
	}
	return false
}

// paramDescription is the parameter's description with the shape of an
// array's items or an object's properties, which the tool_param facts
// cannot carry, bounded.
func paramDescription(p map[string]any) string {
	d, _ := p["description"].(string)
	d = upstream.Sanitize(d, maxParamDescription)
	if items, ok := p["items"].(map[string]any); ok {
		if shape := shapeOf(items); shape != "" {
			d = strings.TrimSpace(d + " Items: " + shape)
		}
	}
	return upstream.Truncate(d, maxParamDescription+80)
}

// shapeOf is a short signature of an object schema's properties
// ({oldText: string, newText: string}) or of a scalar type.
func shapeOf(s map[string]any) string {
	props, ok := s["properties"].(map[string]any)
	if !ok {
		t, _ := s["type"].(string)
		return t
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		pm, _ := props[n].(map[string]any)
		parts = append(parts, upstream.Truncate(n, 40)+": "+paramType(pm))
	}
	return upstream.Truncate("{"+strings.Join(parts, ", ")+"}", 120)
}

// mgString is s as a Mangle string constant.
func mgString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f:
			// dropped: Sanitize escaped them already
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// maxExact is the largest magnitude of a number the rules take as a
// default: every integer up to it is exact in a float64, and Mangle reads
// it (it cannot read -9223372036854775808).
const maxExact = 1 << 53

// defaultConstant is a scalar default of the parameter's type as a Mangle
// constant; "" when there is none or it does not fit.
func defaultConstant(v any, typ string) string {
	switch v := v.(type) {
	case string:
		if typ == "string" && len(v) <= 200 {
			return mgString(v)
		}
	case bool:
		if typ == "boolean" {
			return "/" + fmt.Sprint(v)
		}
	case float64:
		if (typ == "integer" || typ == "number") && v == float64(int64(v)) {
			return fmt.Sprint(int64(v))
		}
	}
	return ""
}

// sentences is the first sentence of s, within max bytes: a tool's
// description is read by the model in every answer that offers it, so
// the gateway keeps what says what the tool does.
func sentences(s string, max int) string {
	if i := strings.Index(s, ". "); i >= 0 && i < max {
		return s[:i+1]
	}
	return upstream.Truncate(s, max)
}

// shownKeywords are the keywords of an upstream parameter's schema the
// rules already give (type, description, default) or that say nothing a
// call must satisfy.
var shownKeywords = map[string]bool{"type": true, "description": true, "title": true, "default": true, "examples": true,
	"$schema": true, "$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true}

// paramSchemas is, for each parameter of an upstream's input schema, the
// keywords that constrain a call beyond its type (items and their fields,
// lengths, patterns, enums), when they stand on their own: a parameter
// whose schema refers elsewhere ($ref), uses forms JSON Schema 2020-12
// does not read the same way (items as a list), or does not compile alone
// is left as the rules declare it (the call is still validated against
// the whole upstream schema before it is sent).
func paramSchemas(s map[string]any) map[string]map[string]any {
	props, _ := s["properties"].(map[string]any)
	out := map[string]map[string]any{}
	for name, v := range props {
		p, ok := v.(map[string]any)
		if !ok || !standsAlone(p, 0) {
			continue
		}
		extra := map[string]any{}
		for k, kv := range p {
			if !shownKeywords[k] {
				extra[k] = kv
			}
		}
		if len(extra) == 0 {
			continue
		}
		probe := map[string]any{"type": "object", "properties": map[string]any{name: p}}
		raw, err := json.Marshal(probe)
		if err != nil {
			continue
		}
		if _, err := schema.Compile(raw, schema.Limits{MaxBytes: maxSchemaBytes}); err != nil {
			continue
		}
		out[name] = extra
	}
	return out
}

// standsAlone reports whether a schema holds no reference and no list
// form of items, to a bounded depth.
func standsAlone(v any, depth int) bool {
	if depth > 16 {
		return false
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "$ref", "$dynamicRef", "$recursiveRef", "$anchor", "$dynamicAnchor", "definitions", "$defs", "additionalItems", "dependencies":
				return false
			case "items":
				if _, list := x.([]any); list {
					return false
				}
			}
			if !standsAlone(x, depth+1) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !standsAlone(x, depth+1) {
				return false
			}
		}
	}
	return true
}
