package protocol

import (
	"errors"
	"fmt"
)

// Error is a MangleCP error payload (Spec 09 section 2). It is also a Go
// error: errors.Is matches two *Error values by code, so wrapping an *Error
// with %w keeps its code visible.
type Error struct {
	Code    Code          `json:"code"`
	Message string        `json:"message"`
	Details *ErrorDetails `json:"details,omitempty"`
	// Recoverable and RetryAfterMS are filled from the registry by
	// [Errorf] and [ErrorEnvelope]; set RetryAfterMS to suggest a wait.
	Recoverable  bool   `json:"recoverable"`
	RetryAfterMS *int64 `json:"retry_after_ms"`
}

// ErrorDetails holds the structured details of Spec 09 section 4. Only the
// fields that apply to the code are set.
type ErrorDetails struct {
	// Violations lists every fact validation problem (section 4.1).
	Violations []Violation `json:"violations,omitempty"`
	// MissingFacts lists the intent's required facts the request lacks: a
	// request-level problem, so it is not a violation with a fact index.
	MissingFacts []MissingFact `json:"missing_facts,omitempty"`
	// SchemaErrors lists every argument validation problem (section 4.2).
	SchemaErrors []SchemaError `json:"schema_errors,omitempty"`
	// Budget reports the exhausted evaluation budget (section 4.3).
	Budget *Budget `json:"budget,omitempty"`
	// PartialResultsAvailable is always false in this implementation: a
	// budget error never carries partial results.
	PartialResultsAvailable *bool `json:"partial_results_available,omitempty"`
	// RequestedVersion and SupportedVersions negotiate the version (4.4).
	RequestedVersion  string   `json:"requested_version,omitempty"`
	SupportedVersions []string `json:"supported_versions,omitempty"`
	// Limit and Actual report a numeric limit that was exceeded, for
	// message_too_large and too_many_facts.
	Limit  *int64 `json:"limit,omitempty"`
	Actual *int64 `json:"actual,omitempty"`
	// MacroID names the macro-tool an invocation error is about.
	MacroID string `json:"macro_id,omitempty"`
	// ExpiredAt is the end of the validity window for macro_expired.
	ExpiredAt string `json:"expired_at,omitempty"`
	// RequestID names the request a cancelled error refers to.
	RequestID string `json:"request_id,omitempty"`
	// Field names the offending envelope or payload field.
	Field string `json:"field,omitempty"`
	// Suggestion is a remediation hint.
	Suggestion string `json:"suggestion,omitempty"`
	// Data holds the structured, remediation-oriented details of a domain
	// error code (Spec 09 section 3.2), such as the path an operation named
	// (relative to its root) or the digest a client saw. Each domain
	// documents its keys; values are plain JSON data.
	Data map[string]any `json:"data,omitempty"`
}

// Violation is one fact validation problem (Spec 09 section 4.1).
type Violation struct {
	FactIndex     int    `json:"fact_index"`
	Predicate     string `json:"predicate"`
	Issue         Code   `json:"issue"`
	Message       string `json:"message"`
	ExpectedArity *int   `json:"expected_arity,omitempty"`
	ActualArity   *int   `json:"actual_arity,omitempty"`
	ExpectedType  string `json:"expected_type,omitempty"`
	ActualType    string `json:"actual_type,omitempty"`
	ArgumentIndex *int   `json:"argument_index,omitempty"`
	Suggestion    string `json:"suggestion,omitempty"`
}

// MissingFact is a required fact the request lacks (an intent's
// required_facts, Spec 04 section 3.2.6). Issue is always
// missing_required_fact.
type MissingFact struct {
	Predicate string `json:"predicate"`
	Issue     Code   `json:"issue"`
	Message   string `json:"message"`
}

// SchemaError is one JSON Schema validation problem (Spec 09 section 4.2).
type SchemaError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
	Keyword string `json:"keyword"`
}

// Budget describes an evaluation budget (Spec 09 section 4.3).
type Budget struct {
	Limit    int64  `json:"limit"`
	Consumed int64  `json:"consumed"`
	Unit     string `json:"unit"`
}

// Errorf returns an *Error with the given code and a formatted message.
// The recoverable flag comes from the registry.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Recoverable: code.Recoverable()}
}

// WithDetails sets the details and returns e.
func (e *Error) WithDetails(d *ErrorDetails) *Error {
	e.Details = d
	return e
}

// WithRetryAfter sets retry_after_ms and returns e.
func (e *Error) WithRetryAfter(ms int64) *Error {
	e.RetryAfterMS = &ms
	return e
}

// Error implements the error interface.
func (e *Error) Error() string {
	return string(e.Code) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) || t == nil {
		return false
	}
	return t.Code == e.Code
}

// HTTPStatus is the status the registry assigns to e's code.
func (e *Error) HTTPStatus() int { return e.Code.HTTPStatus() }

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

func intPtr(i int) *int { return &i }

// Int64Ptr returns a pointer to v, for optional numeric detail fields.
func Int64Ptr(v int64) *int64 { return &v }

// MessageTooLarge is the message_too_large error for a message of actual
// bytes against limit. Transports that stop reading early pass actual -1
// (unknown, larger than the limit).
func MessageTooLarge(limit, actual int64) *Error {
	d := &ErrorDetails{Limit: Int64Ptr(limit)}
	if actual >= 0 {
		d.Actual = Int64Ptr(actual)
	}
	return Errorf(CodeMessageTooLarge, "message exceeds limits.max_message_bytes (%d bytes)", limit).WithDetails(d)
}
