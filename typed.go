package manglecp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
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
// A decoding failure (In disagrees with the tool's input_schema) and a
// handler error both become execution_failed for the client; their text
// is logged with the request id, never sent.
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
	return ActionSpec{Run: run, OutputSchema: outSchema}
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
