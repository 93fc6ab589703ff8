package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// ReservedPrefix is the predicate prefix reserved for protocol use
// (Spec 03 section 2.3).
const ReservedPrefix = "_manglecp_"

// MaxPredicateLength is the longest allowed predicate name.
const MaxPredicateLength = 128

// Violation issue types beyond the registry codes (the registry codes
// unknown_predicate, arity_mismatch, type_mismatch and reserved_predicate
// are used as issues too).
const (
	IssueInvalidPredicateName Code = "invalid_predicate_name"
	// IssueOutputPredicate is no longer reported: facts of output-only
	// predicates are accepted (a client may feed a state delta back, Spec
	// 07 section 4.1) and servers set them aside (see
	// WarnOutputFactsIgnored). The code stays for clients that know it.
	IssueOutputPredicate      Code = "output_predicate"
	IssueArgsAndNamedArgs     Code = "args_and_named_args"
	IssueMissingArgs          Code = "missing_args"
	IssueUnknownNamedArg      Code = "unknown_named_arg"
	IssueMissingNamedArg      Code = "missing_named_arg"
	IssueNamedArgsUnsupported Code = "named_args_unsupported"
	IssueInvalidTemporal      Code = "invalid_temporal"
	IssueNotTemporal          Code = "temporal_not_supported"
	IssueInvalidCategory      Code = "invalid_category"
	IssueInvalidSource        Code = "invalid_source"
	IssueWildcardNotAllowed   Code = "wildcard_not_allowed"
	IssueMissingRequiredFact  Code = "missing_required_fact"
	IssueMalformedFact        Code = "malformed_fact"
)

// FactMode says what a fact list is for: asserted facts must be ground,
// patterns (retractions) may hold null wildcards.
type FactMode int

// The fact modes.
const (
	// Assert facts are ground: null is not allowed.
	Assert FactMode = iota
	// Pattern facts may use null as a wildcard (Spec 07 section 4.4).
	Pattern
)

// DecodeFacts decodes raw JSON facts one by one, so that a malformed fact
// becomes a violation with its index instead of failing the whole message.
func DecodeFacts(raws []json.RawMessage) ([]Fact, []Violation) {
	facts := make([]Fact, len(raws))
	return facts, decodeFactsInto(raws, facts, 0)
}

// decodeFactsInto is DecodeFacts into facts (as long as raws), with base
// added to the violations' fact indexes.
func decodeFactsInto(raws []json.RawMessage, facts []Fact, base int) []Violation {
	var vs []Violation
	arena := newFactArena(raws)
	for i, raw := range raws {
		ok := decodeFactArena(raw, &facts[i], arena)
		if arena != nil {
			arena.left -= len(raw)
		}
		if ok {
			continue
		}
		if err := json.Unmarshal(raw, &facts[i]); err != nil {
			pred := ""
			var probe struct {
				Pred any `json:"pred"`
			}
			if json.Unmarshal(raw, &probe) == nil {
				if s, ok := probe.Pred.(string); ok {
					pred = s
				}
			}
			vs = append(vs, Violation{FactIndex: base + i, Predicate: pred, Issue: IssueMalformedFact,
				Message: fmt.Sprintf("fact %d is not a valid fact object: %s", base+i, strings.TrimPrefix(err.Error(), "json: "))})
		}
	}
	return vs
}

// ValidateFacts checks facts against a facts profile (Spec 03, Spec 09
// section 4.1) and returns the facts normalized to positional args (named
// args resolved through arg_names, category session for asserted facts;
// facts of output-only predicates are valid, for the caller to set aside) together with every violation found; fact_index is the
// index in facts. Facts already reported as malformed by [DecodeFacts] are
// skipped by passing their indexes in skip. The input is not modified, so
// the same facts may be validated concurrently.
func ValidateFacts(facts []Fact, profile *FactsProfile, mode FactMode, skip map[int]bool) ([]Fact, []Violation) {
	return validateFacts(facts, profile, mode, skip, false)
}

// validateFacts is ValidateFacts; with owned, facts belong to the caller
// alone (freshly decoded) and are normalized where they are: the result
// shares facts' backing array and facts' contents are no longer valid.
func validateFacts(facts []Fact, profile *FactsProfile, mode FactMode, skip map[int]bool, owned bool) ([]Fact, []Violation) {
	return validateFactsAt(facts, 0, profile, mode, skip, owned)
}

// validateFactsAt is validateFacts for facts that begin at index base of
// a longer list: the violations' fact indexes count from there (skip's
// do not).
func validateFactsAt(facts []Fact, base int, profile *FactsProfile, mode FactMode, skip map[int]bool, owned bool) ([]Fact, []Violation) {
	var out []Fact
	if owned {
		out = facts[:0]
	} else {
		out = make([]Fact, 0, len(facts))
	}
	var vs []Violation
	schemas := indexProfile(profile, len(facts))
	for i := range facts {
		if skip[i] {
			continue
		}
		f, v := validateFact(base+i, facts[i], schemas, mode, owned)
		vs = append(vs, v...)
		if len(v) == 0 {
			out = append(out, f)
		}
	}
	return out, vs
}

// schemaIndex finds predicate schemas in a profile: by a scan of its
// list for a few facts, through a map for many.
type schemaIndex struct {
	profile    *FactsProfile
	byName     map[string]*PredicateSchema
	lastName   string // the name of lastSchema
	lastSchema *PredicateSchema
}

// indexedFacts is the fewest facts worth a map of the profile's schemas.
const indexedFacts = 64

// indexProfile returns the schema index of profile for validating n facts.
func indexProfile(profile *FactsProfile, n int) *schemaIndex {
	x := &schemaIndex{profile: profile}
	if n >= indexedFacts {
		x.byName = make(map[string]*PredicateSchema, len(profile.Predicates))
		for i := range profile.Predicates {
			if name := profile.Predicates[i].Predicate; x.byName[name] == nil {
				x.byName[name] = &profile.Predicates[i] // the first of a name, as Predicate finds it
			}
		}
	}
	return x
}

// get is profile.Predicate(name). It remembers a schema it found, for
// last.
func (x *schemaIndex) get(name string) *PredicateSchema {
	var schema *PredicateSchema
	if x.byName != nil {
		schema = x.byName[name]
	} else {
		schema = x.profile.Predicate(name)
	}
	if schema != nil {
		x.lastName, x.lastSchema = name, schema
	}
	return schema
}

// last is the schema get found last, when name is the name it was asked
// for (a list of facts repeats a few predicates); otherwise nil.
func (x *schemaIndex) last(name string) *PredicateSchema {
	if x.lastSchema != nil && name == x.lastName {
		return x.lastSchema
	}
	return nil
}

// validPredicateName reports whether name matches [a-z][a-z0-9_]*.
func validPredicateName(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// validateFact checks fact i. With owned it may normalize f.Args in place
// (the caller's facts are its own to change).
func validateFact(i int, f Fact, schemas *schemaIndex, mode FactMode, owned bool) (Fact, []Violation) {
	var vs []Violation
	add := func(v Violation) {
		v.FactIndex = i
		v.Predicate = f.Pred
		if len(f.Pred) > MaxPredicateLength {
			v.Predicate = Clip(f.Pred) // bounded echo of client text
		}
		vs = append(vs, v)
	}
	// A predicate the last fact had passed the checks of its name.
	schema := schemas.last(f.Pred)
	if schema == nil {
		switch {
		case strings.HasPrefix(f.Pred, ReservedPrefix):
			add(Violation{Issue: CodeReservedPredicate, Message: "Predicates starting with '_manglecp_' are reserved for protocol use"})
			return f, vs
		case f.Pred == "":
			add(Violation{Issue: IssueInvalidPredicateName, Message: "Fact has no predicate: \"pred\" is required"})
			return f, vs
		case len(f.Pred) > MaxPredicateLength:
			add(Violation{Issue: IssueInvalidPredicateName, Message: fmt.Sprintf("Predicate name is %d characters long; the maximum is %d", len(f.Pred), MaxPredicateLength)})
			return f, vs
		case !validPredicateName(f.Pred):
			add(Violation{Issue: IssueInvalidPredicateName, Message: fmt.Sprintf("Predicate %q must match [a-z][a-z0-9_]*", f.Pred)})
			return f, vs
		}
		if schema = schemas.get(f.Pred); schema == nil {
			v := Violation{Issue: CodeUnknownPredicate, Message: fmt.Sprintf("Predicate '%s' is not declared in the server's facts profile", f.Pred)}
			if s := nearestPredicate(f.Pred, schemas.profile); s != "" {
				v.Suggestion = fmt.Sprintf("Did you mean '%s'?", s)
			}
			add(v)
			return f, vs
		}
	}
	switch {
	case f.HasArgs() && f.HasNamedArgs():
		add(Violation{Issue: IssueArgsAndNamedArgs, Message: "A fact has exactly one of \"args\" and \"named_args\", never both"})
		return f, vs
	case f.HasNamedArgs():
		args, nv := resolveNamedArgs(f, schema)
		for _, v := range nv {
			add(v)
		}
		if len(nv) > 0 {
			return f, vs
		}
		f.Args, f.NamedArgs, f.hasNamedArgs, f.hasArgs = args, nil, false, true
	case !f.HasArgs():
		add(Violation{Issue: IssueMissingArgs, Message: "A fact needs \"args\" (use [] for a 0-arity predicate) or \"named_args\""})
		return f, vs
	}
	if len(f.Args) != schema.Arity {
		add(Violation{Issue: CodeArityMismatch, ExpectedArity: intPtr(schema.Arity), ActualArity: intPtr(len(f.Args)),
			Message: fmt.Sprintf("Predicate '%s' expects %d %s%s, got %d", f.Pred, schema.Arity, plural(schema.Arity, "argument"), argNameList(schema), len(f.Args))})
		return f, vs
	}
	if !owned {
		f.Args = append([]any(nil), f.Args...) // never modify the caller's facts
	}
	for j, a := range f.Args {
		want := ArgAny
		if j < len(schema.ArgTypes) {
			want = schema.ArgTypes[j]
		}
		if a == nil {
			if mode == Assert {
				add(Violation{Issue: IssueWildcardNotAllowed, ArgumentIndex: intPtr(j), ExpectedType: want, ActualType: "null",
					Message: fmt.Sprintf("Argument %d%s is null: null is a wildcard, allowed only in retract patterns", j, argName(schema, j))})
			}
			continue
		}
		norm, got, err := checkValue(a, want)
		if err != "" {
			add(Violation{Issue: CodeTypeMismatch, ArgumentIndex: intPtr(j), ExpectedType: want, ActualType: got,
				Message: fmt.Sprintf("Argument %d%s of '%s' %s", j, argName(schema, j), f.Pred, err)})
			continue
		}
		f.Args[j] = norm
	}
	if f.T != nil {
		if !schema.Temporal {
			add(Violation{Issue: IssueNotTemporal, Message: fmt.Sprintf("Predicate '%s' is not temporal; remove \"t\" or use a temporal predicate", f.Pred)})
		} else if msg := checkTemporal(f.T); msg != "" {
			add(Violation{Issue: IssueInvalidTemporal, Message: msg})
		}
	}
	// A client's facts are all session facts. A fact the server sent (a
	// state delta fed back, Spec 07 section 4.1) may say "server" or
	// "derived": it is read as session, since the client vouches for it now.
	switch {
	case mode != Assert:
	case f.Category == "", f.Category == CategorySession, f.Category == CategoryServer, f.Category == CategoryDerived:
		f.Category = CategorySession
	default:
		add(Violation{Issue: IssueInvalidCategory, Message: fmt.Sprintf("Category must be \"session\" (a fed-back \"server\" or \"derived\" fact is read as session), got %s", Quote(f.Category))})
	}
	if f.Source != nil && f.Source.SourceType == "" {
		add(Violation{Issue: IssueInvalidSource, Message: "source.source_type is required when source is present"})
	}
	return f, vs
}

func resolveNamedArgs(f Fact, schema *PredicateSchema) ([]any, []Violation) {
	if len(schema.ArgNames) != schema.Arity {
		return nil, []Violation{{Issue: IssueNamedArgsUnsupported, Message: fmt.Sprintf("Predicate '%s' declares no arg_names; use positional \"args\"", f.Pred)}}
	}
	var vs []Violation
	args := make([]any, schema.Arity)
	pos := map[string]int{}
	for j, n := range schema.ArgNames {
		pos[n] = j
	}
	for _, k := range sortedKeys(f.NamedArgs) {
		j, ok := pos[k]
		if !ok {
			vs = append(vs, Violation{Issue: IssueUnknownNamedArg, Message: fmt.Sprintf("Unknown named argument %s; '%s' has %s", Quote(k), f.Pred, strings.Join(schema.ArgNames, ", "))})
			continue
		}
		args[j] = f.NamedArgs[k]
	}
	for j, n := range schema.ArgNames {
		if _, ok := f.NamedArgs[n]; !ok {
			vs = append(vs, Violation{Issue: IssueMissingNamedArg, ArgumentIndex: intPtr(j), Message: fmt.Sprintf("Missing named argument %q", n)})
		}
	}
	return args, vs
}

// checkValue checks one argument against a declared type and returns the
// normalized value (int64 wrappers become json.Number), the actual type
// name and an error phrase ("" when it matches).
func checkValue(v any, want string) (any, string, string) {
	// The commonest arguments first: a string, or an integer that fits
	// int64, where the declared type takes it. Anything else, and every
	// mismatch, takes the general path, which words the error.
	switch x := v.(type) {
	case string:
		if want != ArgNumber && want != ArgBoolean {
			return v, "string", ""
		}
	case json.Number:
		if want != ArgString && want != ArgBoolean {
			if shortInteger(string(x)) {
				return v, "integer", ""
			}
			if !strings.ContainsAny(string(x), ".eE") {
				if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
					return v, "integer", ""
				}
			}
		}
	}
	return checkValueSlow(v, want)
}

// shortInteger reports whether s is an optional minus sign and 1 to 18
// decimal digits: an integer that fits int64 (ParseInt's answer, without
// its work).
func shortInteger(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	if s == "" || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkValueSlow is checkValue's general path.
func checkValueSlow(v any, want string) (any, string, string) {
	got := jsonTypeName(v)
	norm := v
	if m, ok := v.(map[string]any); ok {
		if _, wrapped := m["_type"]; wrapped {
			n, msg := unwrapInt64(m)
			if msg != "" {
				return v, "object", msg
			}
			norm, got = n, "integer"
		}
	}
	if n, ok := norm.(json.Number); ok {
		if msg := checkNumber(n); msg != "" {
			return v, got, msg
		}
	}
	if msg := checkNested(norm, 0); msg != "" {
		return v, got, msg
	}
	switch want {
	case ArgAny, "":
		return norm, got, ""
	case ArgString:
		if got == "string" {
			return norm, got, ""
		}
	case ArgNumber:
		if got == "integer" {
			return norm, got, ""
		}
		if got == "number" {
			return integralNumber(norm)
		}
	case ArgBoolean:
		if got == "boolean" {
			return norm, got, ""
		}
	default:
		return norm, got, ""
	}
	return v, got, fmt.Sprintf("must be a %s, got %s", want, got)
}

// integralNumber normalizes a float written for a number argument: Mangle
// compares and adds numbers as int64 and fails on a float, so an integral
// float (404.0, 4e2, 40400e-2) becomes the integer it denotes, and any
// other float is refused here, with the fact's index, instead of failing
// the evaluation (issue 9 item 6; docs/design.md, "Decisions on ambiguous
// points").
func integralNumber(v any) (any, string, string) {
	n, _ := v.(json.Number)
	f, ok := new(big.Float).SetString(string(n))
	if ok && f.IsInt() {
		if i, acc := f.Int64(); acc == big.Exact {
			return json.Number(strconv.FormatInt(i, 10)), "number", ""
		}
		return v, "number", fmt.Sprintf("is %s, an integer outside int64; number arguments are 64-bit integers", n)
	}
	return v, "number", fmt.Sprintf("is %s, which is not a whole number; the rules compare number arguments as 64-bit integers, so send an integer (an integral float such as 404.0 is read as 404)", n)
}

// checkNested rejects wildcards and bad numbers inside lists and maps.
func checkNested(v any, depth int) string {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if e == nil {
				return "holds null inside a list; null is only a top-level wildcard"
			}
			if msg := checkNested(e, depth+1); msg != "" {
				return msg
			}
		}
	case map[string]any:
		if _, wrapped := x["_type"]; wrapped && depth > 0 {
			if _, msg := unwrapInt64(x); msg != "" {
				return msg
			}
			return ""
		}
		for _, k := range sortedKeys(x) {
			if x[k] == nil {
				return fmt.Sprintf("holds null at key %s; null is only a top-level wildcard", Quote(k))
			}
			if msg := checkNested(x[k], depth+1); msg != "" {
				return msg
			}
		}
	case json.Number:
		return checkNumber(x)
	}
	return ""
}

// checkNumber accepts integers that fit int64 and finite floats. Integers
// beyond 2^53 must use the int64 wrapper (Spec 03 section 3.2), but values
// that still fit int64 are accepted exactly.
func checkNumber(n json.Number) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return fmt.Sprintf("is the integer %s, outside int64; integers beyond 2^53 use {\"_type\":\"int64\",\"value\":\"...\"} and must fit int64", s)
		}
		return ""
	}
	f, ok := new(big.Float).SetString(s)
	if !ok || f.IsInf() {
		return fmt.Sprintf("is the number %s, outside float64", s)
	}
	if x, _ := f.Float64(); math.IsInf(x, 0) {
		return fmt.Sprintf("is the number %s, outside float64", s)
	}
	return ""
}

func unwrapInt64(m map[string]any) (json.Number, string) {
	if len(m) != 2 || m["_type"] != "int64" {
		return "", "is an object with \"_type\"; the only typed wrapper is {\"_type\":\"int64\",\"value\":\"<decimal>\"}"
	}
	s, ok := m["value"].(string)
	if !ok {
		return "", "is an int64 wrapper whose \"value\" is not a decimal string"
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return "", fmt.Sprintf("is an int64 wrapper whose value %s is not a decimal int64", Quote(s))
	}
	// Canonical text: "+404" and "0404" are accepted but are not JSON numbers.
	return json.Number(strconv.FormatInt(n, 10)), ""
}

func checkTemporal(t *Temporal) string {
	if t.IsPoint() {
		if t.hasStart || t.hasEnd || t.Start != nil || t.End != nil {
			return "\"t\" has either \"at\" or \"start\" and \"end\", not both forms"
		}
		if s, ok := t.At.(string); ok && (s == "_" || s == "now") {
			if s == "_" {
				return "\"t.at\" must be a time, not \"_\""
			}
			return ""
		}
		at, err := ParseTime(t.At)
		if err == nil {
			err = CheckTimeRange(at)
		}
		if err != nil {
			return "\"t.at\": " + err.Error()
		}
		return ""
	}
	if t.Start == nil || t.End == nil {
		return "\"t\" needs \"at\", or both \"start\" and \"end\" (use \"_\" for an unbounded end)"
	}
	start, msg := temporalBound("start", t.Start)
	if msg != "" {
		return msg
	}
	end, msg := temporalBound("end", t.End)
	if msg != "" {
		return msg
	}
	if start != nil && end != nil && start.After(end.Time) {
		return "\"t.start\" is after \"t.end\""
	}
	return ""
}

func temporalBound(name string, v any) (*Time, string) {
	if s, ok := v.(string); ok && (s == "_" || s == "now") {
		return nil, ""
	}
	tt, err := ParseTime(v)
	if err == nil {
		err = CheckTimeRange(tt)
	}
	if err != nil {
		return nil, fmt.Sprintf("\"t.%s\": %s", name, err)
	}
	return &Time{Time: tt}, ""
}

func jsonTypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return "number"
		}
		return "integer"
	case float64, float32:
		return "number"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func argNameList(s *PredicateSchema) string {
	if len(s.ArgNames) == 0 {
		return ""
	}
	return " (" + strings.Join(s.ArgNames, ", ") + ")"
}

func argName(s *PredicateSchema, j int) string {
	if j < len(s.ArgNames) {
		return " (" + s.ArgNames[j] + ")"
	}
	return ""
}

// nearestPredicate returns the declared predicate closest to name by edit
// distance, or "" when none is plausibly meant.
func nearestPredicate(name string, profile *FactsProfile) string {
	best, bestD := "", len(name)/2+2
	for _, p := range profile.Predicates {
		if d := EditDistance(name, p.Predicate); d < bestD || (d == bestD && best != "" && p.Predicate < best) {
			best, bestD = p.Predicate, d
		}
	}
	return best
}

// Closest returns the candidate a user most plausibly meant by name: one
// that name is a prefix of (or that is a prefix of name), else the one
// nearest by edit distance when less than about half of name differs; ""
// when none is close. Ties go to the candidate listed first.
func Closest(name string, candidates []string) string {
	best, bestD := "", len(name)/2+1
	for _, c := range candidates {
		d := EditDistance(name, c)
		if strings.HasPrefix(c, name) || strings.HasPrefix(name, c) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, counted in
// bytes: what "did you mean" suggestions (intents, predicates, contract
// names, commands and flags) rank candidates by.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

// FactsError builds the error for a list of violations (Spec 09 section
// 4.1): when every violation has the same registry issue the error uses
// that code (reserved_predicate is not recoverable), otherwise invalid_facts.
func FactsError(vs []Violation) *Error {
	code := CodeInvalidFacts
	if len(vs) > 0 {
		first := vs[0].Issue
		same := true
		for _, v := range vs[1:] {
			same = same && v.Issue == first
		}
		if _, registered := Lookup(first); same && registered {
			code = first
		}
	}
	msg := fmt.Sprintf("%d fact validation errors", len(vs))
	if len(vs) == 1 {
		msg = "1 fact validation error: " + vs[0].Message
	}
	return Errorf(code, "%s", msg).WithDetails(&ErrorDetails{Violations: vs})
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
