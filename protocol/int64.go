package protocol

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// MaxSafeInteger is 2^53 - 1, the largest integer every JSON reader
// carries exactly. Integers beyond ±MaxSafeInteger go on the wire in the
// int64 wrapper (Spec 03 section 3.2).
const MaxSafeInteger = 1<<53 - 1

// Int64Wrapper returns the wire form of n: n itself within
// ±[MaxSafeInteger], otherwise {"_type":"int64","value":"<n>"}.
func Int64Wrapper(n int64) any {
	if n > MaxSafeInteger || n < -MaxSafeInteger {
		return map[string]any{"_type": "int64", "value": strconv.FormatInt(n, 10)}
	}
	return n
}

// WireValue returns v as it must go out (Spec 03 section 3.2: the wrapper
// is a MUST wherever a value goes out): every integer beyond
// ±[MaxSafeInteger], as a Go integer or an integral json.Number, inside
// lists and maps too, becomes the int64 wrapper. Other values are returned
// unchanged; v itself is never modified (lists and maps that need a change
// are copied).
func WireValue(v any) any {
	out, _ := wireValue(v)
	return out
}

// wireValue reports whether it changed anything, so that unchanged lists
// and maps are not copied.
func wireValue(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return v, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			// Beyond int64: not a valid wire integer at all; keep the exact
			// digits in the wrapper rather than a number readers round.
			if _, ok := new(big.Int).SetString(s, 10); ok {
				return map[string]any{"_type": "int64", "value": s}, true
			}
			return v, false
		}
		if n > MaxSafeInteger || n < -MaxSafeInteger {
			return Int64Wrapper(n), true
		}
		return v, false
	case int64:
		return wrapIfBig(x)
	case int:
		return wrapIfBig(int64(x))
	case int32, int16, int8, uint8, uint16, uint32:
		return v, false
	case uint:
		if uint64(x) > MaxSafeInteger {
			return map[string]any{"_type": "int64", "value": strconv.FormatUint(uint64(x), 10)}, true
		}
		return v, false
	case uint64:
		if x > MaxSafeInteger {
			return map[string]any{"_type": "int64", "value": strconv.FormatUint(x, 10)}, true
		}
		return v, false
	case []any:
		var out []any
		for i, e := range x {
			w, changed := wireValue(e)
			if changed && out == nil {
				out = append(make([]any, 0, len(x)), x[:i]...)
			}
			if out != nil {
				out = append(out, w)
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case map[string]any:
		if _, wrapped := x["_type"]; wrapped {
			return v, false
		}
		var out map[string]any
		for k, e := range x {
			w, changed := wireValue(e)
			if !changed {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			out[k] = w
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

func wrapIfBig(n int64) (any, bool) {
	if n > MaxSafeInteger || n < -MaxSafeInteger {
		return Int64Wrapper(n), true
	}
	return n, false
}
