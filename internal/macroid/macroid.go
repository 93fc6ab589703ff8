// Package macroid computes macro_ids (Spec 06 section 3.3): the hash of a
// macro-tool's composition (tool, action, input schema, safety, intent,
// the digest of the facts it was built from and, with authentication on,
// its owner). Equal compositions give equal ids on every replica and every
// release, so the text hashed is fixed: the canonical JSON written here
// (byte for byte json.Marshal's) and the facts' canonical keys
// (protocol.AppendFactKey). The goldens under testdata/ and
// TestMacroIDUnchanged guard it. It knows the protocol layer and the
// kernel's tool type, never the server.
package macroid

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"time"

	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// ID hashes the composition of a macro-tool: the tool, its action,
// input schema, safety, the intent, the facts it was built from and, with
// authentication on, the identity that owns it. Equal inputs give equal ids
// (Spec 06 section 3.3); the same request from two identities gives two
// ids, so no identity can claim (overwrite, invoke, confirm) another's
// macro-tool however the definitions are stored.
func ID(t kernel.Tool, schema map[string]any, intent protocol.Intent, factsDigest, owner string) string {
	// The JSON of the list [name, action, schema, side effects,
	// confirmation, valid from, valid until, intent name, intent params,
	// facts digest(, owner)] as json.Encoder writes it, with its newline;
	// as the encoder writes nothing when a value does not encode, nothing.
	// Written item by item (protocol.AppendJSON: json.Marshal's bytes),
	// without boxing the items into a list first.
	text := make([]byte, 0, 1024)
	text = append(text, '[')
	text = protocol.AppendJSONString(text, t.Name)
	text = append(text, ',')
	text = protocol.AppendJSONString(text, t.Action)
	text = append(text, ',')
	text, err := protocol.AppendJSON(text, schema)
	if err == nil {
		text = append(text, ',')
		text, _ = protocol.AppendJSON(text, t.SideEffects) // a []string always encodes
		text = append(text, ',')
		text = strconv.AppendBool(text, t.RequiresConfirmation)
		text = append(text, ',')
		text, err = appendTime(text, t.ValidFrom)
	}
	if err == nil {
		text = append(text, ',')
		text, err = appendTime(text, t.ValidUntil)
	}
	if err == nil {
		text = append(text, ',')
		text = protocol.AppendJSONString(text, intent.Name)
		text = append(text, ',')
		text, err = protocol.AppendJSON(text, intent.Params)
	}
	if err == nil {
		text = append(text, ',')
		text = protocol.AppendJSONString(text, factsDigest)
		if owner != "" {
			text = append(text, ',')
			text = protocol.AppendJSONString(text, owner)
		}
		text = append(text, ']', '\n')
	} else {
		text = nil
	}
	sum := sha256.Sum256(text)
	return t.Name + "-" + hex.EncodeToString(sum[:8])
}

// appendTime appends t as json.Marshal writes a *time.Time.
func appendTime(buf []byte, t *time.Time) ([]byte, error) {
	if t == nil {
		return append(buf, "null"...), nil
	}
	raw, err := t.MarshalJSON()
	return append(buf, raw...), err
}

// Owner is the owner part of a macro_id for the identity name: a digest
// of the name, so the id does not reveal it.
func Owner(name string) string {
	sum := sha256.Sum256([]byte("manglecp owner\x00" + name))
	return hex.EncodeToString(sum[:])
}

// Facts hashes the facts in a canonical text form (argument values
// by their JSON meaning, map keys sorted), so equal facts give equal ids
// however the request formatted them.
func Facts(facts []protocol.Fact) string {
	return KeyedFacts(nil, facts)
}

// KeyedFacts is Facts of facts whose keys, each followed by a
// newline, are keys, then more.
func KeyedFacts(keys [][]byte, more []protocol.Fact) string {
	return More(HashKeys(keys), more)
}

// More is the digest of the keys h has hashed, then more. It writes
// to h.
func More(h hash.Hash, more []protocol.Fact) string {
	var buf []byte
	for _, f := range more {
		buf = protocol.AppendFactKey(buf[:0], f)
		buf = append(buf, '\n')
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// HashKeys is a SHA-256 state after the key chunks (each key followed by
// a newline, as Facts writes them), for More.
func HashKeys(keys [][]byte) hash.Hash {
	h := sha256.New()
	for _, chunk := range keys {
		h.Write(chunk)
	}
	return h
}

// InputSchema generates the JSON Schema 2020-12 of a tool's arguments from
// the parameters the rules derived, including enums computed from the
// request's facts.
//
// Pairs (tool_param_pair) tie two parameters' values together: for each
// two parameters with pairs, the schema says (allOf) that the arguments
// match one of them (anyOf), each branch fixing the values it names
// (const), so a combination the rules did not derive fails validation
// before the action runs.
func InputSchema(params []kernel.Param, pairs ...kernel.ParamPair) map[string]any {
	props := map[string]any{}
	required := []any{}
	for _, p := range params {
		prop := map[string]any{"type": p.Type}
		if p.Description != "" {
			prop["description"] = p.Description
		}
		switch {
		case len(p.Enum) > 0 && p.Type == "array":
			// An array's enum is what its items may be (several options
			// of a list).
			prop["items"] = map[string]any{"enum": append([]any(nil), p.Enum...)}
		case len(p.Enum) > 0:
			prop["enum"] = append([]any(nil), p.Enum...)
		}
		if p.Default != nil {
			prop["default"] = p.Default
		}
		props[p.Name] = prop
		if p.Required {
			required = append(required, p.Name)
		}
	}
	schema := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		schema["required"] = required
	}
	if tied := pairSchemas(props, pairs); len(tied) > 0 {
		schema["allOf"] = tied
	}
	return schema
}

// pairSchemas returns one {"anyOf": [...]} per two parameters that pairs
// tie together, in the order of their first pair; pairs naming a
// parameter the tool does not have are left out.
func pairSchemas(props map[string]any, pairs []kernel.ParamPair) []any {
	var order []string
	branches := map[string][]any{}
	for _, p := range pairs {
		if props[p.Param] == nil || props[p.Other] == nil || p.Param == p.Other {
			continue
		}
		key := p.Param + "\x00" + p.Other
		if branches[key] == nil {
			order = append(order, key)
		}
		branches[key] = append(branches[key], map[string]any{"properties": map[string]any{
			p.Param: map[string]any{"const": p.Value}, p.Other: map[string]any{"const": p.OtherValue}}})
	}
	out := make([]any, 0, len(order))
	for _, key := range order {
		out = append(out, map[string]any{"anyOf": branches[key]})
	}
	return out
}
