package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
)

// Fact is the unit of state (Spec 03 section 2). Exactly one of Args and
// NamedArgs is used. Argument values are JSON values decoded with
// json.Number for numbers: nil (a wildcard), string, bool, json.Number,
// []any, map[string]any, and the int64 wrapper
// {"_type":"int64","value":"..."} for integers beyond 2^53.
type Fact struct {
	Pred string `json:"pred"`
	// Args are the positional arguments. A fact decoded from JSON has
	// HasArgs set when the "args" key was present, even if empty.
	Args []any `json:"-"`
	// NamedArgs maps arg_names to values (Spec 03 section 2.4).
	NamedArgs map[string]any `json:"-"`
	// T is the temporal annotation (Spec 03 section 4); nil is atemporal.
	T *Temporal `json:"t,omitempty"`
	// Source is the provenance (Spec 03 section 5).
	Source *Provenance `json:"source,omitempty"`
	// Category is "server", "session" or "derived" (Spec 03 section 6).
	Category string `json:"category,omitempty"`

	hasArgs, hasNamedArgs bool
}

// NewFact returns a fact with positional arguments.
func NewFact(pred string, args ...any) Fact {
	if args == nil {
		args = []any{}
	}
	return Fact{Pred: pred, Args: args, hasArgs: true}
}

type factJSON struct {
	Pred      string          `json:"pred"`
	Args      json.RawMessage `json:"args,omitempty"`
	NamedArgs json.RawMessage `json:"named_args,omitempty"`
	T         *Temporal       `json:"t,omitempty"`
	Source    *Provenance     `json:"source,omitempty"`
	Category  string          `json:"category,omitempty"`
}

// UnmarshalJSON decodes a fact strictly: unknown fields are errors and
// numbers stay json.Number.
func (f *Fact) UnmarshalJSON(data []byte) error {
	var fj struct {
		Pred      *string         `json:"pred"`
		Args      json.RawMessage `json:"args"`
		NamedArgs json.RawMessage `json:"named_args"`
		T         json.RawMessage `json:"t"`
		Source    *Provenance     `json:"source"`
		Category  *string         `json:"category"`
	}
	if perr := checkKeys(data, reflect.TypeOf(fj), ""); perr != nil {
		return errors.New(perr.Message)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&fj); err != nil {
		return err
	}
	*f = Fact{Source: fj.Source}
	if fj.Pred != nil {
		f.Pred = *fj.Pred
	}
	if fj.Category != nil {
		f.Category = *fj.Category
	}
	if len(fj.Args) > 0 && !isNull(fj.Args) {
		f.hasArgs = true
		if err := decodeNumbers(fj.Args, &f.Args); err != nil {
			return err
		}
		if f.Args == nil {
			f.Args = []any{}
		}
	}
	if len(fj.NamedArgs) > 0 && !isNull(fj.NamedArgs) {
		f.hasNamedArgs = true
		if err := decodeNumbers(fj.NamedArgs, &f.NamedArgs); err != nil {
			return err
		}
	}
	if len(fj.T) > 0 && !isNull(fj.T) {
		f.T = &Temporal{}
		if err := f.T.UnmarshalJSON(fj.T); err != nil {
			return err
		}
	}
	return nil
}

// MarshalJSON encodes the fact with "args" (always present, possibly
// empty) unless it uses named_args.
func (f Fact) MarshalJSON() ([]byte, error) {
	fj := factJSON{Pred: f.Pred, T: f.T, Source: f.Source, Category: f.Category}
	var err error
	if f.NamedArgs != nil && f.Args == nil {
		if fj.NamedArgs, err = json.Marshal(f.NamedArgs); err != nil {
			return nil, err
		}
	} else {
		args := f.Args
		if args == nil {
			args = []any{}
		}
		if fj.Args, err = json.Marshal(args); err != nil {
			return nil, err
		}
	}
	return json.Marshal(fj)
}

// HasArgs reports whether the fact carried positional "args".
func (f *Fact) HasArgs() bool { return f.hasArgs || f.Args != nil }

// HasNamedArgs reports whether the fact carried "named_args".
func (f *Fact) HasNamedArgs() bool { return f.hasNamedArgs || f.NamedArgs != nil }

func decodeNumbers(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

// Temporal is a temporal annotation (Spec 03 section 4.1): either At, or
// Start and End. Each bound is kept as its JSON value: an RFC 3339 string,
// an epoch-milliseconds json.Number, "_" (unbounded) or "now".
type Temporal struct {
	At    any `json:"at,omitempty"`
	Start any `json:"start,omitempty"`
	End   any `json:"end,omitempty"`

	// set records which keys were present, for validation.
	hasAt, hasStart, hasEnd bool
}

// UnmarshalJSON decodes a temporal annotation, rejecting unknown keys.
func (t *Temporal) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return errors.New(`"t" must be an object: {"at": T} or {"start": T, "end": T}`)
	}
	*t = Temporal{}
	for k, v := range raw {
		var val any
		if err := decodeNumbers(v, &val); err != nil {
			return err
		}
		switch k {
		case "at":
			t.At, t.hasAt = val, true
		case "start":
			t.Start, t.hasStart = val, true
		case "end":
			t.End, t.hasEnd = val, true
		default:
			return &unknownKeyError{key: "t." + k}
		}
	}
	return nil
}

// IsPoint reports whether the annotation uses the "at" form.
func (t *Temporal) IsPoint() bool { return t.hasAt || t.At != nil }

type unknownKeyError struct{ key string }

func (e *unknownKeyError) Error() string { return "json: unknown field \"" + e.key + "\"" }

// Provenance records where a fact came from (Spec 03 section 5). It is
// metadata and never part of a fact's identity.
type Provenance struct {
	SourceType string `json:"source_type"`
	SourceID   string `json:"source_id,omitempty"`
	AssertedAt any    `json:"asserted_at,omitempty"`
}

// The fact categories of Spec 03 section 6.
const (
	CategoryServer  = "server"
	CategorySession = "session"
	CategoryDerived = "derived"
)

// The standard provenance source types of Spec 03 section 5.2.
const (
	SourceServer   = "server"
	SourceScan     = "scan"
	SourceExternal = "external"
	SourceClient   = "client"
	SourceDerived  = "derived"
)
