package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// MaxNestingDepth is the deepest nesting of arrays and objects a message may
// have. Deeper messages are malformed: no legitimate fact needs it, and it
// bounds the work of every later decoding step.
const MaxNestingDepth = 64

// checkJSONTokens is checkJSON by a walk over encoding/json tokens; it
// also words the syntax error of invalid JSON.
func checkJSONTokens(data []byte) error {
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
				if len(stack) == 0 && dec.More() {
					return errors.New("more than one JSON value in the message")
				}
				continue
			}
			key := tok.(string)
			if _, dup := top.keys[key]; dup {
				return fmt.Errorf("duplicate object key %s", Quote(key))
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

// DecodePayload strictly decodes an envelope payload into v: field names
// must match exactly (encoding/json alone matches them case-insensitively),
// unknown fields and trailing data are rejected, and numbers keep their
// exact text (json.Number). Errors are malformed_message with the offending
// field's dotted path when known.
func DecodePayload(payload json.RawMessage, v any) *Error {
	return decodePayload(payload, v, false)
}

// decodePayload is DecodePayload; checked says payload is known to be
// valid JSON without duplicate keys, so its keys are read by a byte scan.
func decodePayload(payload json.RawMessage, v any, checked bool) *Error {
	if err := checkKeysIn(payload, reflect.TypeOf(v), "", checked); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return payloadError(err)
	}
	if dec.More() {
		return Errorf(CodeMalformedMessage, "the payload is followed by more data")
	}
	return nil
}

// DecodePayloadList decodes env's payload into v exactly as DecodePayload
// does when v's field for the top-level key name is list, a
// []json.RawMessage: list gets the array's items undecoded, in list's own
// array when it has room (as encoding/json reuses it). The items may be
// slices of the payload rather than copies: do not modify them. For a
// message read by DecodeEnvelope the array is split by a byte scan and
// only the rest of the payload goes through encoding/json, so a payload of
// many items is not decoded twice; with name "facts" the items are the
// ones DecodeEnvelope split while checking the message, so the array is
// not scanned again either (list's array is then not used).
func DecodePayloadList(env *Envelope, v any, name string, list *[]json.RawMessage) *Error {
	if !env.checked {
		return DecodePayload(env.Payload, v)
	}
	var start, end int
	var items []json.RawMessage
	var ok bool
	if l := env.list.of(env.Payload, name); l != nil {
		start, end, items, ok = l.start, l.end, l.items, true
	} else {
		start, end, items, ok = splitList(env.Payload, name, *list)
	}
	if ok {
		// The payload without the items: what is left decodes, and fails,
		// exactly as the whole would, since every array is a valid
		// []json.RawMessage.
		head := make([]byte, 0, len(env.Payload)-(end-start)+2)
		head = append(append(append(head, env.Payload[:start]...), "[]"...), env.Payload[end:]...)
		if err := decodePayload(head, v, true); err != nil {
			return err
		}
		*list = items
		return nil
	}
	return decodePayload(env.Payload, v, true)
}

// splitList finds the array under the top-level key name of payload (valid
// JSON) and returns where it starts and ends and its items. It reports
// false when there is none, or when a key has escapes.
func splitList(payload []byte, name string, into []json.RawMessage) (start, end int, items []json.RawMessage, ok bool) {
	i := skipWS(payload, 0)
	if i >= len(payload) || payload[i] != '{' {
		return 0, 0, nil, false
	}
	start = -1
	i = skipWS(payload, i+1)
	if i < len(payload) && payload[i] == '}' {
		return 0, 0, nil, false
	}
	for {
		key, next, ok := memberKey(payload, i)
		if !ok {
			return 0, 0, nil, false
		}
		i = next
		var n int
		if key == name && payload[i] == '[' {
			items, n, ok = arrayItems(into, payload, i)
			start, end = i, n
		} else {
			n, ok = skipValue(payload, i)
		}
		if !ok {
			return 0, 0, nil, false
		}
		i = skipWS(payload, n)
		if i >= len(payload) {
			return 0, 0, nil, false
		}
		if payload[i] == '}' {
			return start, end, items, start >= 0
		}
		if payload[i] != ',' {
			return 0, 0, nil, false
		}
		i = skipWS(payload, i+1)
	}
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// checkKeys verifies that every object key in raw names a field of t by its
// exact JSON name, recursing into nested structs and slices of structs.
// Types with their own UnmarshalJSON check themselves.
func checkKeys(raw json.RawMessage, t reflect.Type, path string) *Error {
	return checkKeysIn(raw, t, path, false)
}

// checkKeysIn is checkKeys; with checked (raw is valid JSON without
// duplicate keys) objects and arrays are split by a byte scan instead of
// encoding/json, with the same members.
func checkKeysIn(raw json.RawMessage, t reflect.Type, path string, checked bool) *Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := rawObject(raw, checked)
		if !ok {
			return nil // not an object: the decoder reports the type error
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			name := joinPath(path, k)
			if !ok {
				return Errorf(CodeMalformedMessage, "unknown field %s", Quote(name)).WithDetails(&ErrorDetails{Field: Clip(name)})
			}
			if err := checkKeysIn(obj[k], ft, name, checked); err != nil {
				return err
			}
		}
	case reflect.Slice:
		var items []json.RawMessage
		if j := skipWS(raw, 0); checked && j < len(raw) && raw[j] == '[' {
			var n int
			var ok bool
			if items, n, ok = arrayItems(nil, raw, j); !ok || skipWS(raw, n) != len(raw) {
				items = nil
				if json.Unmarshal(raw, &items) != nil {
					return nil
				}
			}
		} else if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for i, item := range items {
			if err := checkKeysIn(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), checked); err != nil {
				return err
			}
		}
	}
	return nil
}

// rawObject is json.Unmarshal of raw into a map of raw members, by a byte
// scan when raw is checked and its keys have no escapes.
func rawObject(raw json.RawMessage, checked bool) (map[string]json.RawMessage, bool) {
	if checked {
		obj := make(map[string]json.RawMessage, 8)
		if objectMembers(raw, func(key, value []byte, _ int) bool {
			obj[string(key)] = value
			return true
		}) {
			return obj, true
		}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil, false
	}
	return obj, true
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// jsonFields maps the exact JSON names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func payloadError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if te.Type == timeType { // a time that does not parse: Value says why
			return Errorf(CodeMalformedMessage, "payload field %s: %s", Quote(field), te.Value).
				WithDetails(&ErrorDetails{Field: Clip(field)})
		}
		return Errorf(CodeMalformedMessage, "payload field %s has the wrong type: got JSON %s, want %s", Quote(field), te.Value, jsonKind(te.Type.Kind().String())).
			WithDetails(&ErrorDetails{Field: Clip(field)})
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		field := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		return Errorf(CodeMalformedMessage, "unknown payload field %s", Quote(field)).WithDetails(&ErrorDetails{Field: Clip(field)})
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return Errorf(CodeMalformedMessage, "payload is invalid: %s", Clip(strings.TrimPrefix(msg, "json: ")))
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
