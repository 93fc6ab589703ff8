package testenv

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// ReadableID is the fuzz tests' own oracle for "the id of a request could
// be read": data is UTF-8 without a BOM, one JSON object with no duplicate
// keys and no nesting beyond maxDepth ([WellFormedJSON]), and its "id" is
// a JSON string, which it returns.
func ReadableID(data []byte, maxDepth int) (string, bool) {
	if bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}) || !utf8.Valid(data) || !json.Valid(data) || !WellFormedJSON(data, maxDepth) {
		return "", false
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal(data, &raw) != nil || raw == nil {
		return "", false
	}
	var id string
	if v, ok := raw["id"]; !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) || json.Unmarshal(v, &id) != nil {
		return "", false
	}
	return id, true
}

// WellFormedJSON reports whether valid JSON has no duplicate object keys
// and nests objects and arrays no deeper than maxDepth.
func WellFormedJSON(data []byte, maxDepth int) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1e400 is valid JSON
	type level struct {
		keys   map[string]bool
		object bool
		key    bool // in an object: the next token is a key
	}
	var stack []*level
	valueDone := func() {
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			k := tok.(string)
			if stack[n-1].keys[k] {
				return false
			}
			stack[n-1].keys[k], stack[n-1].key = true, false
			continue
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				if len(stack) >= maxDepth {
					return false
				}
				stack = append(stack, &level{keys: map[string]bool{}, object: d == '{', key: d == '{'})
				continue
			}
			stack = stack[:len(stack)-1]
		}
		valueDone()
	}
}
