package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// checkJSON verifies data is one JSON value, with no duplicate object keys
// at any depth and nesting no deeper than MaxNestingDepth.
//
// Valid JSON (json.Valid, which allocates nothing) is checked by
// scanValidJSON, a byte scan that allocates only for keys with escapes and
// objects of many keys; anything else goes through checkJSONTokens, which
// words the syntax error. Both report the first problem in document order,
// so the answer is the same either way.
func checkJSON(data []byte) error {
	if !json.Valid(data) {
		return checkJSONTokens(data)
	}
	return scanValidJSON(data)
}

// scanFrame is one open array or object during scanValidJSON.
type scanFrame struct {
	object    bool
	expectKey bool
	keys      int // where the object's keys start in the scan's key list
	set       map[string]struct{}
}

// manyKeys is where an object's keys move from a list to a map.
const manyKeys = 16

// keyScan holds the keys of the open objects, innermost last, so that
// checking an object's keys allocates nothing unless it has many.
type keyScan struct {
	stack []scanFrame
	keys  [][]byte // the keys of the open objects so far, unescaped
}

// scanValidJSON checks duplicate keys and nesting in data, which must be
// valid JSON.
func scanValidJSON(data []byte) error {
	var ks keyScan
	ks.stack = make([]scanFrame, 0, 8)
	ks.keys = make([][]byte, 0, 32)
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{', '[':
			if len(ks.stack) >= MaxNestingDepth {
				return fmt.Errorf("nesting deeper than %d levels", MaxNestingDepth)
			}
			ks.stack = append(ks.stack, scanFrame{object: c == '{', expectKey: c == '{', keys: len(ks.keys)})
		case '}', ']':
			ks.keys = ks.keys[:ks.stack[len(ks.stack)-1].keys]
			ks.stack = ks.stack[:len(ks.stack)-1]
		case ',':
			if top := len(ks.stack) - 1; top >= 0 && ks.stack[top].object {
				ks.stack[top].expectKey = true
			}
		case '"':
			start := i + 1
			escaped := false
			for i++; data[i] != '"'; i++ {
				if data[i] == '\\' {
					escaped = true
					i++
				}
			}
			top := len(ks.stack) - 1
			if top < 0 || !ks.stack[top].object || !ks.stack[top].expectKey {
				continue
			}
			ks.stack[top].expectKey = false
			key := data[start:i]
			if escaped || !utf8.Valid(key) { // decoded as encoding/json does
				var s string
				if err := json.Unmarshal(data[start-1:i+1], &s); err != nil {
					return err
				}
				key = []byte(s)
			}
			if dup := ks.add(key); dup {
				return fmt.Errorf("duplicate object key %q", key)
			}
		}
	}
	return nil
}

// add records key in the innermost object and reports whether the object
// already had it.
func (ks *keyScan) add(key []byte) bool {
	f := &ks.stack[len(ks.stack)-1]
	if f.set != nil {
		if _, ok := f.set[string(key)]; ok {
			return true
		}
		f.set[string(key)] = struct{}{}
		return false
	}
	own := ks.keys[f.keys:]
	for _, k := range own {
		if bytes.Equal(k, key) {
			return true
		}
	}
	ks.keys = append(ks.keys, key)
	if len(own)+1 > manyKeys {
		f.set = make(map[string]struct{}, 2*manyKeys)
		for _, k := range ks.keys[f.keys:] {
			f.set[string(k)] = struct{}{}
		}
		ks.keys = ks.keys[:f.keys]
	}
	return false
}

// decodeSimple decodes raw into v without a json.Decoder when raw is of
// the commonest shapes of a fact's fields: a string without escapes into a
// *string, or an array of such strings, numbers, booleans and nulls into a
// *[]any (numbers as json.Number, as the decoder with UseNumber gives
// them). It reports false, having changed nothing, for anything else.
// raw must be valid JSON.
func decodeSimple(raw []byte, v any) bool {
	raw = bytes.TrimSpace(raw)
	switch p := v.(type) {
	case *string:
		s, n, ok := simpleString(raw)
		if !ok || n != len(raw) {
			return false
		}
		*p = s
		return true
	case *[]any:
		if len(raw) < 2 || raw[0] != '[' {
			return false
		}
		out := make([]any, 0, 4)
		i := 1
		for {
			for i < len(raw) && isSpace(raw[i]) {
				i++
			}
			if raw[i] == ']' && len(out) == 0 {
				i++
				break
			}
			j := i
			switch c := raw[i]; {
			case c == '"':
				s, n, ok := simpleString(raw[i:])
				if !ok {
					return false
				}
				out = append(out, s)
				j = i + n
			case c == '-' || (c >= '0' && c <= '9'):
				for j < len(raw) && (raw[j] == '-' || raw[j] == '+' || raw[j] == '.' || raw[j] == 'e' || raw[j] == 'E' || (raw[j] >= '0' && raw[j] <= '9')) {
					j++
				}
				out = append(out, json.Number(raw[i:j]))
			case bytes.HasPrefix(raw[i:], []byte("true")):
				out, j = append(out, true), i+4
			case bytes.HasPrefix(raw[i:], []byte("false")):
				out, j = append(out, false), i+5
			case bytes.HasPrefix(raw[i:], []byte("null")):
				out, j = append(out, nil), i+4
			default:
				return false // an object or a nested array
			}
			for j < len(raw) && isSpace(raw[j]) {
				j++
			}
			i = j + 1
			if raw[j] == ']' {
				break
			}
		}
		if i != len(raw) {
			return false
		}
		*p = out
		return true
	}
	return false
}

// simpleString reads the JSON string at the start of raw when it has no
// escapes and is valid UTF-8, returning it and its length with quotes.
func simpleString(raw []byte) (string, int, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", 0, false
	}
	end := bytes.IndexByte(raw[1:], '"') + 1
	if end <= 0 {
		return "", 0, false
	}
	body := raw[1:end]
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		return "", 0, false
	}
	return string(body), end + 1, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
