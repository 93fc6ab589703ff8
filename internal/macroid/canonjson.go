package macroid

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// appendJSON appends v as json.Marshal encodes it, without reflection for
// the values macro-tool ids hash (strings, booleans, integers, json.Number,
// lists, string-keyed maps, string lists, times); any other value is
// encoded by json.Marshal itself. TestAppendJSONMatchesMarshal and
// FuzzAppendJSON hold it to json.Marshal's bytes, so ids do not change.
// It reports false where json.Marshal fails.
func appendJSON(buf []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), true
	case string:
		return appendJSONString(buf, x), true
	case bool:
		return strconv.AppendBool(buf, x), true
	case int:
		return strconv.AppendInt(buf, int64(x), 10), true
	case int64:
		return strconv.AppendInt(buf, x, 10), true
	case json.Number:
		if validNumber(string(x)) {
			return append(buf, x...), true
		}
	case []any:
		return appendJSONList(buf, x, appendJSON)
	case []string:
		return appendJSONList(buf, x, func(buf []byte, s string) ([]byte, bool) { return appendJSONString(buf, s), true })
	case map[string]any:
		if x == nil {
			return append(buf, "null"...), true
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, strings.Compare)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			var ok bool
			if buf, ok = appendJSON(buf, x[k]); !ok {
				return buf, false
			}
		}
		return append(buf, '}'), true
	case *time.Time:
		if x == nil {
			return append(buf, "null"...), true
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return buf, false
	}
	return append(buf, raw...), true
}

// appendJSONString appends s as json.Marshal encodes a string: as it is
// when it is printable ASCII without quotes, backslashes or the characters
// HTML escaping rewrites; else by json.Marshal.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s)
			return append(buf, raw...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// validNumber reports whether s is a JSON number, as json.Marshal checks a
// json.Number before writing it.
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	i := 0
	if s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		digits()
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// appendJSONList appends a list as json.Marshal writes it (null when nil),
// each item by appendItem.
func appendJSONList[T any](buf []byte, xs []T, appendItem func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if xs == nil {
		return append(buf, "null"...), true
	}
	buf = append(buf, '[')
	for i, e := range xs {
		if i > 0 {
			buf = append(buf, ',')
		}
		var ok bool
		if buf, ok = appendItem(buf, e); !ok {
			return buf, false
		}
	}
	return append(buf, ']'), true
}
