package protocol

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCheckJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means valid
	}{
		{name: "object", in: `{"a":1,"b":[1,{"c":null}]}`},
		{name: "same key in sibling objects", in: `{"a":{"k":1},"b":{"k":2}}`},
		{name: "same key at two depths", in: `{"k":{"k":1}}`},
		{name: "scalar", in: `42`},
		{name: "empty input", in: ``},
		{name: "duplicate key", in: `{"a":1,"a":2}`, wantErr: `duplicate object key "a"`},
		{name: "duplicate key deep", in: `{"a":[{"b":1,"b":1}]}`, wantErr: `duplicate object key "b"`},
		{name: "duplicate after escape", in: `{"a":1,"\u0061":2}`, wantErr: `duplicate object key "a"`},
		{name: "unterminated", in: `{"a":[1,2`, wantErr: "unexpected end of input"},
		{name: "syntax error", in: `{"a":}`, wantErr: "invalid character"},
		{name: "two arrays", in: `[] []`, wantErr: "more than one JSON value"},
		{name: "two scalars", in: `1 2`, wantErr: "more than one JSON value"},
		{name: "array then garbage", in: `[] x`, wantErr: "more than one JSON value"},
		{
			name: "two objects", in: `{"a":1} {"b":2}`, wantErr: "more than one JSON value",
		},
		{
			name: "two empty objects", in: `{}{}`, wantErr: "more than one JSON value",
		},
		{name: "nesting at the limit", in: strings.Repeat("[", MaxNestingDepth) + strings.Repeat("]", MaxNestingDepth)},
		{name: "nesting over the limit", in: strings.Repeat("[", MaxNestingDepth+1) + strings.Repeat("]", MaxNestingDepth+1), wantErr: "nesting deeper than 64"},
		{name: "objects over the limit", in: strings.Repeat(`{"a":`, MaxNestingDepth+1) + "1" + strings.Repeat("}", MaxNestingDepth+1), wantErr: "nesting deeper than 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkJSON([]byte(tt.in))
			ok := tt.wantErr == "" && err == nil || tt.wantErr != "" && err != nil && strings.Contains(err.Error(), tt.wantErr)
			if !ok {
				t.Errorf("checkJSON(%.40q) = %v, want error containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

func TestDecodePayload(t *testing.T) {
	tests := []struct {
		name      string
		payload   string
		wantCode  Code // "" for success
		wantField string
		wantMsg   string // substring of the message
		check     func(t *testing.T, r *IntentRequest)
	}{
		{
			name:    "valid",
			payload: `{"intent":{"name":"observe","params":{"n":9007199254740993}},"facts":[{"pred":"flag","args":[true]}],"constraints":{"max_compute_ms":500},"eval_time":1771510200000}`,
			check: func(t *testing.T, r *IntentRequest) {
				if r.Intent.Name != "observe" || len(r.Facts) != 1 || r.Facts[0].Pred != "flag" {
					t.Errorf("decoded %+v", r)
				}
				if n, ok := r.Intent.Params["n"].(json.Number); !ok || n != "9007199254740993" {
					t.Errorf("params.n = %#v, want json.Number 9007199254740993 (exact)", r.Intent.Params["n"])
				}
				if r.Constraints == nil || r.Constraints.MaxComputeMS == nil || *r.Constraints.MaxComputeMS != 500 {
					t.Errorf("constraints = %+v", r.Constraints)
				}
				if r.EvalTime == nil || !r.EvalTime.Equal(time.UnixMilli(1771510200000)) {
					t.Errorf("eval_time = %v", r.EvalTime)
				}
			},
		},
		{
			name:      "unknown top-level field",
			payload:   `{"intent":{"name":"observe"},"facts":[],"bogus":1}`,
			wantCode:  CodeMalformedMessage,
			wantField: "bogus",
			wantMsg:   `unknown field "bogus"`,
		},
		{
			name:      "unknown nested field",
			payload:   `{"intent":{"name":"observe","bogus":1},"facts":[]}`,
			wantCode:  CodeMalformedMessage,
			wantField: "intent.bogus",
		},
		{
			name:      "wrong type at top level",
			payload:   `{"intent":{"name":"observe"},"facts":"none"}`,
			wantCode:  CodeMalformedMessage,
			wantField: "facts",
			wantMsg:   `payload field "facts" has the wrong type: got JSON string, want array`,
		},
		{
			name:      "wrong type nested",
			payload:   `{"intent":{"name":5},"facts":[]}`,
			wantCode:  CodeMalformedMessage,
			wantField: "intent.name",
			wantMsg:   `payload field "intent.name" has the wrong type: got JSON number, want string`,
		},
		{
			name:      "integer field given a string",
			payload:   `{"intent":{"name":"observe"},"facts":[],"constraints":{"max_compute_ms":"fast"}}`,
			wantCode:  CodeMalformedMessage,
			wantField: "constraints.max_compute_ms",
			wantMsg:   "want integer",
		},
		{
			name:      "boolean field given a number",
			payload:   `{"intent":{"name":"observe"},"facts":[],"options":{"include_proof_hints":1}}`,
			wantCode:  CodeMalformedMessage,
			wantField: "options.include_proof_hints",
			wantMsg:   "want boolean",
		},
		{
			name:      "bad eval_time",
			payload:   `{"intent":{"name":"observe"},"facts":[],"eval_time":"yesterday"}`,
			wantCode:  CodeMalformedMessage,
			wantField: "eval_time",
			wantMsg:   `payload field "eval_time": time "yesterday" is not RFC 3339`,
		},
		{
			name:      "eval_time of the wrong type",
			payload:   `{"intent":{"name":"observe"},"facts":[],"eval_time":true}`,
			wantCode:  CodeMalformedMessage,
			wantField: "eval_time",
			wantMsg:   `payload field "eval_time": time must be an RFC 3339 string or epoch milliseconds, got boolean`,
		},
		{
			name:      "eval_time of a huge number is echoed clipped",
			payload:   `{"intent":{"name":"observe"},"facts":[],"eval_time":1` + strings.Repeat("0", 5000) + `}`,
			wantCode:  CodeMalformedMessage,
			wantField: "eval_time",
			wantMsg:   `0000... is not an integer of epoch milliseconds`,
		},
		{
			name:     "not an object",
			payload:  `[]`,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "field name in the wrong case",
			payload:  `{"Intent":{"name":"observe"},"facts":[]}`,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "fact field in the wrong case",
			payload:  `{"intent":{"name":"observe"},"facts":[{"PRED":"flag","args":[true]}]}`,
			wantCode: CodeMalformedMessage,
		},
		{
			name:     "trailing data",
			payload:  `{"intent":{"name":"observe"},"facts":[]} {}`,
			wantCode: CodeMalformedMessage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r IntentRequest
			err := DecodePayload(json.RawMessage(tt.payload), &r)
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("DecodePayload: %v", err)
				}
				if tt.check != nil {
					tt.check(t, &r)
				}
				return
			}
			if err == nil {
				t.Fatalf("DecodePayload(%s) succeeded, want %s", tt.payload, tt.wantCode)
			}
			if err.Code != tt.wantCode {
				t.Errorf("code = %s, want %s (%v)", err.Code, tt.wantCode, err)
			}
			if tt.wantField != "" && (err.Details == nil || err.Details.Field != tt.wantField) {
				t.Errorf("details = %+v, want field %q", err.Details, tt.wantField)
			}
			if !strings.Contains(err.Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", err.Message, tt.wantMsg)
			}
		})
	}
}

func TestTimeUnmarshalJSON(t *testing.T) {
	want := time.Date(2026, 2, 19, 14, 30, 0, 0, time.UTC)
	tests := []struct {
		name    string
		in      string
		want    time.Time
		wantErr string
	}{
		{name: "RFC 3339 UTC", in: `"2026-02-19T14:30:00Z"`, want: want},
		{name: "RFC 3339 offset", in: `"2026-02-19T16:30:00+02:00"`, want: want},
		{name: "RFC 3339 fraction", in: `"2026-02-19T14:30:00.250Z"`, want: want.Add(250 * time.Millisecond)},
		{name: "epoch ms", in: `1771511400000`, want: want},
		{name: "epoch ms negative", in: `-1000`, want: time.Unix(-1, 0).UTC()},
		{name: "not RFC 3339", in: `"2026-02-19 14:30:00"`, wantErr: "not RFC 3339"},
		{name: "date only", in: `"2026-02-19"`, wantErr: "not RFC 3339"},
		{name: "fractional epoch", in: `1771511400000.5`, wantErr: "not an integer of epoch milliseconds"},
		{name: "boolean", in: `true`, wantErr: "got boolean"},
		{name: "object", in: `{"at":1}`, wantErr: "got object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Time
			err := json.Unmarshal([]byte(tt.in), &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Unmarshal(%s) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			}
			if !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Errorf("Unmarshal(%s) = %v, want %v in UTC", tt.in, got.Time, tt.want)
			}
		})
	}
}

func TestTimeMarshalJSON(t *testing.T) {
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"UTC", time.Date(2026, 2, 19, 14, 30, 0, 0, time.UTC), `"2026-02-19T14:30:00Z"`},
		{"offset becomes UTC", time.Date(2026, 2, 19, 16, 30, 0, 0, time.FixedZone("", 2*3600)), `"2026-02-19T14:30:00Z"`},
		{"milliseconds kept", time.UnixMilli(1771511400250), `"2026-02-19T14:30:00.25Z"`},
		{"nanoseconds kept", time.Date(2026, 2, 19, 14, 30, 0, 1, time.UTC), `"2026-02-19T14:30:00.000000001Z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(Time{Time: tt.in})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s, want %s", got, tt.want)
			}
			var back Time
			if err := json.Unmarshal(got, &back); err != nil || !back.Equal(tt.in) {
				t.Errorf("round trip = %v, %v; want %v", back.Time, err, tt.in)
			}
		})
	}
}
