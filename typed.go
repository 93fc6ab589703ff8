package manglecp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/manglecp/manglecp/kernel"
)

// TypedHandler is the handler of a typed action (see [Typed]): it receives
// the invocation's arguments decoded into In and returns the result as Out.
// The *Outcome it returns, which may be nil, supplies the rest of the
// response (summary, events, state delta, continuation facts); its Result
// is replaced by Out.
type TypedHandler[In, Out any] func(ctx context.Context, call *Call, in In) (*Outcome, Out, error)

// Typed registers a typed action, in the spirit of the MCP Go SDK's typed
// tools: the server has already validated the arguments against the
// macro-tool's input_schema (which the rules declare with tool_param), so
// the handler gets them decoded into In with encoding/json (field names
// from `json` tags; numbers decode into any Go numeric type), and Out,
// encoded with encoding/json, becomes the result object. The output_schema
// advertised on the macro-tool is inferred from Out, and every result is
// checked against it.
//
// In and Out must be struct types or maps with string keys (a result is a
// JSON object). Typed panics at registration otherwise, as a programming
// error.
//
// When the rules load ([NewServer], [Server.Reload]), In is checked
// against the parameters the rules declare for every tool the action runs
// (tool_param with constants): each parameter needs a field (by its json
// name) whose Go type can hold the parameter's JSON Schema type, e.g. an
// integer parameter an int, int64, float64 or json.Number field. A
// mismatch stops the server naming the tool, the field and the
// tool_param's file:line. A map In accepts every parameter.
//
// A decoding failure that remains (a parameter a rule derives per
// request) and a handler error both become execution_failed for the
// client; their text is logged with the request id, never sent.
func Typed[In, Out any](h TypedHandler[In, Out]) ActionSpec {
	mustBeObject[In]("input")
	mustBeObject[Out]("output")
	schema, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("manglecp.Typed: cannot infer an output schema for %s: %v", reflect.TypeFor[Out](), err))
	}
	var outSchema map[string]any
	if raw, err := json.Marshal(schema); err != nil || json.Unmarshal(raw, &outSchema) != nil {
		panic(fmt.Sprintf("manglecp.Typed: output schema for %s does not encode", reflect.TypeFor[Out]()))
	}
	run := func(ctx context.Context, call *Call) (*Outcome, error) {
		var in In
		raw, err := json.Marshal(call.Args)
		if err != nil {
			return nil, fmt.Errorf("typed action %s: encode arguments: %w", call.Tool, err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return nil, fmt.Errorf("typed action %s: arguments do not decode into %s: %w", call.Tool, reflect.TypeFor[In](), err)
		}
		out, res, err := h(ctx, call, in)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = &Outcome{}
		}
		result, err := toObject(res)
		if err != nil {
			return nil, fmt.Errorf("typed action %s: result: %w", call.Tool, err)
		}
		out.Result = result
		return out, nil
	}
	return ActionSpec{Run: run, OutputSchema: outSchema, input: reflect.TypeFor[In]()}
}

// mustBeObject panics unless T encodes as a JSON object.
func mustBeObject[T any](what string) {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct:
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
	default:
		panic(fmt.Sprintf("manglecp.Typed: the %s type %s is not a struct or a map with string keys", what, t))
	}
}

// toObject encodes v as a JSON object and decodes it into a map, keeping
// numbers exact (json.Number).
func toObject(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// typedMismatches checks the input type of every Typed action against the
// parameters the rules declare for its tools, at the tool_param that does
// not fit.
func typedMismatches(params map[string][]kernel.DeclaredParam, actions map[string]ActionSpec) kernel.LoadErrors {
	var errs kernel.LoadErrors
	for _, name := range sortedKeys(actions) {
		in := actions[name].input
		for in != nil && in.Kind() == reflect.Pointer {
			in = in.Elem()
		}
		if in == nil || in.Kind() != reflect.Struct {
			continue // raw actions and map inputs take any arguments
		}
		fields := jsonFields(in)
		for _, p := range params[name] {
			f, ok := fields[p.Name]
			if !ok {
				f, ok = fields[strings.ToLower(p.Name)]
			}
			if !ok {
				errs = append(errs, &kernel.LoadError{File: p.File, Line: p.Line, Message: fmt.Sprintf(
					"tool %q: Typed action %q's input %s has no field for parameter %q (add a field with `json:\"%s\"`)", p.Tool, name, in, p.Name, p.Name)})
				continue
			}
			if p.Type != "" && !holds(f.Type, p.Type) {
				errs = append(errs, &kernel.LoadError{File: p.File, Line: p.Line, Message: fmt.Sprintf(
					"tool %q: Typed action %q's field %s.%s (%s) cannot hold parameter %q, which is %s", p.Tool, name, in.Name(), f.Name, f.Type, p.Name, article(p.Type))})
			}
		}
	}
	return errs
}

func article(t string) string {
	switch t {
	case "array", "integer", "object":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// jsonFields returns the fields of a struct type by the name
// encoding/json decodes them from (promoted fields of embedded structs
// included; a name matches case-insensitively, as encoding/json does).
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || (f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("json") == "") {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	// encoding/json also matches names case-insensitively.
	for name, f := range out {
		if _, ok := out[strings.ToLower(name)]; !ok {
			out[strings.ToLower(name)] = f
		}
	}
	return out
}

var (
	jsonNumberType = reflect.TypeFor[json.Number]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// holds reports whether encoding/json can decode every value of a JSON
// Schema type into a Go type.
func holds(t reflect.Type, jsonType string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || t == rawMessageType {
		return true
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return true // it decodes itself
	}
	switch jsonType {
	case "string":
		return t.Kind() == reflect.String
	case "integer":
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			return true
		}
		return t == jsonNumberType
	case "number":
		return t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64 || t == jsonNumberType
	case "boolean":
		return t.Kind() == reflect.Bool
	case "array":
		return t.Kind() == reflect.Slice || t.Kind() == reflect.Array
	case "object":
		return t.Kind() == reflect.Struct || (t.Kind() == reflect.Map && t.Key().Kind() == reflect.String)
	}
	return true // null decodes into anything
}
