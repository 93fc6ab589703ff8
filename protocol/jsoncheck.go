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
// Most messages pass validJSONOnePass, one byte scan that validates and
// checks keys and nesting together. Anything it is not sure of takes the
// path that words the problem: valid JSON (json.Valid, which allocates
// nothing) is checked by scanValidJSON, a byte scan that allocates only
// for keys with escapes and objects of many keys; anything else goes
// through checkJSONTokens, which words the syntax error. Both report the
// first problem in document order, so the answer is the same either way.
func checkJSON(data []byte) error {
	_, err := checkJSONLast(data, nil)
	return err
}

// checkJSONLast is checkJSON that also returns, when data is an object the
// one-pass scan validated, where its last member's value starts (-1
// otherwise): a decoder of its members need not scan that value to find
// its end, which is the end of the object. When list is not nil, the scan
// also records the array list names (see listScan); list.found() reports
// whether it did.
func checkJSONLast(data []byte, list *listScan) (int, error) {
	if last, ok := validJSONScan(data, list); ok {
		return last, nil
	}
	if list != nil {
		list.end = 0 // what the failed scan recorded is not to be used
	}
	return -1, checkJSONSlow(data)
}

// checkJSONSlow is checkJSON without the one-pass scan.
func checkJSONSlow(data []byte) error {
	if !json.Valid(data) {
		return checkJSONTokens(data)
	}
	return scanValidJSON(data)
}

// validJSONOnePass reports true when data is one valid JSON value (as
// json.Valid decides) with no duplicate keys and nesting no deeper than
// MaxNestingDepth. It reports false for anything else, and for keys with
// escapes or bytes beyond ASCII, which it leaves to the decoder.
func validJSONOnePass(data []byte) bool {
	_, ok := validJSONScan(data, nil)
	return ok
}

// listScan is what validJSONScan records, besides checking, of the array
// at payload.<name> of a top-level object (an intent request's facts):
// where the payload's value and the array are, and the array's items, so
// that the array need not be scanned again to split it. Only a scan that
// reports the data valid leaves a record to use.
type listScan struct {
	name         string
	items        []json.RawMessage // starts as the caller's array, emptied
	inGiven      bool              // the items went to the caller's array (at first: more may have outgrown it)
	payloadStart int               // where payload's value starts
	payloadEnd   int               // and ends (0: not yet)
	start, end   int               // where the array starts and ends (end 0: none found)
	item         int               // where the current item starts
}

// found reports whether the scan recorded the array.
func (l *listScan) found() bool { return l != nil && l.end > 0 }

// opens notes a container that starts at data[i] within the open
// containers stack, and reports whether it is the array to record.
func (l *listScan) opens(stack []scanFrame, c byte, i int, data []byte) bool {
	switch {
	case len(stack) == 1 && c == '{' && stack[0].object && string(stack[0].key) == "payload":
		l.payloadStart = i
	case len(stack) == 2 && c == '[' && stack[1].object && string(stack[1].key) == l.name && l.payloadStart > 0 && l.payloadEnd == 0:
		l.start = i
		// Room for items of 64 bytes, as arrayItems gives, in the
		// caller's array when it has that room.
		if room := 16 + (len(data)-i)/64; cap(l.items) < room {
			l.items = make([]json.RawMessage, 0, room)
		} else {
			l.inGiven = true
		}
		return true
	}
	return false
}

// closes notes that the container f, which was open within stack, ends
// before data[end].
func (l *listScan) closes(stack []scanFrame, f scanFrame, end int) {
	switch {
	case f.list:
		l.end = end
	case len(stack) == 1 && f.object && l.payloadStart > 0 && l.payloadEnd == 0 && string(stack[0].key) == "payload":
		l.payloadEnd = end
	}
}

// validJSONScan is validJSONOnePass that also returns where the last
// member's value of a top-level object starts (-1 for anything else), and
// fills list when not nil.
func validJSONScan(data []byte, list *listScan) (int, bool) {
	ks := keyScan{last: -1, list: list}
	var stackBuf [16]scanFrame
	var keysBuf [32][]byte
	ks.stack, ks.keys = stackBuf[:0], keysBuf[:0]
	i := skipWS(data, 0)
	for {
		// A value starts at data[i].
		if i >= len(data) {
			return -1, false
		}
		if n := len(ks.stack); n > 0 && ks.stack[n-1].list {
			list.item = i
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if len(ks.stack) >= MaxNestingDepth {
				return -1, false
			}
			f := scanFrame{object: c == '{', keys: len(ks.keys)}
			if list != nil && len(ks.stack) <= 2 {
				f.list = list.opens(ks.stack, c, i, data)
			}
			ks.stack = append(ks.stack, f)
			i = skipWS(data, i+1)
			if i < len(data) && (data[i] == '}' && c == '{' || data[i] == ']' && c == '[') {
				i++
				ks.pop(i)
				break
			}
			if c == '{' {
				n, ok := ks.key(data, i)
				if !ok {
					return -1, false
				}
				i = n
			}
			continue
		case c == '"':
			n, ok := validString(data, i)
			if !ok {
				return -1, false
			}
			i = n
		case c == '-' || (c >= '0' && c <= '9'):
			n, ok := scanNumber(data, i)
			if !ok {
				return -1, false
			}
			i = n
		case c == 't' && bytes.HasPrefix(data[i:], []byte("true")):
			i += 4
		case c == 'f' && bytes.HasPrefix(data[i:], []byte("false")):
			i += 5
		case c == 'n' && bytes.HasPrefix(data[i:], []byte("null")):
			i += 4
		default:
			return -1, false
		}
		// A value ended before data[i]: close what it ends, then find the
		// next value.
		for {
			if n := len(ks.stack); n > 0 && ks.stack[n-1].list {
				list.items = append(list.items, data[list.item:i:i])
			}
			i = skipWS(data, i)
			if len(ks.stack) == 0 {
				return ks.last, i == len(data)
			}
			if i >= len(data) {
				return -1, false
			}
			top := &ks.stack[len(ks.stack)-1]
			switch data[i] {
			case ',':
				i = skipWS(data, i+1)
				if top.object {
					n, ok := ks.key(data, i)
					if !ok {
						return -1, false
					}
					i = n
				}
			case '}', ']':
				if top.object != (data[i] == '}') {
					return -1, false
				}
				i++
				ks.pop(i)
				continue
			default:
				return -1, false
			}
			break
		}
	}
}

// key reads an object key, new in the innermost object, and the colon
// after it at data[i], returning the index of the value after them (in
// last, too, for a member of the top-level object).
func (ks *keyScan) key(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	j := i + 1
	for j < len(data) && data[j] != '"' {
		if c := data[j]; c < 0x20 || c >= 0x80 || c == '\\' {
			return 0, false
		}
		j++
	}
	key := data[i+1 : j]
	if j >= len(data) || ks.add(key) {
		return 0, false
	}
	j = skipWS(data, j+1)
	if j >= len(data) || data[j] != ':' {
		return 0, false
	}
	v := skipWS(data, j+1)
	switch len(ks.stack) {
	case 1:
		ks.last = v
		ks.stack[0].key = key
	case 2:
		ks.stack[1].key = key
	}
	return v, true
}

// pop closes the innermost container, which ends before data[end].
func (ks *keyScan) pop(end int) {
	n := len(ks.stack)
	f := ks.stack[n-1]
	ks.keys = ks.keys[:f.keys]
	ks.stack = ks.stack[:n-1]
	if ks.list != nil && n <= 3 {
		ks.list.closes(ks.stack, f, end)
	}
}

// validString returns the index after the valid JSON string at data[i].
func validString(data []byte, i int) (int, bool) {
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			j++
			if j >= len(data) {
				return 0, false
			}
			switch data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(data) {
					return 0, false
				}
				for _, h := range data[j+1 : j+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				j += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// scanFrame is one open array or object during scanValidJSON.
type scanFrame struct {
	object    bool
	expectKey bool
	list      bool   // validJSONScan: the array whose items it records
	keys      int    // where the object's keys start in the scan's key list
	key       []byte // validJSONScan: the object's current key (the top two levels only)
	set       map[string]struct{}
}

// manyKeys is where an object's keys move from a list to a map.
const manyKeys = 16

// keyScan holds the keys of the open objects, innermost last, so that
// checking an object's keys allocates nothing unless it has many.
type keyScan struct {
	stack []scanFrame
	keys  [][]byte  // the keys of the open objects so far, unescaped
	last  int       // where key last found a value of the top-level object
	list  *listScan // validJSONScan's record of one array, or nil
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
// *string, an array of such strings, numbers, booleans and nulls into a
// *[]any, or one string, number, boolean or null into an *any (numbers as
// json.Number, as the decoder with UseNumber gives them). It reports false, having changed nothing, for anything else.
// raw must be valid JSON.
func decodeSimple(raw []byte, v any) bool {
	if p, ok := v.(*any); ok {
		i := skipWS(raw, 0)
		if i < len(raw) && raw[i] != '[' && raw[i] != '{' {
			if x, n, ok := scanScalar(raw, i); ok && skipWS(raw, n) == len(raw) {
				*p = x
				return true
			}
		}
		return false
	}
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
