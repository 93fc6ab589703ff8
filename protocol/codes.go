package protocol

import (
	"net/http"
	"sort"
)

// Code is a machine-readable MangleCP error code (Spec 09 section 3).
// Custom codes start with "x-".
type Code string

// The standard error codes of Spec 09 section 3.1.
const (
	CodeUnsupportedVersion Code = "unsupported_version"
	CodeMalformedMessage   Code = "malformed_message"
	CodeMessageTooLarge    Code = "message_too_large"
	CodeInvalidType        Code = "invalid_type"

	CodeAuthRequired     Code = "auth_required"
	CodeAuthInvalid      Code = "auth_invalid"
	CodeAuthInsufficient Code = "auth_insufficient"

	CodeInvalidFacts      Code = "invalid_facts"
	CodeUnknownPredicate  Code = "unknown_predicate"
	CodeArityMismatch     Code = "arity_mismatch"
	CodeTypeMismatch      Code = "type_mismatch"
	CodeReservedPredicate Code = "reserved_predicate"
	CodeTooManyFacts      Code = "too_many_facts"

	CodeEvaluationTimeout       Code = "evaluation_timeout"
	CodeDerivationLimitExceeded Code = "derivation_limit_exceeded"
	CodeIntervalLimitExceeded   Code = "interval_limit_exceeded"
	CodeInvalidTemporalPattern  Code = "invalid_temporal_pattern"
	CodeEvaluationFailed        Code = "evaluation_failed"

	CodeMacroNotFound          Code = "macro_not_found"
	CodeMacroExpired           Code = "macro_expired"
	CodeSchemaValidationFailed Code = "schema_validation_failed"
	CodeConfirmationRequired   Code = "confirmation_required"
	CodeConfirmationInvalid    Code = "confirmation_invalid"
	CodeExecutionFailed        Code = "execution_failed"

	CodeServerNotReady Code = "server_not_ready"
	CodeRateLimited    Code = "rate_limited"
	CodeInternalError  Code = "internal_error"
	CodeCancelled      Code = "cancelled"
)

// StatusClientClosedRequest is the non-standard HTTP status 499 that Spec 09
// assigns to the cancelled code.
const StatusClientClosedRequest = 499

// CodeInfo describes one registry entry: the code, its category, the HTTP
// status every transport maps it to, whether a client can recover by
// retrying or changing the request, and a one-line description.
type CodeInfo struct {
	Code        Code
	Category    string
	HTTPStatus  int
	Recoverable bool
	Description string
}

// registry is the single source of error codes, statuses and recoverability.
// It is unexported so nobody can change it; use [Lookup] and [Codes].
var registry = []CodeInfo{
	{CodeUnsupportedVersion, "protocol", http.StatusBadRequest, true, "Client's protocol version not supported"},
	{CodeMalformedMessage, "protocol", http.StatusBadRequest, false, "Message does not conform to envelope schema"},
	{CodeMessageTooLarge, "protocol", http.StatusRequestEntityTooLarge, true, "Message exceeds limits.max_message_bytes"},
	{CodeInvalidType, "protocol", http.StatusBadRequest, false, "Unknown message type"},

	{CodeAuthRequired, "authentication", http.StatusUnauthorized, true, "Authentication required but not provided"},
	{CodeAuthInvalid, "authentication", http.StatusUnauthorized, true, "Authentication token is invalid or expired"},
	{CodeAuthInsufficient, "authentication", http.StatusForbidden, false, "Authenticated but lacks required permissions"},

	{CodeInvalidFacts, "fact_validation", http.StatusBadRequest, true, "One or more facts fail validation"},
	{CodeUnknownPredicate, "fact_validation", http.StatusBadRequest, true, "Fact uses a predicate not declared in the facts profile"},
	{CodeArityMismatch, "fact_validation", http.StatusBadRequest, true, "Fact has wrong number of arguments for its predicate"},
	{CodeTypeMismatch, "fact_validation", http.StatusBadRequest, true, "Fact argument type does not match predicate schema"},
	{CodeReservedPredicate, "fact_validation", http.StatusBadRequest, false, "Fact uses the reserved _manglecp_ prefix"},
	{CodeTooManyFacts, "fact_validation", http.StatusBadRequest, true, "Exceeds limits.max_facts_per_request"},

	{CodeEvaluationTimeout, "evaluation", http.StatusRequestTimeout, true, "Evaluation exceeded max_compute_ms"},
	{CodeDerivationLimitExceeded, "evaluation", http.StatusRequestEntityTooLarge, true, "Exceeded max_facts_created during evaluation"},
	{CodeIntervalLimitExceeded, "evaluation", http.StatusRequestEntityTooLarge, true, "Exceeded max_intervals_per_atom"},
	{CodeInvalidTemporalPattern, "evaluation", http.StatusBadRequest, false, "Dangerous temporal recursion detected in rules"},
	{CodeEvaluationFailed, "evaluation", http.StatusInternalServerError, false, "Internal evaluation error (rule compilation, stratification failure)"},

	{CodeMacroNotFound, "invocation", http.StatusNotFound, true, "macro_id not found (evicted or never existed)"},
	{CodeMacroExpired, "invocation", http.StatusGone, true, "Macro-tool's validity window has passed"},
	{CodeSchemaValidationFailed, "invocation", http.StatusBadRequest, true, "Invoke args don't match input schema"},
	{CodeConfirmationRequired, "invocation", http.StatusForbidden, true, "Tool requires user confirmation; no token provided"},
	{CodeConfirmationInvalid, "invocation", http.StatusForbidden, true, "Confirmation token invalid or expired"},
	{CodeExecutionFailed, "invocation", http.StatusInternalServerError, false, "Macro-tool execution failed"},

	{CodeServerNotReady, "server_state", http.StatusServiceUnavailable, true, "Server is in booting or draining status"},
	{CodeRateLimited, "server_state", http.StatusTooManyRequests, true, "Too many requests; retry after retry_after_ms"},
	{CodeInternalError, "server_state", http.StatusInternalServerError, false, "Unexpected server error"},
	{CodeCancelled, "server_state", StatusClientClosedRequest, false, "Request was cancelled by client"},
}

// The custom codes of the HTTP binding (Spec 09 section 3.2). They are
// registered like the standard codes, with their own HTTP status, so every
// transport answers them alike and docs/errors.md lists them.
const (
	// CodeNotFound: no MangleCP endpoint at the requested HTTP path.
	CodeNotFound Code = "x-not_found"
	// CodeMethodNotAllowed: the HTTP method does not fit the endpoint
	// (the Allow header names the right ones).
	CodeMethodNotAllowed Code = "x-method_not_allowed"
	// CodeUnsupportedMediaType: a POST without Content-Type
	// application/json, refused before the body is read (it would let a
	// web page post cross-site without a CORS preflight).
	CodeUnsupportedMediaType Code = "x-unsupported_media_type"
	// CodeUpgradeRequired: the WebSocket endpoint was asked without a
	// WebSocket upgrade.
	CodeUpgradeRequired Code = "x-upgrade_required"
	// CodeHostNotAllowed: the Host header is not one the server answers
	// to (DNS rebinding protection of a loopback listener).
	CodeHostNotAllowed Code = "x-host_not_allowed"
	// CodeOriginNotAllowed: a browser origin that is not allowed (CORS
	// preflight, WebSocket handshake).
	CodeOriginNotAllowed Code = "x-origin_not_allowed"
	// CodeSkillNotFound: GET BasePath/skills/{id} for an unknown skill.
	CodeSkillNotFound Code = "x-skill_not_found"
)

// customRegistry holds the custom codes; their category is "http" (they
// arise in the HTTP binding) and none is recoverable: each needs a
// different request, not a retry.
var customRegistry = []CodeInfo{
	{CodeNotFound, "http", http.StatusNotFound, false, "No MangleCP endpoint at this path"},
	{CodeMethodNotAllowed, "http", http.StatusMethodNotAllowed, false, "HTTP method not allowed for this endpoint (see the Allow header)"},
	{CodeUnsupportedMediaType, "http", http.StatusUnsupportedMediaType, false, "POST body is not declared Content-Type: application/json"},
	{CodeUpgradeRequired, "http", http.StatusUpgradeRequired, false, "The WebSocket endpoint needs a WebSocket upgrade request"},
	{CodeHostNotAllowed, "http", http.StatusMisdirectedRequest, false, "Host header not served by this listener (DNS rebinding protection)"},
	{CodeOriginNotAllowed, "http", http.StatusForbidden, false, "Browser origin not allowed"},
	{CodeSkillNotFound, "http", http.StatusNotFound, false, "No skill with this skill_id (asked with valid credentials)"},
}

// CustomCodes returns a copy of the custom ("x-") codes of the HTTP
// binding.
func CustomCodes() []CodeInfo {
	out := make([]CodeInfo, len(customRegistry))
	copy(out, customRegistry)
	return out
}

// LookupCustom returns the registry entry of a custom code of the HTTP
// binding.
func LookupCustom(c Code) (info CodeInfo, ok bool) {
	for _, e := range customRegistry {
		if e.Code == c {
			return e, true
		}
	}
	return CodeInfo{}, false
}

// Lookup returns the registry entry of a standard code or of a registered
// custom code: the MCP bridge's ([BridgeCodes]) or the HTTP binding's
// ([CustomCodes]). Other custom "x-" codes and unknown codes report
// ok == false.
func Lookup(c Code) (info CodeInfo, ok bool) {
	for _, e := range registry {
		if e.Code == c {
			return e, true
		}
	}
	for _, e := range bridgeRegistry {
		if e.Code == c {
			return e, true
		}
	}
	return LookupCustom(c)
}

// Codes returns a copy of every registry entry in registry order
// (grouped by category as in Spec 09 section 3.1).
func Codes() []CodeInfo {
	out := make([]CodeInfo, len(registry))
	copy(out, registry)
	return out
}

// HTTPStatus is the HTTP status of the code: the registry's, for standard
// and registered custom codes; unknown and unregistered custom codes map
// to 500.
func (c Code) HTTPStatus() int {
	if info, ok := Lookup(c); ok {
		return info.HTTPStatus
	}
	return http.StatusInternalServerError
}

// Recoverable reports whether the registry marks the code recoverable.
// Unknown and unregistered custom codes are not recoverable.
func (c Code) Recoverable() bool {
	info, ok := Lookup(c)
	return ok && info.Recoverable
}

// WarningCode identifies a non-fatal condition reported in a response's
// warnings list. Warnings never change a response's status.
type WarningCode string

// The registered warning codes.
const (
	// WarnConstraintClamped: a client constraint was looser than the server
	// limit and the server limit was used instead (Spec 05 section 2.2).
	WarnConstraintClamped WarningCode = "constraint_clamped"
	// WarnToolsTruncated: max_tools_returned cut the macro-tool list.
	WarnToolsTruncated WarningCode = "tools_truncated"
	// WarnUnknownIntent: the intent is not declared in the manifest; it was
	// evaluated anyway (Spec 04 section 3.2.6 allows this).
	WarnUnknownIntent WarningCode = "unknown_intent"
	// WarnTokenBudgetExceeded: even fully demoted, the macro-tools do not fit
	// max_tokens_budget.
	WarnTokenBudgetExceeded WarningCode = "token_budget_exceeded"
	// WarnEvalTimeChosen: the request carried no eval_time and the server
	// used its clock (Spec 03 section 4.4).
	WarnEvalTimeChosen WarningCode = "eval_time_chosen"
	// WarnOutputFactsIgnored: the request carried facts of output-only
	// predicates (a state delta fed back, Spec 07 section 4.1); they were
	// accepted and set aside, never used as premises.
	WarnOutputFactsIgnored WarningCode = "output_facts_ignored"
	// WarnToolsExpired: every macro-tool of the response expired before
	// the server's clock (an eval_time in the past), so invoking any of
	// them answers macro_expired.
	WarnToolsExpired WarningCode = "tools_expired"
)

// WarningInfo describes one registered warning.
type WarningInfo struct {
	Code        WarningCode
	Description string
}

var warningRegistry = []WarningInfo{
	{WarnConstraintClamped, "A client constraint was looser than the server limit; the server limit was applied"},
	{WarnToolsExpired, "Every macro-tool of the response expired before the server's clock (an eval_time in the past): invoking them answers macro_expired"},
	{WarnToolsTruncated, "max_tools_returned removed the lowest-scored macro-tools from the response"},
	{WarnUnknownIntent, "The intent is not declared in the manifest; it was evaluated against the rules anyway"},
	{WarnTokenBudgetExceeded, "Even at minimal disclosure, with skills referenced and context resources dropped, the macro-tools exceed max_tokens_budget"},
	{WarnEvalTimeChosen, "The request had no eval_time; the server used its clock, reported in eval_time_used"},
	{WarnOutputFactsIgnored, "Facts of output-only predicates (a state delta fed back) were accepted and set aside: the server derives or asserts those itself and never takes a client's copy as a premise"},
}

// Warnings returns a copy of every registered warning, sorted by code.
func Warnings() []WarningInfo {
	out := make([]WarningInfo, len(warningRegistry))
	copy(out, warningRegistry)
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}
