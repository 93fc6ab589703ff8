package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// MaxNestingDepth is the deepest nesting of arrays and objects a message may
// have. Deeper messages are malformed: no legitimate fact needs it, and it
// bounds the work of every later decoding step.
const MaxNestingDepth = 64

// checkJSON verifies data is one JSON value, with no duplicate object keys
// at any depth and nesting no deeper than MaxNestingDepth.
func checkJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 {
				return errors.New("unexpected end of input")
			}
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				markValue(stack)
				continue
			}
			key := tok.(string)
			if _, dup := top.keys[key]; dup {
				return fmt.Errorf("duplicate object key %q", key)
			}
			top.keys[key] = struct{}{}
			top.expect = false
			continue
		}
		switch d := tok.(type) {
		case json.Delim:
			switch d {
			case '{', '[':
				if len(stack) >= MaxNestingDepth {
					return fmt.Errorf("nesting deeper than %d levels", MaxNestingDepth)
				}
				stack = append(stack, &frame{object: d == '{', keys: map[string]struct{}{}, expect: d == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				markValue(stack)
			}
		default:
			markValue(stack)
		}
		if len(stack) == 0 && dec.More() {
			return errors.New("more than one JSON value in the message")
		}
	}
}

// frame is one open array or object while checking JSON.
type frame struct {
	object bool
	keys   map[string]struct{}
	expect bool // in an object: the next token is a key
}

// markValue records that a value ended inside the innermost open object,
// so the next token there is a key again.
func markValue(stack []*frame) {
	if len(stack) > 0 && stack[len(stack)-1].object {
		stack[len(stack)-1].expect = true
	}
}

// DecodePayload strictly decodes an envelope payload into v: unknown fields
// are rejected and numbers keep their exact text (json.Number). Errors are
// malformed_message with the offending field when known.
func DecodePayload(payload json.RawMessage, v any) *Error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return payloadError(err)
	}
	return nil
}

func payloadError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		return Errorf(CodeMalformedMessage, "payload field %q has the wrong type: got JSON %s, want %s", field, te.Value, jsonKind(te.Type.Kind().String())).
			WithDetails(&ErrorDetails{Field: field})
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		field := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		return Errorf(CodeMalformedMessage, "unknown payload field %q", field).WithDetails(&ErrorDetails{Field: field})
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return Errorf(CodeMalformedMessage, "payload is invalid: %s", strings.TrimPrefix(msg, "json: "))
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	case "slice", "array":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	}
	return goKind
}

func sortStrings(s []string) { sort.Strings(s) }
