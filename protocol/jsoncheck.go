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
	keys      [][]byte // the object's keys so far, unescaped
	set       map[string]struct{}
}

// manyKeys is where an object's keys move from a list to a map.
const manyKeys = 16

// scanValidJSON checks duplicate keys and nesting in data, which must be
// valid JSON.
func scanValidJSON(data []byte) error {
	var stack []scanFrame
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{', '[':
			if len(stack) >= MaxNestingDepth {
				return fmt.Errorf("nesting deeper than %d levels", MaxNestingDepth)
			}
			stack = append(stack, scanFrame{object: c == '{', expectKey: c == '{'})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := len(stack) - 1; top >= 0 && stack[top].object {
				stack[top].expectKey = true
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
			top := len(stack) - 1
			if top < 0 || !stack[top].object || !stack[top].expectKey {
				continue
			}
			f := &stack[top]
			f.expectKey = false
			key := data[start:i]
			if escaped || !utf8.Valid(key) { // decoded as encoding/json does
				var s string
				if err := json.Unmarshal(data[start-1:i+1], &s); err != nil {
					return err
				}
				key = []byte(s)
			}
			if dup := f.add(key); dup {
				return fmt.Errorf("duplicate object key %q", key)
			}
		}
	}
	return nil
}

// add records key and reports whether the object already had it.
func (f *scanFrame) add(key []byte) bool {
	if f.set != nil {
		if _, ok := f.set[string(key)]; ok {
			return true
		}
		f.set[string(key)] = struct{}{}
		return false
	}
	for _, k := range f.keys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	f.keys = append(f.keys, key)
	if len(f.keys) > manyKeys {
		f.set = make(map[string]struct{}, 2*manyKeys)
		for _, k := range f.keys {
			f.set[string(k)] = struct{}{}
		}
		f.keys = nil
	}
	return false
}
