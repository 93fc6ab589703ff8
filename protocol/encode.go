package protocol

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file writes the messages a server sends most, an intent response
// above all, as json.Marshal writes them, byte for byte, without
// reflection: field by field, in the order of the struct's fields, with
// their omitempty rules, strings escaped as json.Marshal escapes them
// (HTML characters included). TestAppendIntentResponseMatchesMarshal and
// FuzzAppendJSON hold it to json.Marshal's bytes; values of a kind it does
// not know (floats, custom types) go through json.Marshal itself.

// AppendJSON appends v as json.Marshal encodes it. It knows nil, strings,
// booleans, integers, json.Number, []any, []string, map[string]any (keys
// sorted) and this package's Time; anything else is encoded by
// json.Marshal. It returns json.Marshal's error, with buf as it stood
// before v.
func AppendJSON(buf []byte, v any) ([]byte, error) {
	n := len(buf)
	out, err := appendValue(buf, v)
	if err != nil {
		return buf[:n], err
	}
	return out, nil
}

func appendValue(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case string:
		return AppendJSONString(buf, x), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	case int:
		return strconv.AppendInt(buf, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(buf, x, 10), nil
	case int32:
		return strconv.AppendInt(buf, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(buf, x, 10), nil
	case json.Number:
		if x != "" && validNumber(string(x)) {
			return append(buf, x...), nil
		}
	case []any:
		if x == nil {
			return append(buf, "null"...), nil
		}
		buf = append(buf, '[')
		for i, e := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendValue(buf, e); err != nil {
				return buf, err
			}
		}
		return append(buf, ']'), nil
	case []string:
		return appendStrings(buf, x), nil
	case map[string]any:
		return appendMap(buf, x)
	case Time:
		return x.appendJSON(buf), nil
	case *Time:
		if x == nil {
			return append(buf, "null"...), nil
		}
		return x.appendJSON(buf), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return buf, err
	}
	return append(buf, raw...), nil
}

// appendMap appends m with its keys sorted, as json.Marshal does.
func appendMap(buf []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(buf, "null"...), nil
	}
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	buf = append(buf, '{')
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONString(buf, k)
		buf = append(buf, ':')
		var err error
		if buf, err = appendValue(buf, m[k]); err != nil {
			return buf, err
		}
	}
	return append(buf, '}'), nil
}

// appendStrings appends a list of strings (null when nil).
func appendStrings(buf []byte, xs []string) []byte {
	if xs == nil {
		return append(buf, "null"...)
	}
	buf = append(buf, '[')
	for i, s := range xs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONString(buf, s)
	}
	return append(buf, ']')
}

// appendJSON appends t as its MarshalJSON writes it.
func (t Time) appendJSON(buf []byte) []byte {
	if t.Now {
		return append(buf, `"now"`...)
	}
	buf = append(buf, '"')
	buf = t.UTC().AppendFormat(buf, time.RFC3339Nano)
	return append(buf, '"')
}

// plainByte marks the bytes json.Marshal copies into a string as they
// are: printable ASCII but '"', '\\', '<', '>' and '&'. Every other byte
// is escaped or starts a UTF-8 sequence.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	t['"'], t['\\'], t['<'], t['>'], t['&'] = false, false, false, false, false
	return t
}()

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as json.Marshal encodes a string: quoted,
// with '"', '\\' and control characters escaped, '<', '>' and '&' as
// \u003c, \u003e and \u0026, invalid UTF-8 as \ufffd and U+2028 and
// U+2029 escaped.
func AppendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainByte[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			buf = append(buf, s[start:i]...)
			switch c {
			case '"', '\\':
				buf = append(buf, '\\', c)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
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

// key appends a member's key (after a comma unless first) and its colon.
func key(buf []byte, first bool, k string) []byte {
	if !first {
		buf = append(buf, ',')
	}
	buf = append(buf, '"')
	buf = append(buf, k...)
	return append(buf, '"', ':')
}

// AppendJSON appends the response as json.Marshal writes it.
func (r *IntentResponse) AppendJSON(buf []byte) ([]byte, error) {
	n := len(buf)
	out, err := r.appendJSON(buf)
	if err != nil {
		return buf[:n], err
	}
	return out, nil
}

func (r *IntentResponse) appendJSON(buf []byte) ([]byte, error) {
	var err error
	buf = append(buf, `{"eval_time_used":`...)
	buf = r.EvalTimeUsed.appendJSON(buf)
	buf = append(buf, `,"eval_duration_ms":`...)
	buf = strconv.AppendInt(buf, r.EvalDurationMS, 10)
	buf = append(buf, `,"macro_tools":`...)
	if r.MacroTools == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i := range r.MacroTools {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = r.MacroTools[i].appendJSON(buf); err != nil {
				return buf, err
			}
		}
		buf = append(buf, ']')
	}
	if r.ProofHints != nil {
		buf = append(buf, `,"proof_hints":`...)
		if buf, err = appendValue(buf, r.ProofHints); err != nil {
			return buf, err
		}
	}
	if len(r.RequiredSkills) > 0 {
		buf = append(buf, `,"required_skills":[`...)
		for i := range r.RequiredSkills {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = r.RequiredSkills[i].appendJSON(buf)
		}
		buf = append(buf, ']')
	}
	if d := r.Diagnostics; d != nil {
		buf = append(buf, `,"diagnostics":{"facts_evaluated":`...)
		buf = strconv.AppendInt(buf, d.FactsEvaluated, 10)
		buf = append(buf, `,"facts_derived":`...)
		buf = strconv.AppendInt(buf, d.FactsDerived, 10)
		buf = append(buf, `,"rules_fired":`...)
		buf = strconv.AppendInt(buf, d.RulesFired, 10)
		buf = append(buf, `,"phases_completed":`...)
		if d.PhasesCompleted == nil {
			buf = append(buf, "null"...)
		} else {
			buf = strconv.AppendInt(buf, int64(*d.PhasesCompleted), 10)
		}
		if d.RuleCoverage != nil {
			buf = append(buf, `,"rule_coverage":`...)
			if buf, err = appendValue(buf, d.RuleCoverage); err != nil {
				return buf, err
			}
		}
		buf = append(buf, '}')
	}
	if len(r.Warnings) > 0 {
		buf = append(buf, `,"warnings":[`...)
		for i, w := range r.Warnings {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"code":`...)
			buf = AppendJSONString(buf, string(w.Code))
			buf = append(buf, `,"message":`...)
			buf = AppendJSONString(buf, w.Message)
			if len(w.Details) > 0 {
				buf = append(buf, `,"details":`...)
				if buf, err = appendMap(buf, w.Details); err != nil {
					return buf, err
				}
			}
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	return append(buf, '}'), nil
}

// appendJSON appends the macro-tool as json.Marshal writes it.
func (m *MacroTool) appendJSON(buf []byte) ([]byte, error) {
	var err error
	buf = append(buf, `{"macro_id":`...)
	buf = AppendJSONString(buf, m.MacroID)
	buf = append(buf, `,"name":`...)
	buf = AppendJSONString(buf, m.Name)
	if m.Description != "" {
		buf = append(buf, `,"description":`...)
		buf = AppendJSONString(buf, m.Description)
	}
	buf = append(buf, `,"disclosure_level":`...)
	buf = AppendJSONString(buf, m.DisclosureLevel)
	if len(m.InputSchema) > 0 {
		buf = append(buf, `,"input_schema":`...)
		if buf, err = appendMap(buf, m.InputSchema); err != nil {
			return buf, err
		}
	}
	if len(m.OutputSchema) > 0 {
		buf = append(buf, `,"output_schema":`...)
		if buf, err = appendMap(buf, m.OutputSchema); err != nil {
			return buf, err
		}
	}
	if ci := m.ContextInjection; ci != nil {
		buf = append(buf, `,"context_injection":{`...)
		first := true
		if ci.Instructions != "" {
			buf = key(buf, first, "instructions")
			buf = AppendJSONString(buf, ci.Instructions)
			first = false
		}
		if len(ci.Skills) > 0 {
			buf = key(buf, first, "skills")
			buf = append(buf, '[')
			for i, s := range ci.Skills {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, `{"skill_id":`...)
				buf = AppendJSONString(buf, s.SkillID)
				buf = append(buf, `,"inline":`...)
				buf = strconv.AppendBool(buf, s.Inline)
				if s.Content != "" {
					buf = append(buf, `,"content":`...)
					buf = AppendJSONString(buf, s.Content)
				}
				buf = append(buf, '}')
			}
			buf = append(buf, ']')
			first = false
		}
		if len(ci.ContextResources) > 0 {
			buf = key(buf, first, "context_resources")
			buf = append(buf, '[')
			for i, r := range ci.ContextResources {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, `{"uri":`...)
				buf = AppendJSONString(buf, r.URI)
				if r.Relevance != "" {
					buf = append(buf, `,"relevance":`...)
					buf = AppendJSONString(buf, r.Relevance)
				}
				if r.Priority != nil {
					buf = append(buf, `,"priority":`...)
					buf = strconv.AppendInt(buf, *r.Priority, 10)
				}
				buf = append(buf, '}')
			}
			buf = append(buf, ']')
		}
		buf = append(buf, '}')
	}
	if s := m.Safety; s != nil {
		buf = append(buf, `,"safety":{"requires_user_confirmation":`...)
		buf = strconv.AppendBool(buf, s.RequiresUserConfirmation)
		buf = append(buf, `,"side_effects":`...)
		buf = appendStrings(buf, s.SideEffects)
		buf = append(buf, `,"reversible":`...)
		buf = strconv.AppendBool(buf, s.Reversible)
		buf = append(buf, `,"idempotent":`...)
		buf = strconv.AppendBool(buf, s.Idempotent)
		buf = append(buf, '}')
	}
	if v := m.Validity; v != nil {
		buf = append(buf, `,"validity":{`...)
		if v.NotBefore != nil {
			buf = append(buf, `"not_before":`...)
			buf = v.NotBefore.appendJSON(buf)
		}
		if v.ExpiresAt != nil {
			if v.NotBefore != nil {
				buf = append(buf, ',')
			}
			buf = append(buf, `"expires_at":`...)
			buf = v.ExpiresAt.appendJSON(buf)
		}
		buf = append(buf, '}')
	}
	if md := m.Metadata; md != nil {
		buf = append(buf, `,"metadata":{`...)
		if md.SelectionPhase != "" {
			buf = append(buf, `"selection_phase":`...)
			buf = AppendJSONString(buf, md.SelectionPhase)
			buf = append(buf, ',')
		}
		buf = append(buf, `"score":`...)
		buf = strconv.AppendInt(buf, md.Score, 10)
		if len(md.SourceRules) > 0 {
			buf = append(buf, `,"source_rules":`...)
			buf = appendStrings(buf, md.SourceRules)
		}
		buf = append(buf, '}')
	}
	return append(buf, '}'), nil
}

// appendJSON appends the skill as json.Marshal writes it.
func (s *Skill) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"skill_id":`...)
	buf = AppendJSONString(buf, s.SkillID)
	buf = append(buf, `,"name":`...)
	buf = AppendJSONString(buf, s.Name)
	buf = append(buf, `,"description":`...)
	buf = AppendJSONString(buf, s.Description)
	buf = append(buf, `,"content":`...)
	buf = AppendJSONString(buf, s.Content)
	if s.ContentType != "" {
		buf = append(buf, `,"content_type":`...)
		buf = AppendJSONString(buf, s.ContentType)
	}
	if len(s.Resources) > 0 {
		buf = append(buf, `,"resources":[`...)
		for i, r := range s.Resources {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"uri":`...)
			buf = AppendJSONString(buf, r.URI)
			if r.Type != "" {
				buf = append(buf, `,"type":`...)
				buf = AppendJSONString(buf, r.Type)
			}
			if r.Description != "" {
				buf = append(buf, `,"description":`...)
				buf = AppendJSONString(buf, r.Description)
			}
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	return append(buf, '}')
}

// sizeHint is about the size of the response's JSON, so that its buffer
// rarely grows: the text it holds and some for the names around it.
func (r *IntentResponse) sizeHint() int {
	n := 256
	for i := range r.MacroTools {
		m := &r.MacroTools[i]
		n += 320 + len(m.MacroID) + len(m.Name) + len(m.Description) + 160*len(m.InputSchema)
		if ci := m.ContextInjection; ci != nil {
			n += len(ci.Instructions)
			for _, s := range ci.Skills {
				n += 48 + len(s.Content)
			}
			for _, c := range ci.ContextResources {
				n += 64 + len(c.URI) + len(c.Relevance)
			}
		}
	}
	for i := range r.RequiredSkills {
		s := &r.RequiredSkills[i]
		n += 96 + len(s.Name) + len(s.Description) + len(s.Content)
	}
	return n
}
