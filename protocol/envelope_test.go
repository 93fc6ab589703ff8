package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func strPtr(s string) *string { return &s }

// nestedPayload returns an envelope whose payload holds depth-2 nested arrays,
// so that the whole message nests exactly depth levels deep (the envelope
// object is level 1, the payload object level 2).
func nestedPayload(depth int) string {
	n := depth - 2
	return `{"type":"intent_request","id":"deep","manglecp":"2026-02-draft","payload":{"x":` +
		strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`
}

// envJSON builds a message from raw JSON fragments for the four envelope
// fields; an empty fragment leaves the field out.
func envJSON(typ, id, version, payload string) string {
	var parts []string
	for _, f := range []struct{ k, v string }{{"type", typ}, {"id", id}, {"manglecp", version}, {"payload", payload}} {
		if f.v != "" {
			parts = append(parts, fmt.Sprintf("%q:%s", f.k, f.v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// curVersion is the current version as a JSON fragment.
const curVersion = `"2026-02-draft"`

func TestDecodeEnvelope(t *testing.T) {
	tests := []struct {
		name  string
		input string
		// wantCode is "" when decoding must succeed.
		wantCode Code
		// wantID is the id the returned envelope must carry (nil: no
		// envelope or a null id).
		wantID *string
		// wantField is details.field of the error, when set.
		wantField string
		// wantType is the decoded type of a valid message.
		wantType MessageType
		check    func(t *testing.T, e *Envelope, err *Error)
	}{
		// Valid messages.
		{
			name:     "intent_request",
			input:    envJSON(`"intent_request"`, `"req-1"`, curVersion, `{"intent":{"name":"observe"},"facts":[]}`),
			wantID:   strPtr("req-1"),
			wantType: TypeIntentRequest,
			check: func(t *testing.T, e *Envelope, _ *Error) {
				if string(e.Payload) != `{"intent":{"name":"observe"},"facts":[]}` || e.Version != Version {
					t.Errorf("payload %s, version %q", e.Payload, e.Version)
				}
			},
		},
		{
			name:     "invoke_request",
			input:    envJSON(`"invoke_request"`, `"req-2"`, curVersion, `{"macro_id":"m1","args":{}}`),
			wantID:   strPtr("req-2"),
			wantType: TypeInvokeRequest,
		},
		{
			name:     "authenticate",
			input:    envJSON(`"authenticate"`, `"auth-1"`, curVersion, `{"token":"t"}`),
			wantID:   strPtr("auth-1"),
			wantType: TypeAuthenticate,
		},
		{
			name:     "cancel with null id",
			input:    envJSON(`"cancel"`, `null`, curVersion, `{"request_id":"req-1"}`),
			wantType: TypeCancel,
		},
		{
			name:     "cancel without id",
			input:    envJSON(`"cancel"`, ``, curVersion, `{"request_id":"req-1"}`),
			wantType: TypeCancel,
		},
		{
			name:     "cancel with id",
			input:    envJSON(`"cancel"`, `"c-1"`, curVersion, `{"request_id":"req-1"}`),
			wantID:   strPtr("c-1"),
			wantType: TypeCancel,
		},
		{
			name:     "whitespace and key order",
			input:    " \n\t{ \"payload\" : { } , \"manglecp\" : \"2026-02-draft\", \"id\" : \"w\" , \"type\" : \"intent_request\" }\r\n",
			wantID:   strPtr("w"),
			wantType: TypeIntentRequest,
		},
		{
			name:     "nesting exactly MaxNestingDepth",
			input:    nestedPayload(MaxNestingDepth),
			wantID:   strPtr("deep"),
			wantType: TypeIntentRequest,
		},

		// Byte-level problems: nothing can be read, so no id.
		{
			name:     "byte order mark",
			input:    "\xEF\xBB\xBF" + envJSON(`"intent_request"`, `"req-1"`, curVersion, `{}`),
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "invalid UTF-8",
			input:    envJSON(`"intent_request"`, `"req-`+"\xff\xfe"+`"`, curVersion, `{}`),
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "invalid JSON",
			input:    `{"type":"intent_request","id":"req-1",`,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "empty message",
			input:    ``,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "top-level array",
			input:    `[` + envJSON(`"intent_request"`, `"req-1"`, curVersion, `{}`) + `]`,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "top-level string",
			input:    `"intent_request"`,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "duplicate top-level key",
			input:    `{"type":"intent_request","id":"a","id":"b","manglecp":"2026-02-draft","payload":{}}`,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "duplicate key spelled with an escape",
			input:    `{"type":"intent_request","typ\u0065":"cancel","id":"a","manglecp":"2026-02-draft","payload":{}}`,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "duplicate key nested in payload",
			input:    envJSON(`"intent_request"`, `"req-1"`, curVersion, `{"intent":{"name":"a","name":"b"},"facts":[]}`),
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "nesting deeper than MaxNestingDepth",
			input:    nestedPayload(MaxNestingDepth + 1),
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "two JSON values",
			input:    envJSON(`"cancel"`, ``, curVersion, `{}`) + envJSON(`"cancel"`, ``, curVersion, `{}`),
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "object followed by a number",
			input:    envJSON(`"cancel"`, ``, curVersion, `{}`) + ` 1`,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "object followed by a closing bracket",
			input:    envJSON(`"cancel"`, ``, curVersion, `{}`) + `]`,
			wantCode: CodeMalformedMessage,
		},

		// Envelope shape: the id is echoed whenever it could be read.
		{
			name:      "unknown envelope field",
			input:     `{"type":"intent_request","id":"req-1","manglecp":"2026-02-draft","payload":{},"extra":1}`,
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "extra",
		},
		{
			name:      "envelope field in the wrong case",
			input:     `{"Type":"intent_request","id":"req-1","manglecp":"2026-02-draft","payload":{}}`,
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "Type",
		},
		{
			name:      "id is a number",
			input:     envJSON(`"intent_request"`, `42`, curVersion, `{}`),
			wantCode:  CodeMalformedMessage,
			wantField: "id",
		},
		{
			name:      "id is an object",
			input:     envJSON(`"intent_request"`, `{"id":"req-1"}`, curVersion, `{}`),
			wantCode:  CodeMalformedMessage,
			wantField: "id",
		},
		{
			name:      "request without id",
			input:     envJSON(`"intent_request"`, ``, curVersion, `{}`),
			wantCode:  CodeMalformedMessage,
			wantField: "id",
		},
		{
			name:      "request with empty id",
			input:     envJSON(`"invoke_request"`, `""`, curVersion, `{}`),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr(""),
			wantField: "id",
		},
		{
			name:      "request with null id",
			input:     envJSON(`"authenticate"`, `null`, curVersion, `{}`),
			wantCode:  CodeMalformedMessage,
			wantField: "id",
		},
		{
			name:      "missing manglecp",
			input:     envJSON(`"intent_request"`, `"req-1"`, ``, `{}`),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "manglecp",
		},
		{
			name:      "manglecp is a number",
			input:     envJSON(`"intent_request"`, `"req-1"`, `2026`, `{}`),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "manglecp",
		},
		{
			name:      "manglecp is null",
			input:     envJSON(`"intent_request"`, `"req-1"`, `null`, `{}`),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "manglecp",
		},
		{
			name:     "unsupported version",
			input:    envJSON(`"intent_request"`, `"req-old"`, `"2025-01-draft"`, `{}`),
			wantCode: CodeUnsupportedVersion,
			wantID:   strPtr("req-old"),
			check: func(t *testing.T, _ *Envelope, err *Error) {
				d := err.Details
				if d == nil || d.RequestedVersion != "2025-01-draft" || !reflect.DeepEqual(d.SupportedVersions, []string{Version}) {
					t.Errorf("details = %+v, want requested_version 2025-01-draft and supported_versions [%s]", d, Version)
				}
				if !err.Recoverable {
					t.Error("unsupported_version must be recoverable")
				}
			},
		},
		{
			name:     "empty version string",
			input:    envJSON(`"intent_request"`, `"req-1"`, `""`, `{}`),
			wantCode: CodeUnsupportedVersion,
			wantID:   strPtr("req-1"),
		},
		{
			name:      "unknown type",
			input:     envJSON(`"intent_requets"`, `"req-1"`, curVersion, `{}`),
			wantCode:  CodeInvalidType,
			wantID:    strPtr("req-1"),
			wantField: "type",
		},
		{
			name:      "missing type",
			input:     envJSON(``, `"req-1"`, curVersion, `{}`),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "type",
		},
		{
			name:      "type is a number",
			input:     envJSON(`7`, `"req-1"`, curVersion, `{}`),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "type",
		},
		{
			name:      "payload missing",
			input:     envJSON(`"intent_request"`, `"req-1"`, curVersion, ``),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "payload",
		},
		{
			name:      "payload is an array",
			input:     envJSON(`"intent_request"`, `"req-1"`, curVersion, `[]`),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "payload",
		},
		{
			name:      "payload is a string",
			input:     envJSON(`"intent_request"`, `"req-1"`, curVersion, `"{}"`),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "payload",
		},
		{
			name:      "payload is null",
			input:     envJSON(`"intent_request"`, `"req-1"`, curVersion, `null`),
			wantCode:  CodeMalformedMessage,
			wantID:    strPtr("req-1"),
			wantField: "payload",
		},
	}

	// The golden file pins the exact error envelope (messages included)
	// that each case produces on the wire.
	var golden bytes.Buffer
	golden.WriteString("# For each case of TestDecodeEnvelope: the error envelope of DecodeEnvelope's error, or ok.\n")
	golden.WriteString("# Generated by: go test ./protocol -run TestDecodeEnvelope -update\n")
	for _, tt := range tests {
		e, err := DecodeEnvelope([]byte(tt.input))
		fmt.Fprintf(&golden, "\n-- %s --\n", tt.name)
		if err == nil {
			golden.WriteString("ok\n")
			continue
		}
		wire, encErr := ErrorEnvelope(e.IDString(), err).Encode()
		if encErr != nil {
			t.Fatal(encErr)
		}
		golden.Write(wire)
		golden.WriteByte('\n')
	}
	checkGolden(t, filepath.Join("testdata", "decode_envelope.golden"), golden.Bytes())

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeEnvelope([]byte(tt.input))
			gotCode := Code("")
			if err != nil {
				gotCode = err.Code
			}
			if gotCode != tt.wantCode {
				t.Fatalf("DecodeEnvelope(%q) error = %v, want code %q", tt.input, err, tt.wantCode)
			}
			var gotID *string
			if e != nil {
				gotID = e.ID
			}
			if (gotID == nil) != (tt.wantID == nil) || gotID != nil && *gotID != *tt.wantID {
				t.Errorf("id = %s, want %s", fmtID(gotID), fmtID(tt.wantID))
			}
			if err == nil {
				if e == nil || e.Type != tt.wantType {
					t.Errorf("envelope = %+v, want type %q", e, tt.wantType)
				}
			} else {
				if err.Message == "" {
					t.Error("error without message")
				}
				if tt.wantField != "" && (err.Details == nil || err.Details.Field != tt.wantField) {
					t.Errorf("details = %+v, want field %q", err.Details, tt.wantField)
				}
			}
			if tt.check != nil {
				tt.check(t, e, err)
			}
		})
	}
}

func fmtID(id *string) string {
	if id == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *id)
}

// TestEnvelopeRoundTrip encodes envelopes with NewEnvelope and decodes them
// back.
func TestEnvelopeRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		typ     MessageType
		id      string
		payload any
	}{
		{"intent_request", TypeIntentRequest, "req-1", IntentRequest{Intent: Intent{Name: "observe"}, Facts: []Fact{NewFact("flag", true)}}},
		{"cancel with null id", TypeCancel, "", Cancel{RequestID: "req-1"}},
		{"progress", TypeProgress, "req-1", Progress{Status: "running"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewEnvelope(tt.typ, tt.id, tt.payload)
			if err != nil {
				t.Fatal(err)
			}
			data, err := e.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if tt.id == "" && !bytes.Contains(data, []byte(`"id":null`)) {
				t.Errorf("encoded %s, want \"id\":null", data)
			}
			got, derr := DecodeEnvelope(data)
			if derr != nil {
				t.Fatalf("DecodeEnvelope(%s): %v", data, derr)
			}
			if got.Type != tt.typ || got.IDString() != tt.id || !json.Valid(got.Payload) {
				t.Errorf("decoded %+v", got)
			}
		})
	}
}

func TestMessageTypes(t *testing.T) {
	tests := []struct {
		typ            MessageType
		known, request bool
	}{
		{TypeManifest, true, false},
		{TypeIntentRequest, true, true},
		{TypeIntentResponse, true, false},
		{TypeInvokeRequest, true, true},
		{TypeInvokeResponse, true, false},
		{TypeProgress, true, false},
		{TypeError, true, false},
		{TypeCancel, true, false},
		{TypeAuthenticate, true, true},
		{TypeAuthenticateResponse, true, false},
		{"subscribe", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			if got := tt.typ.Known(); got != tt.known {
				t.Errorf("Known() = %v, want %v", got, tt.known)
			}
			if got := tt.typ.IsRequest(); got != tt.request {
				t.Errorf("IsRequest() = %v, want %v", got, tt.request)
			}
		})
	}
}

// TestDecodeEnvelopeDeterministic: with several unknown envelope fields the
// same one must be reported every time.
func TestDecodeEnvelopeDeterministic(t *testing.T) {
	msg := []byte(`{"type":"intent_request","id":"r","manglecp":"2026-02-draft","payload":{},"b":1,"c":2,"d":3,"e":4}`)
	seen := map[string]bool{}
	for range 50 {
		_, err := DecodeEnvelope(msg)
		if err == nil || err.Details == nil {
			t.Fatalf("DecodeEnvelope = %v, want malformed_message with a field", err)
		}
		seen[err.Details.Field] = true
	}
	if len(seen) != 1 {
		t.Fatalf("DecodeEnvelope reported different unknown fields across runs: %v", seen)
	}
}
