package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// UnmarshalJSON decodes a fact strictly: field names must match exactly,
// unknown fields are errors and numbers stay json.Number.
func (f *Fact) UnmarshalJSON(data []byte) error {
	if decodeFactFast(data, f) {
		return nil
	}
	return f.decodeSlow(data)
}

// decodeSlow is UnmarshalJSON by encoding/json, for every shape of fact
// and every error.
func (f *Fact) decodeSlow(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return errors.New("a fact must be a JSON object")
	}
	*f = Fact{}
	for k, v := range fields {
		var err error
		switch k {
		case "pred":
			err = decodeField(k, v, &f.Pred)
		case "category":
			if !isNull(v) {
				err = decodeField(k, v, &f.Category)
			}
		case "args":
			if !isNull(v) {
				f.hasArgs = true
				err = decodeField(k, v, &f.Args)
				if f.Args == nil {
					f.Args = []any{}
				}
			}
		case "named_args":
			if !isNull(v) {
				f.hasNamedArgs = true
				err = decodeField(k, v, &f.NamedArgs)
			}
		case "t":
			if !isNull(v) {
				f.T = &Temporal{}
				err = f.T.UnmarshalJSON(v)
			}
		case "source":
			if !isNull(v) {
				f.Source = &Provenance{}
				if perr := checkKeys(v, reflect.TypeOf(f.Source), "source"); perr != nil {
					return errors.New(perr.Message)
				}
				err = decodeField(k, v, f.Source)
			}
		default:
			return fmt.Errorf("unknown field %s", Quote(k))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeField decodes one fact field with json.Number for numbers.
func decodeField(name string, raw json.RawMessage, v any) error {
	if err := decodeNumbers(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("field %s has the wrong type: got JSON %s", Quote(name), te.Value)
		}
		return fmt.Errorf("field %s: %v", Quote(name), err)
	}
	return nil
}

// MarshalJSON encodes the fact with "args" (always present, possibly
// empty) unless it uses named_args. Integers beyond 2^53 go out in the
// int64 wrapper ([WireValue]).
func (f Fact) MarshalJSON() ([]byte, error) {
	fj := factJSON{Pred: f.Pred, T: f.T, Source: f.Source, Category: f.Category}
	var err error
	if f.NamedArgs != nil && f.Args == nil {
		if fj.NamedArgs, err = json.Marshal(WireValue(f.NamedArgs)); err != nil {
			return nil, err
		}
	} else {
		args := f.Args
		if args == nil {
			args = []any{}
		}
		if fj.Args, err = json.Marshal(WireValue(args)); err != nil {
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
	if decodeSimple(raw, v) {
		return nil
	}
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

// set sets the bound named key ("at", "start" or "end") and records that
// it was present; it reports false for any other key.
func (t *Temporal) set(key string, v any) bool {
	switch key {
	case "at":
		t.At, t.hasAt = v, true
	case "start":
		t.Start, t.hasStart = v, true
	case "end":
		t.End, t.hasEnd = v, true
	default:
		return false
	}
	return true
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
		if !t.set(k, val) {
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
