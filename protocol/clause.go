package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file implements the structured clause format of Spec 03 section 7,
// an optional extension that Level 3 lists. A [Clause] is a rule (or, with
// an empty body, a fact) whose arguments are typed [ArgDescriptor] values
// instead of bare JSON values, so variables and wildcards can be told apart
// from constants.
//
// Errors are registry errors (*Error). malformed_message means the JSON
// does not have the shape of the wire types: it is not an object or array
// where one is expected, it has an unknown or duplicate key, or a field
// whose JSON type is fixed (predicate, negated, args, body, head, type,
// name, elements, entries) has the wrong JSON type. invalid_facts means the
// shape is right but the content breaks a rule of section 7: a missing
// required field, an unknown descriptor type, a field the type does not
// use, a value that does not match its type, a bad predicate or variable
// name, a number outside int64 or float64, or a negated head. Details.Field
// names the offending field by its dotted path, as "body[0].args[1].name".

// Clause is a structured rule (Spec 03 section 7.1): Head :- Body. A
// clause with an empty body is a fact. The JSON key "body" may be absent
// or null for an empty body; [Clause.MarshalJSON] omits it then.
//
// The zero value is not valid: the head needs a predicate.
type Clause struct {
	Head Literal   `json:"head"`
	Body []Literal `json:"body,omitempty"`
}

// Literal is the head of a [Clause] or one atom of its body (Spec 03
// section 7.1): a predicate applied to argument descriptors. The arity is
// len(Args).
//
// Negated is an extension of this implementation: section 7.1 shows only
// positive body atoms, so a negated body atom (Mangle's !p(X)) is written
// with "negated": true. It is omitted from the JSON when false, and it is
// invalid in the head.
type Literal struct {
	Predicate string          `json:"predicate"`
	Args      []ArgDescriptor `json:"args"`
	Negated   bool            `json:"negated,omitempty"`
}

// DescriptorType is the "type" of an [ArgDescriptor] (Spec 03 section
// 7.2).
type DescriptorType string

// The argument descriptor types of Spec 03 section 7.2. They are distinct
// from the arg_types of predicate schemas ([ArgString], [ArgNumber], ...).
const (
	// DescriptorString is a string constant: {"type":"string","value":"x"}.
	DescriptorString DescriptorType = "string"
	// DescriptorNumber is an integer or float constant:
	// {"type":"number","value":42}.
	DescriptorNumber DescriptorType = "number"
	// DescriptorVariable is a variable: {"type":"variable","name":"X"}.
	DescriptorVariable DescriptorType = "variable"
	// DescriptorWildcard is the wildcard _: {"type":"wildcard"}.
	DescriptorWildcard DescriptorType = "wildcard"
	// DescriptorList is a list: {"type":"list","elements":[...]}.
	DescriptorList DescriptorType = "list"
	// DescriptorMap is a map with string keys:
	// {"type":"map","entries":{"k":...}}.
	DescriptorMap DescriptorType = "map"
)

// descriptorTypes lists the valid types, for error messages.
const descriptorTypes = `"string", "number", "variable", "wildcard", "list", "map"`

// MaxVariableLength is the longest allowed variable name in a [Clause].
// The spec sets no limit; this one matches [MaxPredicateLength].
const MaxVariableLength = 128

// variableName is Mangle's VARIABLE token without the wildcard: an
// uppercase ASCII letter, then ASCII letters and digits. Spec 03 section
// 3.3 asks for the uppercase start "matching Mangle's convention"; Mangle's
// lexer allows no underscore after it.
var variableName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// ArgDescriptor is one typed argument (Spec 03 section 7.2). Which fields
// are used depends on Type:
//
//   - [DescriptorString]: Value, a Go string (valid UTF-8).
//   - [DescriptorNumber]: Value, a json.Number, int64, int or float64. An
//     integer must fit int64 and a float must be finite. A json.Number
//     whose text has no '.', 'e' or 'E' is an integer; any other is a float.
//   - [DescriptorVariable]: Name, an uppercase ASCII letter followed by
//     ASCII letters and digits, at most [MaxVariableLength] bytes.
//   - [DescriptorWildcard]: nothing else.
//   - [DescriptorList]: Elements (nil is the empty list).
//   - [DescriptorMap]: Entries (nil is the empty map).
//
// Decoding yields json.Number for every number and accepts the int64
// wrapper of Spec 03 section 3.2 ({"_type":"int64","value":"..."}) as a
// number's value. Encoding writes integers beyond ±(2^53-1) with that
// wrapper, and floats always with a '.' or an exponent so they decode as
// floats again. The constructors [StringArg], [IntArg], [FloatArg],
// [VariableArg], [WildcardArg], [ListArg] and [MapArg] build values that
// survive a JSON round trip unchanged (reflect.DeepEqual).
type ArgDescriptor struct {
	Type     DescriptorType           `json:"type"`
	Value    any                      `json:"value,omitempty"`
	Name     string                   `json:"name,omitempty"`
	Elements []ArgDescriptor          `json:"elements,omitempty"`
	Entries  map[string]ArgDescriptor `json:"entries,omitempty"`
}

// StringArg returns a string descriptor.
func StringArg(s string) ArgDescriptor {
	return ArgDescriptor{Type: DescriptorString, Value: s}
}

// IntArg returns an integer number descriptor. Its Value is a json.Number.
func IntArg(n int64) ArgDescriptor {
	return ArgDescriptor{Type: DescriptorNumber, Value: json.Number(strconv.FormatInt(n, 10))}
}

// FloatArg returns a float number descriptor. Its Value is a json.Number
// whose text always has a '.' or an exponent, so it stays a float on the
// wire (2.0 is "2.0", not "2"). NaN and infinities are not valid numbers:
// [ArgDescriptor.Validate] rejects them.
func FloatArg(f float64) ArgDescriptor {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ArgDescriptor{Type: DescriptorNumber, Value: f}
	}
	return ArgDescriptor{Type: DescriptorNumber, Value: json.Number(formatFloat(f))}
}

// VariableArg returns a variable descriptor.
func VariableArg(name string) ArgDescriptor {
	return ArgDescriptor{Type: DescriptorVariable, Name: name}
}

// WildcardArg returns the wildcard descriptor.
func WildcardArg() ArgDescriptor {
	return ArgDescriptor{Type: DescriptorWildcard}
}

// ListArg returns a list descriptor. A list of no elements has non-nil,
// empty Elements, as decoding gives.
func ListArg(elements ...ArgDescriptor) ArgDescriptor {
	if elements == nil {
		elements = []ArgDescriptor{}
	}
	return ArgDescriptor{Type: DescriptorList, Elements: elements}
}

// MapArg returns a map descriptor. A nil map becomes an empty, non-nil
// one, as decoding gives. The map is not copied.
func MapArg(entries map[string]ArgDescriptor) ArgDescriptor {
	if entries == nil {
		entries = map[string]ArgDescriptor{}
	}
	return ArgDescriptor{Type: DescriptorMap, Entries: entries}
}

// formatFloat writes a finite float as encoding/json does (shortest text,
// exponent only for very large or small magnitudes) and adds ".0" when the
// text would otherwise read as an integer.
func formatFloat(f float64) string {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
	}
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// DecodeClause strictly decodes one JSON clause and validates it. It
// rejects duplicate keys, nesting deeper than [MaxNestingDepth], unknown
// fields and trailing data. See [Clause] for what is malformed_message and
// what is invalid_facts.
func DecodeClause(data []byte) (Clause, *Error) {
	var c Clause
	if err := checkJSON(data); err != nil {
		return Clause{}, Errorf(CodeMalformedMessage, "the clause is not valid JSON: %v", err)
	}
	if err := decodeClause(data, &c); err != nil {
		return Clause{}, err
	}
	if err := c.Validate(); err != nil {
		return Clause{}, err
	}
	return c, nil
}

// UnmarshalJSON decodes and validates a clause as [DecodeClause] does. The
// error is an *Error.
func (c *Clause) UnmarshalJSON(data []byte) error {
	d, err := DecodeClause(data)
	if err != nil {
		return err
	}
	*c = d
	return nil
}

// UnmarshalJSON strictly decodes and validates one literal. Negated is
// accepted here; only [Clause.Validate] knows whether the literal is a
// head. The error is an *Error.
func (l *Literal) UnmarshalJSON(data []byte) error {
	if err := checkJSON(data); err != nil {
		return Errorf(CodeMalformedMessage, "the literal is not valid JSON: %v", err)
	}
	var d Literal
	if err := decodeLiteral(data, "", &d); err != nil {
		return err
	}
	if err := d.validate(""); err != nil {
		return err
	}
	*l = d
	return nil
}

// UnmarshalJSON strictly decodes and validates one argument descriptor.
// The error is an *Error.
func (a *ArgDescriptor) UnmarshalJSON(data []byte) error {
	if err := checkJSON(data); err != nil {
		return Errorf(CodeMalformedMessage, "the argument descriptor is not valid JSON: %v", err)
	}
	var d ArgDescriptor
	if err := decodeArg(data, "", &d); err != nil {
		return err
	}
	if err := d.validate(""); err != nil {
		return err
	}
	*a = d
	return nil
}

// MarshalJSON encodes the literal with "args" always present (possibly
// empty) and "negated" only when true. It does not validate: call
// [Clause.Validate] first.
func (l Literal) MarshalJSON() ([]byte, error) {
	type literal Literal // no MarshalJSON: no recursion
	out := literal(l)
	if out.Args == nil {
		out.Args = []ArgDescriptor{}
	}
	return json.Marshal(out)
}

// MarshalJSON encodes exactly the fields the descriptor's type uses, with
// "elements" and "entries" always present for lists and maps. Numbers are
// written as described at [ArgDescriptor]. It fails for an unknown type or
// a Value of the wrong Go type, but does not otherwise validate: call
// [ArgDescriptor.Validate] first.
func (a ArgDescriptor) MarshalJSON() ([]byte, error) {
	switch a.Type {
	case DescriptorString:
		s, ok := a.Value.(string)
		if !ok {
			return nil, fmt.Errorf("string descriptor has a %T value", a.Value)
		}
		return json.Marshal(struct {
			Type  DescriptorType `json:"type"`
			Value string         `json:"value"`
		}{a.Type, s})
	case DescriptorNumber:
		v, err := numberWire(a.Value)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			Type  DescriptorType `json:"type"`
			Value any            `json:"value"`
		}{a.Type, v})
	case DescriptorVariable:
		return json.Marshal(struct {
			Type DescriptorType `json:"type"`
			Name string         `json:"name"`
		}{a.Type, a.Name})
	case DescriptorWildcard:
		return json.Marshal(struct {
			Type DescriptorType `json:"type"`
		}{a.Type})
	case DescriptorList:
		elems := a.Elements
		if elems == nil {
			elems = []ArgDescriptor{}
		}
		return json.Marshal(struct {
			Type     DescriptorType  `json:"type"`
			Elements []ArgDescriptor `json:"elements"`
		}{a.Type, elems})
	case DescriptorMap:
		entries := a.Entries
		if entries == nil {
			entries = map[string]ArgDescriptor{}
		}
		return json.Marshal(struct {
			Type    DescriptorType           `json:"type"`
			Entries map[string]ArgDescriptor `json:"entries"`
		}{a.Type, entries})
	}
	return nil, fmt.Errorf("unknown argument descriptor type %q", a.Type)
}

// maxSafeInteger is 2^53 - 1, the largest integer JSON carries exactly.
const maxSafeInteger = 1<<53 - 1

// numberWire returns the JSON value of a number descriptor's Value: a
// json.Number, or the int64 wrapper for integers beyond ±(2^53-1).
func numberWire(v any) (any, error) {
	var n int64
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			return x, nil
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("number descriptor value %q is not an int64", s)
		}
		n = i
	case int64:
		n = x
	case int:
		n = int64(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("number descriptor value %v is not finite", x)
		}
		return json.Number(formatFloat(x)), nil
	default:
		return nil, fmt.Errorf("number descriptor has a %T value", v)
	}
	s := strconv.FormatInt(n, 10)
	if n > maxSafeInteger || n < -maxSafeInteger {
		return map[string]string{"_type": "int64", "value": s}, nil
	}
	return json.Number(s), nil
}

// Validate checks the clause against Spec 03 section 7: predicate names
// match [a-z][a-z0-9_]* and are at most [MaxPredicateLength] bytes, the
// head is not negated, and every argument descriptor is valid (see
// [ArgDescriptor.Validate]). The error is invalid_facts with the path of
// the first problem in Details.Field.
//
// Validate is syntactic only. It does not check Mangle's own rules (range
// restriction, no wildcard in the head, stratification); analysis of the
// compiled rule does that.
func (c Clause) Validate() *Error {
	if err := c.Head.validate("head"); err != nil {
		return err
	}
	if c.Head.Negated {
		return invalid("head.negated", "the head of a clause cannot be negated")
	}
	for i, l := range c.Body {
		if err := l.validate(fmt.Sprintf("body[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func (l Literal) validate(path string) *Error {
	switch p := joinPath(path, "predicate"); {
	case l.Predicate == "":
		return invalid(p, "the predicate is empty")
	case len(l.Predicate) > MaxPredicateLength:
		return invalid(p, "the predicate is %d characters long; the maximum is %d", len(l.Predicate), MaxPredicateLength)
	case !validPredicateName(l.Predicate):
		return invalid(p, "predicate %q must match [a-z][a-z0-9_]*", l.Predicate)
	}
	for i, a := range l.Args {
		if err := a.validate(fmt.Sprintf("%s[%d]", joinPath(path, "args"), i)); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks one descriptor and everything nested in it: the type is
// one of the six of Spec 03 section 7.2, only the fields of that type are
// set, strings are valid UTF-8, numbers fit int64 or are finite floats, and
// variable names start with an uppercase ASCII letter followed by ASCII
// letters and digits. The error is invalid_facts.
func (a ArgDescriptor) Validate() *Error { return a.validate("") }

func (a ArgDescriptor) validate(path string) *Error {
	if a.Type == "" {
		return invalid(joinPath(path, "type"), "the argument descriptor has no type; use one of %s", descriptorTypes)
	}
	used, ok := descriptorFields[a.Type]
	if !ok {
		return invalid(joinPath(path, "type"), "unknown argument descriptor type %q; use one of %s", a.Type, descriptorTypes)
	}
	for _, f := range [...]struct {
		name string
		set  bool
	}{
		{"value", a.Value != nil},
		{"name", a.Name != ""},
		{"elements", a.Elements != nil},
		{"entries", a.Entries != nil},
	} {
		if f.set && !used[f.name] {
			return invalid(joinPath(path, f.name), "field %q is not used by type %q", f.name, a.Type)
		}
	}
	switch a.Type {
	case DescriptorString:
		s, ok := a.Value.(string)
		if !ok {
			return invalid(joinPath(path, "value"), "a string descriptor needs a string value, got %s", goValueKind(a.Value))
		}
		if !utf8.ValidString(s) {
			return invalid(joinPath(path, "value"), "the string value is not valid UTF-8")
		}
	case DescriptorNumber:
		if msg := checkNumberValue(a.Value); msg != "" {
			return invalid(joinPath(path, "value"), "%s", msg)
		}
	case DescriptorVariable:
		p := joinPath(path, "name")
		switch {
		case a.Name == "":
			return invalid(p, "a variable descriptor needs a name")
		case len(a.Name) > MaxVariableLength:
			return invalid(p, "the variable name is %d characters long; the maximum is %d", len(a.Name), MaxVariableLength)
		case !variableName.MatchString(a.Name):
			return invalid(p, "variable name %q must be an uppercase ASCII letter followed by ASCII letters and digits", a.Name)
		}
	case DescriptorList:
		for i, e := range a.Elements {
			if err := e.validate(fmt.Sprintf("%s[%d]", joinPath(path, "elements"), i)); err != nil {
				return err
			}
		}
	case DescriptorMap:
		keys := make([]string, 0, len(a.Entries))
		for k := range a.Entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := fmt.Sprintf("%s[%q]", joinPath(path, "entries"), k)
			if !utf8.ValidString(k) {
				return invalid(p, "the map key is not valid UTF-8")
			}
			if err := a.Entries[k].validate(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// descriptorFields lists the fields besides "type" that each type uses.
// Every one of them is required, except that Go values may leave Elements
// and Entries nil for an empty list or map.
var descriptorFields = map[DescriptorType]map[string]bool{
	DescriptorString:   {"value": true},
	DescriptorNumber:   {"value": true},
	DescriptorVariable: {"name": true},
	DescriptorWildcard: {},
	DescriptorList:     {"elements": true},
	DescriptorMap:      {"entries": true},
}

// checkNumberValue returns a message if v is not a valid number value.
func checkNumberValue(v any) string {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if s == "" || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') || !json.Valid([]byte(s)) {
			return fmt.Sprintf("%q is not a JSON number", s)
		}
		if msg := checkNumber(x); msg != "" {
			return "the value " + msg
		}
	case int, int64:
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprintf("the value %v is not a finite number", x)
		}
	default:
		return fmt.Sprintf("a number descriptor needs a number value, got %s", goValueKind(v))
	}
	return ""
}

// goValueKind names the kind of a Go value as a JSON type, for messages.
func goValueKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, int, int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a Go %T", v)
}

func invalid(path, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return Errorf(CodeInvalidFacts, "%s", msg).WithDetails(&ErrorDetails{Field: path})
}

func malformed(path, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return Errorf(CodeMalformedMessage, "%s", msg).WithDetails(&ErrorDetails{Field: path})
}

// object decodes a JSON object, rejecting keys outside allowed (in sorted
// order, so the first unknown key reported is deterministic).
func object(raw []byte, path, what string, allowed ...string) (map[string]json.RawMessage, *Error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, malformed(path, "%s must be a JSON object", what)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !contains(allowed, k) {
			return nil, malformed(joinPath(path, k), "unknown field %q in %s", k, what)
		}
	}
	return obj, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// field decodes one field whose JSON type is fixed; a mismatch is
// malformed.
func field(raw json.RawMessage, path, want string, v any) *Error {
	if isNull(raw) || json.Unmarshal(raw, v) != nil {
		return malformed(path, "must be %s, got JSON %s", want, jsonKindOf(raw))
	}
	return nil
}

// jsonKindOf names the JSON type of raw, for messages.
func jsonKindOf(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func decodeClause(raw []byte, c *Clause) *Error {
	obj, err := object(raw, "", "a clause", "head", "body")
	if err != nil {
		return err
	}
	head, ok := obj["head"]
	if !ok {
		return invalid("head", "a clause needs a head")
	}
	if err := decodeLiteral(head, "head", &c.Head); err != nil {
		return err
	}
	if body, ok := obj["body"]; ok && !isNull(body) {
		var items []json.RawMessage
		if err := field(body, "body", "an array of literals", &items); err != nil {
			return err
		}
		if len(items) > 0 {
			c.Body = make([]Literal, len(items))
		}
		for i, item := range items {
			if err := decodeLiteral(item, fmt.Sprintf("body[%d]", i), &c.Body[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeLiteral(raw []byte, path string, l *Literal) *Error {
	obj, err := object(raw, path, "a literal", "predicate", "args", "negated")
	if err != nil {
		return err
	}
	p, ok := obj["predicate"]
	if !ok {
		return invalid(joinPath(path, "predicate"), "a literal needs a predicate")
	}
	if err := field(p, joinPath(path, "predicate"), "a string", &l.Predicate); err != nil {
		return err
	}
	args, ok := obj["args"]
	if !ok {
		return invalid(joinPath(path, "args"), "a literal needs args (an empty array for arity 0)")
	}
	var items []json.RawMessage
	if err := field(args, joinPath(path, "args"), "an array of argument descriptors", &items); err != nil {
		return err
	}
	l.Args = make([]ArgDescriptor, len(items))
	for i, item := range items {
		if err := decodeArg(item, fmt.Sprintf("%s[%d]", joinPath(path, "args"), i), &l.Args[i]); err != nil {
			return err
		}
	}
	if n, ok := obj["negated"]; ok && !isNull(n) {
		if err := field(n, joinPath(path, "negated"), "a boolean", &l.Negated); err != nil {
			return err
		}
	}
	return nil
}

func decodeArg(raw []byte, path string, a *ArgDescriptor) *Error {
	obj, err := object(raw, path, "an argument descriptor", "type", "value", "name", "elements", "entries")
	if err != nil {
		return err
	}
	t, ok := obj["type"]
	if !ok {
		return invalid(joinPath(path, "type"), "the argument descriptor has no type; use one of %s", descriptorTypes)
	}
	if err := field(t, joinPath(path, "type"), "a string", &a.Type); err != nil {
		return err
	}
	used, known := descriptorFields[a.Type]
	if !known {
		return invalid(joinPath(path, "type"), "unknown argument descriptor type %q; use one of %s", a.Type, descriptorTypes)
	}
	for _, f := range [...]string{"elements", "entries", "name", "value"} {
		_, present := obj[f]
		switch {
		case present && !used[f]:
			return invalid(joinPath(path, f), "field %q is not used by type %q", f, a.Type)
		case !present && used[f]:
			return invalid(joinPath(path, f), "type %q needs field %q", a.Type, f)
		}
	}
	switch a.Type {
	case DescriptorString:
		var s string
		if isNull(obj["value"]) || json.Unmarshal(obj["value"], &s) != nil {
			return invalid(joinPath(path, "value"), "a string descriptor needs a string value, got JSON %s", jsonKindOf(obj["value"]))
		}
		a.Value = s
	case DescriptorNumber:
		v, err := decodeNumberValue(obj["value"], joinPath(path, "value"))
		if err != nil {
			return err
		}
		a.Value = v
	case DescriptorVariable:
		if err := field(obj["name"], joinPath(path, "name"), "a string", &a.Name); err != nil {
			return err
		}
	case DescriptorList:
		var items []json.RawMessage
		p := joinPath(path, "elements")
		if err := field(obj["elements"], p, "an array of argument descriptors", &items); err != nil {
			return err
		}
		a.Elements = make([]ArgDescriptor, len(items))
		for i, item := range items {
			if err := decodeArg(item, fmt.Sprintf("%s[%d]", p, i), &a.Elements[i]); err != nil {
				return err
			}
		}
	case DescriptorMap:
		var entries map[string]json.RawMessage
		p := joinPath(path, "entries")
		if err := field(obj["entries"], p, "an object of argument descriptors", &entries); err != nil {
			return err
		}
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		a.Entries = make(map[string]ArgDescriptor, len(entries))
		for _, k := range keys {
			var e ArgDescriptor
			if err := decodeArg(entries[k], fmt.Sprintf("%s[%q]", p, k), &e); err != nil {
				return err
			}
			a.Entries[k] = e
		}
	}
	return nil
}

// decodeNumberValue reads a number descriptor's value: a JSON number, or
// the int64 wrapper of Spec 03 section 3.2. Both become a json.Number.
func decodeNumberValue(raw json.RawMessage, path string) (json.Number, *Error) {
	var v any
	if err := decodeNumbers(raw, &v); err != nil {
		return "", malformed(path, "is not valid JSON")
	}
	switch x := v.(type) {
	case json.Number:
		return x, nil
	case map[string]any:
		n, msg := unwrapInt64(x)
		if msg != "" {
			return "", invalid(path, "the value %s", msg)
		}
		return n, nil
	}
	return "", invalid(path, "a number descriptor needs a number value, got JSON %s", jsonKindOf(raw))
}
