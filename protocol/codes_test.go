package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// specRow is one row of a Spec 09 section 3.1 table.
type specRow struct {
	category    string
	code        Code
	status      int
	recoverable bool
	description string
}

// spec09Registry transcribes the tables of Spec 09 section 3.1 row by row,
// in the spec's order, with the descriptions as the spec writes them
// (Markdown code spans included).
func spec09Registry() []specRow {
	return []specRow{
		// Protocol Errors
		{"protocol", "unsupported_version", 400, true, "Client's protocol version not supported"},
		{"protocol", "malformed_message", 400, false, "Message does not conform to envelope schema"},
		{"protocol", "message_too_large", 413, true, "Message exceeds `limits.max_message_bytes`"},
		{"protocol", "invalid_type", 400, false, "Unknown message type"},
		// Authentication Errors
		{"authentication", "auth_required", 401, true, "Authentication required but not provided"},
		{"authentication", "auth_invalid", 401, true, "Authentication token is invalid or expired"},
		{"authentication", "auth_insufficient", 403, false, "Authenticated but lacks required permissions"},
		// Fact Validation Errors
		{"fact_validation", "invalid_facts", 400, true, "One or more facts fail validation"},
		{"fact_validation", "unknown_predicate", 400, true, "Fact uses a predicate not declared in the facts profile"},
		{"fact_validation", "arity_mismatch", 400, true, "Fact has wrong number of arguments for its predicate"},
		{"fact_validation", "type_mismatch", 400, true, "Fact argument type does not match predicate schema"},
		{"fact_validation", "reserved_predicate", 400, false, "Fact uses the reserved `_manglecp_` prefix"},
		{"fact_validation", "too_many_facts", 400, true, "Exceeds `limits.max_facts_per_request`"},
		// Evaluation Errors
		{"evaluation", "evaluation_timeout", 408, true, "Evaluation exceeded `max_compute_ms`"},
		{"evaluation", "derivation_limit_exceeded", 413, true, "Exceeded `max_facts_created` during evaluation"},
		{"evaluation", "interval_limit_exceeded", 413, true, "Exceeded `max_intervals_per_atom`"},
		{"evaluation", "invalid_temporal_pattern", 400, false, "Dangerous temporal recursion detected in rules"},
		{"evaluation", "evaluation_failed", 500, false, "Internal evaluation error (rule compilation, stratification failure)"},
		// Invocation Errors
		{"invocation", "macro_not_found", 404, true, "`macro_id` not found (evicted or never existed)"},
		{"invocation", "macro_expired", 410, true, "Macro-tool's validity window has passed"},
		{"invocation", "schema_validation_failed", 400, true, "Invoke args don't match input schema"},
		{"invocation", "confirmation_required", 403, true, "Tool requires user confirmation; no token provided"},
		{"invocation", "confirmation_invalid", 403, true, "Confirmation token invalid or expired"},
		{"invocation", "execution_failed", 500, false, "Macro-tool execution failed"},
		// Server State Errors
		{"server_state", "server_not_ready", 503, true, "Server is in `\"booting\"` or `\"draining\"` status"},
		{"server_state", "rate_limited", 429, true, "Too many requests; retry after `retry_after_ms`"},
		{"server_state", "internal_error", 500, false, "Unexpected server error"},
		{"server_state", "cancelled", 499, false, "Request was cancelled by client"},
	}
}

// plainSpecText drops the Markdown code spans and quotes of a spec cell.
func plainSpecText(s string) string {
	return strings.NewReplacer("`", "", `"`, "").Replace(s)
}

func TestRegistryMatchesSpec09(t *testing.T) {
	codes, spec := Codes(), spec09Registry()
	if len(codes) != len(spec) {
		t.Errorf("registry has %d codes, Spec 09 section 3.1 has %d", len(codes), len(spec))
	}
	for i, want := range spec {
		t.Run(string(want.code), func(t *testing.T) {
			if i >= len(codes) {
				t.Fatalf("missing from the registry")
			}
			got := codes[i]
			wantInfo := CodeInfo{
				Code:        want.code,
				Category:    want.category,
				HTTPStatus:  want.status,
				Recoverable: want.recoverable,
				Description: plainSpecText(want.description),
			}
			if got != wantInfo {
				t.Errorf("registry entry %d\n got  %+v\n want %+v", i, got, wantInfo)
			}
		})
	}
}

func TestRegistryCodesUnique(t *testing.T) {
	seen := map[Code]int{}
	for _, c := range Codes() {
		seen[c.Code]++
	}
	for _, row := range spec09Registry() {
		if n := seen[row.code]; n != 1 {
			t.Errorf("code %q appears %d times in the registry, want 1", row.code, n)
		}
	}
	for code, n := range seen {
		if n != 1 {
			t.Errorf("code %q appears %d times in the registry", code, n)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, want := range spec09Registry() {
		t.Run(string(want.code), func(t *testing.T) {
			info, ok := Lookup(want.code)
			if !ok {
				t.Fatalf("Lookup(%q) not found", want.code)
			}
			if info.Code != want.code || info.HTTPStatus != want.status || info.Recoverable != want.recoverable {
				t.Errorf("Lookup(%q) = %+v, want status %d recoverable %v", want.code, info, want.status, want.recoverable)
			}
			if got := want.code.HTTPStatus(); got != want.status {
				t.Errorf("HTTPStatus() = %d, want %d", got, want.status)
			}
			if got := want.code.Recoverable(); got != want.recoverable {
				t.Errorf("Recoverable() = %v, want %v", got, want.recoverable)
			}
			e := Errorf(want.code, "boom")
			if got := e.HTTPStatus(); got != want.status {
				t.Errorf("(*Error).HTTPStatus() = %d, want %d", got, want.status)
			}
			if e.Recoverable != want.recoverable {
				t.Errorf("Errorf set Recoverable = %v, want %v", e.Recoverable, want.recoverable)
			}
		})
	}
}

func TestCustomAndUnknownCodes(t *testing.T) {
	tests := []struct {
		name string
		code Code
	}{
		{"custom browser", "x-browser_not_launched"},
		{"custom database", "x-database_unavailable"},
		{"unknown", "no_such_code"},
		{"empty", ""},
		{"wrong case", "INTERNAL_ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if info, ok := Lookup(tt.code); ok {
				t.Errorf("Lookup(%q) = %+v, true; want not found", tt.code, info)
			}
			if got := tt.code.HTTPStatus(); got != http.StatusInternalServerError {
				t.Errorf("HTTPStatus() = %d, want 500", got)
			}
			if tt.code.Recoverable() {
				t.Error("Recoverable() = true, want false")
			}
		})
	}
}

func TestCodesReturnsCopy(t *testing.T) {
	c := Codes()
	c[0].HTTPStatus = 999
	c[0].Recoverable = !c[0].Recoverable
	if info, _ := Lookup(c[0].Code); info.HTTPStatus == 999 {
		t.Error("changing the slice returned by Codes() changed the registry")
	}
	w := Warnings()
	w[0].Description = "changed"
	if Warnings()[0].Description == "changed" {
		t.Error("changing the slice returned by Warnings() changed the warning registry")
	}
}

func TestWarnings(t *testing.T) {
	ws := Warnings()
	want := []WarningCode{WarnConstraintClamped, WarnEvalTimeChosen, WarnOutputFactsIgnored, WarnTokenBudgetExceeded, WarnToolsExpired, WarnToolsTruncated, WarnUnknownIntent}
	var got []WarningCode
	for _, w := range ws {
		got = append(got, w.Code)
		if w.Description == "" {
			t.Errorf("warning %q has no description", w.Code)
		}
		if _, ok := Lookup(Code(w.Code)); ok {
			t.Errorf("warning %q is also an error code", w.Code)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Warnings() codes = %v, want %v (sorted)", got, want)
	}
	if !sort.SliceIsSorted(ws, func(i, j int) bool { return ws[i].Code < ws[j].Code }) {
		t.Error("Warnings() is not sorted by code")
	}
}

func TestErrorIs(t *testing.T) {
	base := Errorf(CodeArityMismatch, "first message")
	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"same value", base, base, true},
		{"same code, other message", base, Errorf(CodeArityMismatch, "other message"), true},
		{"wrapped once", fmt.Errorf("validate: %w", base), Errorf(CodeArityMismatch, ""), true},
		{"wrapped twice", fmt.Errorf("serve: %w", fmt.Errorf("validate: %w", base)), Errorf(CodeArityMismatch, ""), true},
		{"joined", errors.Join(errors.New("other"), base), Errorf(CodeArityMismatch, ""), true},
		{"other code", base, Errorf(CodeTypeMismatch, ""), false},
		{"wrapped, other code", fmt.Errorf("validate: %w", base), Errorf(CodeInvalidFacts, ""), false},
		{"not an *Error target", base, errors.New("arity_mismatch: first message"), false},
		{"plain error", errors.New("arity_mismatch"), Errorf(CodeArityMismatch, ""), false},
		{"custom code", fmt.Errorf("w: %w", Errorf("x-db_down", "down")), Errorf("x-db_down", ""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, tt.target); got != tt.want {
				t.Errorf("errors.Is(%v, %v) = %v, want %v", tt.err, tt.target, got, tt.want)
			}
		})
	}
}

func TestAsError(t *testing.T) {
	base := Errorf(CodeRateLimited, "slow down").WithRetryAfter(250)
	got, ok := AsError(fmt.Errorf("transport: %w", base))
	if !ok || got != base {
		t.Errorf("AsError(wrapped) = %v, %v; want the wrapped *Error", got, ok)
	}
	if got, ok := AsError(errors.New("plain")); ok || got != nil {
		t.Errorf("AsError(plain) = %v, %v; want nil, false", got, ok)
	}
	if got := base.Error(); got != "rate_limited: slow down" {
		t.Errorf("Error() = %q", got)
	}
}

func TestErrorEnvelopeJSON(t *testing.T) {
	tests := []struct {
		name string
		id   string
		err  *Error
		// want is the decoded payload; id is checked separately.
		wantID      any
		wantPayload map[string]any
	}{
		{
			name:   "uncorrelated error has id null",
			id:     "",
			err:    Errorf(CodeInternalError, "unexpected"),
			wantID: nil,
			wantPayload: map[string]any{
				"code": "internal_error", "message": "unexpected",
				"recoverable": false, "retry_after_ms": nil,
			},
		},
		{
			name:   "id echoed, details omitted when nil",
			id:     "req-1",
			err:    Errorf(CodeMacroNotFound, "macro m1 not found"),
			wantID: "req-1",
			wantPayload: map[string]any{
				"code": "macro_not_found", "message": "macro m1 not found",
				"recoverable": true, "retry_after_ms": nil,
			},
		},
		{
			name: "recoverable comes from the registry, not from the value",
			id:   "req-2",
			// Built by hand with the wrong flags on purpose.
			err:    &Error{Code: CodeReservedPredicate, Message: "reserved", Recoverable: true},
			wantID: "req-2",
			wantPayload: map[string]any{
				"code": "reserved_predicate", "message": "reserved",
				"recoverable": false, "retry_after_ms": nil,
			},
		},
		{
			name:   "hand-built recoverable code",
			id:     "req-3",
			err:    &Error{Code: CodeAuthRequired, Message: "token needed"},
			wantID: "req-3",
			wantPayload: map[string]any{
				"code": "auth_required", "message": "token needed",
				"recoverable": true, "retry_after_ms": nil,
			},
		},
		{
			name:   "retry_after_ms set",
			id:     "req-4",
			err:    Errorf(CodeRateLimited, "slow down").WithRetryAfter(1500),
			wantID: "req-4",
			wantPayload: map[string]any{
				"code": "rate_limited", "message": "slow down",
				"recoverable": true, "retry_after_ms": json.Number("1500"),
			},
		},
		{
			name: "details present",
			id:   "req-5",
			err: Errorf(CodeTooManyFacts, "too many").
				WithDetails(&ErrorDetails{Limit: Int64Ptr(10), Actual: Int64Ptr(11)}),
			wantID: "req-5",
			wantPayload: map[string]any{
				"code": "too_many_facts", "message": "too many",
				"details":     map[string]any{"limit": json.Number("10"), "actual": json.Number("11")},
				"recoverable": true, "retry_after_ms": nil,
			},
		},
		{
			name:   "custom code is not recoverable",
			id:     "req-6",
			err:    &Error{Code: "x-browser_not_launched", Message: "start the browser first", Recoverable: true},
			wantID: "req-6",
			wantPayload: map[string]any{
				"code": "x-browser_not_launched", "message": "start the browser first",
				"recoverable": false, "retry_after_ms": nil,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := *tt.err
			env := ErrorEnvelope(tt.id, tt.err)
			if !reflect.DeepEqual(*tt.err, before) {
				t.Errorf("ErrorEnvelope changed its argument: %+v, was %+v", *tt.err, before)
			}
			data, err := env.Encode()
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			dec := json.NewDecoder(strings.NewReader(string(data)))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			if keys := sortedKeys(got); !reflect.DeepEqual(keys, []string{"id", "manglecp", "payload", "type"}) {
				t.Errorf("envelope keys = %v", keys)
			}
			if got["type"] != "error" || got["manglecp"] != Version {
				t.Errorf("type, manglecp = %v, %v", got["type"], got["manglecp"])
			}
			if id, ok := got["id"]; !ok || id != tt.wantID {
				t.Errorf("id = %#v (present %v), want %#v", id, ok, tt.wantID)
			}
			if !reflect.DeepEqual(got["payload"], tt.wantPayload) {
				t.Errorf("payload =\n %#v\nwant\n %#v\n(wire: %s)", got["payload"], tt.wantPayload, data)
			}
		})
	}
}

// TestErrorIsTypedNilTarget: errors.Is with a typed nil *Error target must
// answer false, not panic.
func TestErrorIsTypedNilTarget(t *testing.T) {
	var nilErr *Error
	panicked := false
	func() {
		defer func() { panicked = recover() != nil }()
		_ = errors.Is(fmt.Errorf("w: %w", Errorf(CodeInternalError, "x")), nilErr)
	}()
	if panicked {
		t.Fatal("errors.Is panicked on a typed nil *Error target")
	}
}

func TestMessageTooLarge(t *testing.T) {
	tests := []struct {
		name          string
		limit, actual int64
		wantActual    *int64
	}{
		{"known size", 1024, 4096, Int64Ptr(4096)},
		{"unknown size", 1024, -1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MessageTooLarge(tt.limit, tt.actual)
			if e.Code != CodeMessageTooLarge || e.HTTPStatus() != http.StatusRequestEntityTooLarge || !e.Recoverable {
				t.Errorf("MessageTooLarge = %+v", e)
			}
			if e.Details == nil || e.Details.Limit == nil || *e.Details.Limit != tt.limit {
				t.Fatalf("details = %+v, want limit %d", e.Details, tt.limit)
			}
			if !reflect.DeepEqual(e.Details.Actual, tt.wantActual) {
				t.Errorf("actual = %v, want %v", e.Details.Actual, tt.wantActual)
			}
		})
	}
}
