package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"
)

// Version is the protocol version this package implements.
const Version = "2026-02-draft"

// SupportedVersions lists every protocol version the implementation speaks.
func SupportedVersions() []string { return []string{Version} }

// MessageType is the envelope "type" (Spec 02 section 2.2).
type MessageType string

// The message types of Spec 02 section 2.2, Spec 02 section 6.2 and Spec 08
// section 3.3.
const (
	TypeManifest             MessageType = "manifest"
	TypeIntentRequest        MessageType = "intent_request"
	TypeIntentResponse       MessageType = "intent_response"
	TypeInvokeRequest        MessageType = "invoke_request"
	TypeInvokeResponse       MessageType = "invoke_response"
	TypeProgress             MessageType = "progress"
	TypeError                MessageType = "error"
	TypeCancel               MessageType = "cancel"
	TypeAuthenticate         MessageType = "authenticate"
	TypeAuthenticateResponse MessageType = "authenticate_response"
)

// IsRequest reports whether clients send t and expect a correlated answer.
func (t MessageType) IsRequest() bool {
	return t == TypeIntentRequest || t == TypeInvokeRequest || t == TypeAuthenticate
}

// Known reports whether t is one of the defined message types.
func (t MessageType) Known() bool {
	switch t {
	case TypeManifest, TypeIntentRequest, TypeIntentResponse, TypeInvokeRequest,
		TypeInvokeResponse, TypeProgress, TypeError, TypeCancel, TypeAuthenticate,
		TypeAuthenticateResponse:
		return true
	}
	return false
}

// Envelope is the MangleCP message envelope (Spec 02 section 2). ID is nil
// for server-initiated messages and uncorrelatable errors and is then
// encoded as JSON null.
type Envelope struct {
	Type    MessageType     `json:"type"`
	ID      *string         `json:"id"`
	Version string          `json:"manglecp"`
	Payload json.RawMessage `json:"payload"`

	// checked: DecodeEnvelope read the message, so Payload is valid JSON
	// with no duplicate keys (DecodePayloadList may scan it directly).
	checked bool
	// marshaled is json.Marshal's output that NewEnvelope or ErrorEnvelope
	// set as Payload: compact and escaped, so while Payload is still it,
	// Encode writes it as it is.
	marshaled json.RawMessage
	// encoded, when not nil, is the whole message newIntentEnvelope
	// wrote around marshaled.
	encoded []byte
	// list, when not nil, is payload.facts as DecodeEnvelope split it
	// while checking the message.
	list *payloadList
}

// payloadList is an array of the payload split into its items: the
// array is payload[start:end], where payload is Payload as decoded (a
// caller may have set another since).
type payloadList struct {
	name       string
	payload    []byte
	start, end int
	items      []json.RawMessage
}

// of returns l when payload is still the payload l was split from.
func (l *payloadList) of(payload []byte, name string) *payloadList {
	if l == nil || l.name != name || len(payload) != len(l.payload) || len(payload) == 0 || &payload[0] != &l.payload[0] {
		return nil
	}
	return l
}

// IDString returns the id, or "" when it is null.
func (e *Envelope) IDString() string {
	if e == nil || e.ID == nil {
		return ""
	}
	return *e.ID
}

// NewEnvelope encodes payload into an envelope of the current version.
// id may be "" for a null id.
func NewEnvelope(t MessageType, id string, payload any) (*Envelope, error) {
	if r, ok := payload.(*IntentResponse); ok && r != nil {
		return newIntentEnvelope(t, id, r)
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", t, err)
	}
	env := &Envelope{Type: t, Version: Version, Payload: raw, marshaled: raw}
	if id != "" {
		env.ID = &id
	}
	return env, nil
}

// newIntentEnvelope is NewEnvelope of an intent response, the answer a
// server sends most: the response is written without reflection
// (IntentResponse.AppendJSON, json.Marshal's bytes) after the envelope's
// other members, in one buffer that Encode returns as it is while the
// envelope is unchanged.
func newIntentEnvelope(t MessageType, id string, r *IntentResponse) (*Envelope, error) {
	env := &Envelope{Type: t, Version: Version}
	if id != "" {
		env.ID = &id
	}
	buf := make([]byte, 0, r.sizeHint()+len(id)+64)
	buf = env.appendHead(buf)
	start := len(buf)
	buf, err := r.AppendJSON(buf)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", t, err)
	}
	env.Payload = buf[start:len(buf):len(buf)]
	env.marshaled = env.Payload
	env.encoded = append(buf, '}')
	return env, nil
}

// NewEnvelopeMarshaled wraps payload, which must be json.Marshal's output
// (compact, valid and escaped as it writes JSON) or such an output with
// digits spliced into a number, in an envelope of the current version as
// it is: a server answering from a cache of its own encoded answers saves
// the check and copy NewEnvelope makes of a json.RawMessage. JSON from
// anywhere else goes through NewEnvelope.
func NewEnvelopeMarshaled(t MessageType, id string, payload json.RawMessage) *Envelope {
	env := &Envelope{Type: t, Version: Version, Payload: payload, marshaled: payload}
	if id != "" {
		env.ID = &id
	}
	return env
}

// ErrorEnvelope wraps e in an error envelope correlated to id ("" for null).
func ErrorEnvelope(id string, e *Error) *Envelope {
	p := *e
	p.Recoverable = e.Code.Recoverable()
	raw, err := json.Marshal(&p)
	if err != nil {
		// Details hold only plain data; this cannot fail. Keep the code anyway.
		raw = []byte(fmt.Sprintf(`{"code":%q,"message":"error details could not be encoded","recoverable":false,"retry_after_ms":null}`, e.Code))
	}
	env := &Envelope{Type: TypeError, Version: Version, Payload: raw}
	if err == nil {
		env.marshaled = raw
	}
	if id != "" {
		env.ID = &id
	}
	return env
}

// envelopeFields is used to detect missing and unknown envelope fields.
type envelopeFields struct {
	Type    json.RawMessage `json:"type"`
	ID      json.RawMessage `json:"id"`
	Version json.RawMessage `json:"manglecp"`
	Payload json.RawMessage `json:"payload"`

	// checked: DecodeEnvelope read the message, so Payload is valid JSON
	// with no duplicate keys (DecodePayloadList may scan it directly).
	checked bool
	// marshaled is json.Marshal's output that NewEnvelope or ErrorEnvelope
	// set as Payload: compact and escaped, so while Payload is still it,
	// Encode writes it as it is.
	marshaled json.RawMessage
}

// DecodeEnvelope strictly decodes one message (Spec 02 sections 2-3).
//
// It returns the envelope and nil, or whatever it could read of the
// envelope (for id correlation; possibly nil) and a registry error:
// malformed_message for invalid JSON, a BOM, invalid UTF-8, a missing,
// mistyped, unknown or duplicate envelope field, a non-object payload, an
// id longer than [MaxIDBytes] (the envelope then holds the id, so that the
// error answers it, Spec 09 section 2.3) or a request
// without a non-empty string id; unsupported_version (with the
// details of Spec 09 section 4.4) for another version; invalid_type for an
// unknown type. The id is filled in whenever it could be read.
func DecodeEnvelope(data []byte) (*Envelope, *Error) {
	// While it checks the message, the one-pass scan also splits the
	// array payload.facts (an intent request's facts) into its items, for
	// DecodePayloadList.
	return decodeEnvelope(data, &listScan{name: "facts"})
}

// DecodeEnvelopeInto is DecodeEnvelope for a server that reads many
// intent requests and keeps a buffer for their facts: the items of
// payload.facts go to facts' array when it has room for them (else to a
// new one). It returns them as used, the slice DecodePayloadList then
// hands over for "facts" (nil when the message was refused or has no such
// array). facts' array holds no item unless used is in it. Once the
// caller no longer reads env or the items, it may clear used and reuse
// its array, or facts' array, for the next message.
func DecodeEnvelopeInto(data []byte, facts []json.RawMessage) (env *Envelope, used []json.RawMessage, perr *Error) {
	list := &listScan{name: "facts", items: facts[:0]}
	env, perr = decodeEnvelope(data, list)
	if env != nil && env.list != nil {
		used = env.list.items
	} else {
		clear(list.items) // the items of a message refused, or of a list not used
	}
	if list.inGiven && !sameArray(used, facts) {
		clear(facts[:cap(facts)]) // the items outgrew it: all of it was written
	}
	return env, used, perr
}

// sameArray reports whether a and b are slices of one array, from its
// start.
func sameArray(a, b []json.RawMessage) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}

// decodeEnvelope is DecodeEnvelope, recording list when not nil.
func decodeEnvelope(data []byte, list *listScan) (*Envelope, *Error) {
	if bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}) {
		return nil, Errorf(CodeMalformedMessage, "message starts with a UTF-8 byte order mark; send UTF-8 without BOM")
	}
	if !utf8.Valid(data) {
		return nil, Errorf(CodeMalformedMessage, "message is not valid UTF-8")
	}
	last, err := checkJSONLast(data, list)
	if err != nil {
		return nil, Errorf(CodeMalformedMessage, "message is not valid JSON: %s", err)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, Errorf(CodeMalformedMessage, "message must be a JSON object")
	}
	raw, ok := envelopeMembers(data, last)
	if !ok {
		raw = nil
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, Errorf(CodeMalformedMessage, "message is not valid JSON: %s", err)
		}
	}
	env := &Envelope{}
	// The id first, so that every later error can be correlated.
	idRaw, hasID := raw["id"]
	var idErr *Error
	if hasID && !isNull(idRaw) {
		// An id longer than MaxIDBytes is refused (malformed_message on
		// "id"), and the error still answers it: Spec 09 section 2.3 says
		// the id of an error about a request MUST match the request's, and
		// allows no bound. The id lives only in that answer (at most the
		// message's size, so the answer is no larger than the request);
		// its text is never repeated in a message, a detail or a log line
		// ([LogID]).
		var id string
		if err := json.Unmarshal(idRaw, &id); err != nil {
			idErr = Errorf(CodeMalformedMessage, "envelope field \"id\" must be a string or null").
				WithDetails(&ErrorDetails{Field: "id"})
		} else {
			env.ID = &id
			idErr = CheckID("id", id)
		}
	}
	var unknown []string
	for k := range raw {
		switch k {
		case "type", "id", "manglecp", "payload":
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return env, Errorf(CodeMalformedMessage, "unknown envelope field %s; the envelope has exactly type, id, manglecp and payload", Quote(unknown[0])).
			WithDetails(&ErrorDetails{Field: Clip(unknown[0])})
	}
	if idErr != nil {
		return env, idErr
	}
	if err := decodeString(raw, "manglecp", &env.Version); err != nil {
		return env, err
	}
	if env.Version != Version {
		return env, Errorf(CodeUnsupportedVersion, "protocol version %s is not supported; use %q", Quote(env.Version), Version).
			WithDetails(&ErrorDetails{RequestedVersion: Clip(env.Version), SupportedVersions: SupportedVersions()})
	}
	var typ string
	if err := decodeString(raw, "type", &typ); err != nil {
		return env, err
	}
	env.Type = MessageType(typ)
	if !env.Type.Known() {
		return env, Errorf(CodeInvalidType, "unknown message type %s", Quote(typ)).WithDetails(&ErrorDetails{Field: "type"})
	}
	payload, ok := raw["payload"]
	if !ok {
		return env, Errorf(CodeMalformedMessage, "envelope field \"payload\" is required (use {} for an empty payload)").
			WithDetails(&ErrorDetails{Field: "payload"})
	}
	if p := bytes.TrimLeft(payload, " \t\r\n"); len(p) == 0 || p[0] != '{' {
		return env, Errorf(CodeMalformedMessage, "envelope field \"payload\" must be a JSON object").
			WithDetails(&ErrorDetails{Field: "payload"})
	}
	env.Payload, env.checked = payload, true
	if list.found() && len(payload) > 0 && list.payloadEnd-list.payloadStart == len(payload) && &payload[0] == &data[list.payloadStart] {
		items := list.items
		if items == nil {
			items = []json.RawMessage{}
		}
		env.list = &payloadList{name: list.name, payload: payload, start: list.start - list.payloadStart, end: list.end - list.payloadStart, items: items}
	}
	if env.Type.IsRequest() && (env.ID == nil || *env.ID == "") {
		return env, Errorf(CodeMalformedMessage, "%s requires a non-empty string id", env.Type).
			WithDetails(&ErrorDetails{Field: "id"})
	}
	return env, nil
}

// envelopeMembers is json.Unmarshal of a checked message (valid JSON, no
// duplicate keys) into a map of raw members, without copying the values:
// they are slices of data. It reports false when a key has escapes. When
// last is where the object's last member's value starts (checkJSONLast),
// that value, often a large payload, is not scanned: it ends where the
// object does.
func envelopeMembers(data []byte, last int) (map[string]json.RawMessage, bool) {
	raw := make(map[string]json.RawMessage, 4)
	all := func([]byte) bool { return true }
	value := func(data []byte, i int) (int, bool) {
		if i == last {
			end := len(bytes.TrimRight(data, " \t\r\n")) - 1 // the object's '}'
			return len(bytes.TrimRight(data[:end], " \t\r\n")), true
		}
		return skipValue(data, i)
	}
	ok := objectMembersSplit(data, all, value, func(key, value []byte, _ int) bool {
		raw[string(key)] = value
		return true
	})
	return raw, ok
}

func decodeString(raw map[string]json.RawMessage, field string, dst *string) *Error {
	v, ok := raw[field]
	if !ok {
		return Errorf(CodeMalformedMessage, "envelope field %q is required", field).WithDetails(&ErrorDetails{Field: field})
	}
	if err := json.Unmarshal(v, dst); err != nil || isNull(v) {
		return Errorf(CodeMalformedMessage, "envelope field %q must be a string", field).WithDetails(&ErrorDetails{Field: field})
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// Encode marshals an envelope to JSON without a trailing newline.
func (e *Envelope) Encode() ([]byte, error) {
	if !e.payloadMarshaled() {
		return json.Marshal(e)
	}
	if e.encoded != nil && e.headUnchanged() {
		return e.encoded, nil // newIntentEnvelope's, of this very envelope
	}
	// The payload is json.Marshal's own output, which json.Marshal would
	// compact and escape again to the same bytes: write it once.
	out := make([]byte, 0, len(e.Payload)+len(e.Type)+len(e.Version)+64)
	out = e.appendHead(out)
	if e.Payload == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, e.Payload...)
	}
	return append(out, '}'), nil
}

// appendHead appends the envelope up to its payload's value.
func (e *Envelope) appendHead(out []byte) []byte {
	out = append(out, `{"type":`...)
	out = appendJSONString(out, string(e.Type))
	out = append(out, `,"id":`...)
	if e.ID == nil {
		out = append(out, "null"...)
	} else {
		out = appendJSONString(out, *e.ID)
	}
	out = append(out, `,"manglecp":`...)
	out = appendJSONString(out, e.Version)
	return append(out, `,"payload":`...)
}

// headUnchanged reports whether encoded still starts with the envelope's
// type, id and version as they are now (a caller may have set others).
func (e *Envelope) headUnchanged() bool {
	start := len(e.encoded) - 1 - len(e.Payload)
	if start < 0 || &e.encoded[start] != &e.Payload[0] {
		return false
	}
	var head [256]byte
	if len(e.Type)+len(e.Version)+len(e.IDString()) > len(head)-64 {
		return string(e.appendHead(nil)) == string(e.encoded[:start])
	}
	return string(e.appendHead(head[:0])) == string(e.encoded[:start])
}

// payloadMarshaled reports whether Payload is still the json.Marshal
// output the envelope was made with.
func (e *Envelope) payloadMarshaled() bool {
	return e.marshaled != nil && len(e.Payload) == len(e.marshaled) && len(e.Payload) > 0 && &e.Payload[0] == &e.marshaled[0]
}

// appendJSONString appends s as json.Marshal encodes a string.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
