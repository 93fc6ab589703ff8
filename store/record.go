package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// RecordVersion is the version of [Record] this package writes and the
// only one it reads. A change that an older replica would misread (a field
// renamed, removed or given another meaning) needs a new version; adding
// a field older replicas may ignore does not.
const RecordVersion = 1

// Record is a synthesized macro-tool as replicas store it: everything
// invocation needs, so that a replica that did not evaluate it invokes it
// exactly as the one that did (owner, validity window, confirmation,
// schema, facts). Its JSON is its stored form; it is independent of the
// server's and the kernel's own types, so renaming one of their fields
// cannot break a rolling upgrade.
type Record struct {
	// Version is RecordVersion; a record of any other version is refused.
	Version int             `json:"v"`
	ID      string          `json:"id"`
	Tool    Tool            `json:"tool"`
	Intent  protocol.Intent `json:"intent"`
	// Facts is the JSON array of the request's facts. Definitions of one
	// evaluation share it (encoded once).
	Facts  json.RawMessage `json:"facts"`
	Schema map[string]any  `json:"schema"`
	Output map[string]any  `json:"output,omitempty"`
	// Created is when the tool was synthesized; Expires when its
	// retention ends (the validity window, at least the server's
	// MacroTTL).
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Owner is the identity that evaluated the tool; OwnerAnonymous is set
	// when authentication was off.
	Owner          string `json:"owner,omitempty"`
	OwnerAnonymous bool   `json:"owner_anonymous,omitempty"`
}

// Tool is a tool as the rules derived it.
type Tool struct {
	Name                 string       `json:"name"`
	Score                int64        `json:"score,omitempty"`
	Phase                string       `json:"phase,omitempty"`
	Description          string       `json:"description,omitempty"`
	Summary              string       `json:"summary,omitempty"`
	Action               string       `json:"action"`
	Instructions         string       `json:"instructions,omitempty"`
	Params               []Param      `json:"params,omitempty"`
	Pairs                []Pair       `json:"pairs,omitempty"`
	SideEffects          []string     `json:"side_effects,omitempty"`
	RequiresConfirmation bool         `json:"requires_confirmation,omitempty"`
	Reversible           bool         `json:"reversible,omitempty"`
	Idempotent           bool         `json:"idempotent,omitempty"`
	NextIntents          []NextIntent `json:"next_intents,omitempty"`
	Evidence             []string     `json:"evidence,omitempty"`
	Skills               []string     `json:"skills,omitempty"`
	Resources            []Resource   `json:"resources,omitempty"`
	ValidFrom            *time.Time   `json:"valid_from,omitempty"`
	ValidUntil           *time.Time   `json:"valid_until,omitempty"`
}

// Pair is a combination of two parameters' values that go together
// (tool_param_pair): Param=Value allows Other=OtherValue.
type Pair struct {
	Param      string `json:"param"`
	Value      any    `json:"value"`
	Other      string `json:"other"`
	OtherValue any    `json:"other_value"`
}

// Param is an input parameter of a tool.
type Param struct {
	Name        string `json:"name"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Enum        []any  `json:"enum,omitempty"`
	Default     any    `json:"default,omitempty"`
}

// Resource is a context resource of a tool.
type Resource struct {
	URI       string `json:"uri"`
	Relevance string `json:"relevance,omitempty"`
	Priority  int64  `json:"priority,omitempty"`
}

// NextIntent is an intent to suggest after the tool ran.
type NextIntent struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// EncodeRecord encodes r, setting its version to RecordVersion.
func EncodeRecord(r *Record) ([]byte, error) {
	r.Version = RecordVersion
	return json.Marshal(r)
}

// DecodeRecord decodes a record of RecordVersion. Numbers decode as
// json.Number, as arguments from the wire do. A record of another version
// (or none) fails with an error matching [ErrRejected]: it is never
// decoded into this version's fields.
func DecodeRecord(data []byte) (*Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := dec.Decode(&r)
	if err == nil && r.Version != RecordVersion {
		err = fmt.Errorf("record version %d, this replica reads %d", r.Version, RecordVersion)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRejected, err)
	}
	return &r, nil
}
