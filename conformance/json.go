package conformance

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// Helpers to judge JSON decoded with json.Number into any.

// path walks nested objects; nil when a key is missing.
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v, ok = m[k]
		if !ok {
			return nil
		}
	}
	return v
}

// has reports whether the object m has key k (even with a null value).
func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

// asInt returns an integer JSON number.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil
	case float64:
		if n == math.Trunc(n) {
			return int64(n), true
		}
	}
	return 0, false
}

// asNumber returns any JSON number.
func asNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

func asString(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok
}

func asBool(v any) (bool, bool) {
	b, ok := v.(bool)
	return b, ok
}

func asObject(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok && m != nil
}

func asArray(v any) ([]any, bool) {
	a, ok := v.([]any)
	return a, ok && a != nil
}

// jsonType names the JSON type of v.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if _, ok := asInt(x); ok {
			return "integer"
		}
		return "number"
	case float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// parseTime reads a wire Time: RFC 3339 or epoch milliseconds.
func parseTime(v any) (time.Time, bool) {
	switch x := v.(type) {
	case string:
		t, err := protocol.ParseRFC3339(x) // lowercase t/z and leap seconds too (RFC 3339 section 5.6)
		return t, err == nil
	case json.Number:
		ms, err := strconv.ParseInt(string(x), 10, 64)
		return time.UnixMilli(ms), err == nil
	}
	return time.Time{}, false
}

// mustJSON encodes v; the suite only encodes plain data.
func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// stringsOf returns the strings of a JSON array (false when v is not an
// array of strings).
func stringsOf(v any) ([]string, bool) {
	a, ok := asArray(v)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func sortStrings(s []string) { sort.Strings(s) }
