package protocol

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// FactKey is a fact's identity (Spec 03 section 5): its predicate, its
// arguments and its temporal annotation; provenance and category are not
// part of it. Two facts are the same fact exactly when their keys are
// equal. Servers find duplicate facts and hash macro_ids by it, and
// clients keep their working state by it, so both agree by construction.
//
// The key reads f as a server holds it after decoding: positional
// arguments, numbers as [json.Number] (compared by their text, so 1 and
// 1.0 differ, as integer and float do), int64 wrappers unwrapped, and the
// temporal bounds by their JSON text (an instant written two ways is two
// annotations). [CanonicalFact] brings a fact built in Go to that form.
// The key is text for hashing and comparing, not for parsing.
func FactKey(f Fact) string { return string(AppendFactKey(nil, f)) }

// AppendFactKey appends [FactKey] of f to buf. It is the allocation-free
// form a server uses on every fact of a request.
func AppendFactKey(buf []byte, f Fact) []byte {
	buf = appendQuote(buf, f.Pred)
	for _, a := range f.Args {
		buf = append(buf, ' ')
		buf = AppendArgKey(buf, a)
	}
	if f.T != nil {
		buf = append(buf, " @"...)
		buf = appendTemporal(buf, f.T)
	}
	return buf
}

// AppendTemporalKey appends the key of a temporal annotation, as
// [AppendFactKey] writes it after the arguments: two annotations are the
// same exactly when their keys are equal.
func AppendTemporalKey(buf []byte, t *Temporal) []byte { return appendTemporal(buf, t) }

// appendTemporal appends json.Marshal(t)'s text: the bounds that are set,
// in the order at, start, end. It writes the commonest bounds itself
// (strings json.Marshal writes as they are, and integers), and leaves any
// other to json.Marshal, whose text (nothing, on an error) it then is.
func appendTemporal(buf []byte, t *Temporal) []byte {
	start := len(buf)
	buf = append(buf, '{')
	for _, b := range [...]struct {
		name string
		v    any
	}{{`"at":`, t.At}, {`"start":`, t.Start}, {`"end":`, t.End}} {
		if b.v == nil {
			continue
		}
		if buf[len(buf)-1] != '{' {
			buf = append(buf, ',')
		}
		buf = append(buf, b.name...)
		switch x := b.v.(type) {
		case string:
			if !marshalsAsIs(x) {
				return appendMarshaled(buf[:start], t)
			}
			buf = append(buf, '"')
			buf = append(buf, x...)
			buf = append(buf, '"')
		case json.Number:
			if !plainInteger(string(x)) {
				return appendMarshaled(buf[:start], t)
			}
			buf = append(buf, x...)
		default:
			return appendMarshaled(buf[:start], t)
		}
	}
	return append(buf, '}')
}

// appendMarshaled appends json.Marshal(v)'s text, nothing on an error.
func appendMarshaled(buf []byte, v any) []byte {
	text, _ := json.Marshal(v)
	return append(buf, text...)
}

// marshalsAsIs reports whether json.Marshal writes s between quotes as it
// is: printable ASCII without quotes, backslashes or the characters it
// escapes for HTML.
func marshalsAsIs(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// plainInteger reports whether s is an integer as JSON writes one: an
// optional minus sign, then 0 or digits not starting with 0.
func plainInteger(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendQuote is strconv.AppendQuote, without its per-rune work for the
// commonest strings: printable ASCII without quotes or backslashes, which
// it quotes as they are.
func appendQuote(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return strconv.AppendQuote(buf, s)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// AppendArgKey appends the key of one argument value, as [AppendFactKey]
// writes each argument: two values held as a server holds them (see
// [FactKey]) are the same value exactly when their keys are equal. A retract
// pattern's argument matches a fact's when their keys are equal.
func AppendArgKey(buf []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...)
	case string:
		return appendQuote(buf, x)
	case bool:
		return strconv.AppendBool(buf, x)
	case json.Number:
		return append(buf, x...)
	case []any:
		buf = append(buf, '[')
		for i, e := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendArgKey(buf, e)
		}
		return append(buf, ']')
	case map[string]any:
		buf = append(buf, '{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendQuote(buf, k)
			buf = append(buf, ':')
			buf = AppendArgKey(buf, x[k])
		}
		return append(buf, '}')
	}
	return fmt.Appendf(buf, "%v", v)
}

// CanonicalFact returns f as a server holds it once decoded and validated
// against profile, the form [FactKey] reads: its JSON decoded again
// (numbers become [json.Number] as json.Marshal writes them, so a Go int 404
// and json.Number("404") are one value) and, for a predicate the profile
// declares, validated as a server validates it (named_args resolved
// through arg_names, int64 wrappers unwrapped, an integral float such as
// 404.0 in a number argument read as 404; null arguments are kept, as in a
// retract pattern). For a predicate the profile lacks, or a fact it
// refuses, only int64 wrappers among the arguments are unwrapped.
// Provenance and category are kept. ok is false when f does not encode as
// a fact. profile may be nil.
func CanonicalFact(f Fact, profile *FactsProfile) (Fact, bool) {
	raw, err := json.Marshal(f)
	if err != nil {
		return f, false
	}
	decoded, vs := DecodeFacts([]json.RawMessage{raw})
	if len(vs) > 0 {
		return f, false
	}
	out := decoded[0]
	if profile != nil && profile.Predicate(out.Pred) != nil {
		valid, vs := ValidateFacts(decoded, profile, Pattern, nil)
		if len(vs) == 0 && len(valid) == 1 {
			valid[0].Source, valid[0].Category = out.Source, out.Category
			return valid[0], true
		}
	}
	for i, a := range out.Args {
		if m, ok := a.(map[string]any); ok {
			if _, wrapped := m["_type"]; wrapped {
				if n, msg := unwrapInt64(m); msg == "" {
					out.Args[i] = n
				}
			}
		}
	}
	return out, true
}
