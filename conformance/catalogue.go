package conformance

// checkDef defines one check.
type checkDef struct {
	ID       string
	Category string
	Spec     string
	Level    int
	Title    string
	// Transport limits the check to "http", "websocket", "stdio" or
	// "session" (WebSocket and stdio); "" is every transport.
	Transport string
	// NeedsManifest: without a manifest the check SKIPs.
	NeedsManifest bool
	// Phase orders execution: 0 first, then 1 (checks that may end a
	// session), then 2 (checks that judge every answer received).
	Phase int
	Run   func(r *runner) outcome
}

// The categories of Spec 10 section 6.1.
const (
	catManifest   = "manifest"
	catFacts      = "facts"
	catEvaluation = "evaluation"
	catMacroTools = "macro-tools"
	catInvocation = "invocation"
	catErrors     = "errors"
	catSecurity   = "security"
	catTransport  = "transport"
)

// Categories lists the eight categories of Spec 10 section 6.1 in report
// order.
func Categories() []string {
	return []string{catManifest, catFacts, catEvaluation, catMacroTools, catInvocation, catErrors, catSecurity, catTransport}
}

// CheckInfo describes a check of the catalogue.
type CheckInfo struct {
	ID, Category, Spec, Title, Transport string
	Level                                int
}

// Catalogue lists every check the suite runs, in report order.
func Catalogue() []CheckInfo {
	var out []CheckInfo
	for _, d := range catalogue() {
		out = append(out, CheckInfo{ID: d.ID, Category: d.Category, Spec: d.Spec, Title: d.Title, Transport: d.Transport, Level: d.Level})
	}
	return out
}

// catalogue is every check in report order (grouped by category). Run
// executes them by Phase, keeping this order within a phase.
func catalogue() []checkDef {
	return []checkDef{
		// Manifest (Spec 04).
		{ID: "manifest.delivered", Category: catManifest, Spec: "Spec 04 2", Level: 1,
			Title: "the manifest is delivered as a manifest message with id null", Run: checkManifestDelivered},
		{ID: "manifest.required_fields", Category: catManifest, Spec: "Spec 04 3.2", Level: 1, NeedsManifest: true,
			Title: "every REQUIRED manifest field is present with its type", Run: checkManifestRequired},
		{ID: "manifest.version", Category: catManifest, Spec: "Spec 02 2.4", Level: 1, NeedsManifest: true,
			Title: "protocol.manglecp is 2026-02-draft and listed in supported_versions", Run: checkManifestVersion},
		{ID: "manifest.status", Category: catManifest, Spec: "Spec 04 4.1", Level: 1, NeedsManifest: true,
			Title: "status is ready, booting, degraded or draining, and the server becomes ready", Run: checkManifestStatus},
		{ID: "manifest.conformance_level", Category: catManifest, Spec: "Spec 10 3.1", Level: 1, NeedsManifest: true,
			Title: "protocol.conformance_level declares level 1, 2 or 3", Run: checkManifestLevel},
		{ID: "manifest.intents", Category: catManifest, Spec: "Spec 04 3.2.6", Level: 1, NeedsManifest: true,
			Title: "intents have names and descriptions and name declared facts", Run: checkManifestIntents},
		{ID: "manifest.time_formats", Category: catManifest, Spec: "Spec 03 4.2", Level: 1, NeedsManifest: true,
			Title: "facts_profile.time_formats lists rfc3339 and only known formats", Run: checkManifestTimeFormats},
		{ID: "manifest.capabilities", Category: catManifest, Spec: "Spec 04 3.2.8", Level: 1, NeedsManifest: true,
			Title: "capabilities are booleans and arrays as declared", Run: checkManifestCapabilities},
		{ID: "manifest.limits", Category: catManifest, Spec: "Spec 02 3.2", Level: 1, NeedsManifest: true,
			Title: "limits are positive integers and max_message_bytes is at least 16 MiB", Run: checkManifestLimits},
		{ID: "manifest.auth", Category: catManifest, Spec: "Spec 04 3.2.10", Level: 1, NeedsManifest: true,
			Title: "auth declares required, and known schemes when required", Run: checkManifestAuth},
		{ID: "manifest.extensions", Category: catManifest, Spec: "Spec 04 3.2.11", Level: 1, NeedsManifest: true,
			Title: "extension keys start with x-", Run: checkManifestExtensions},
		{ID: "manifest.no_tool_list", Category: catManifest, Spec: "Spec 08 5.1", Level: 1, NeedsManifest: true,
			Title: "the manifest lists no tools (anti-enumeration)", Run: checkManifestNoTools},
		{ID: "manifest.facts_profile", Category: catManifest, Spec: "Spec 03 8", Level: 3, NeedsManifest: true,
			Title: "facts_profile.predicates declare valid predicate schemas", Run: checkManifestFactsProfile},
		{ID: "manifest.external_predicates", Category: catManifest, Spec: "Spec 04 3.2.8", Level: 3, NeedsManifest: true,
			Title: "external predicates are declared with predicate, arity, description", Run: checkManifestExternal},

		// Fact encoding (Spec 03).
		{ID: "facts.int64", Category: catFacts, Spec: "Spec 03 3.2", Level: 1, NeedsManifest: true,
			Title: "integers beyond 2^53 in the int64 wrapper are accepted", Run: checkFactsInt64},
		{ID: "facts.named_args", Category: catFacts, Spec: "Spec 03 2.4", Level: 1, NeedsManifest: true,
			Title: "named_args select what positional args do; unknown keys and both forms are refused", Run: checkFactsNamedArgs},
		{ID: "facts.temporal", Category: catFacts, Spec: "Spec 03 4", Level: 2, NeedsManifest: true,
			Title: "point, interval, open and now annotations are accepted; a bad time is refused", Run: checkFactsTemporal},
		{ID: "facts.provenance", Category: catFacts, Spec: "Spec 03 5.3", Level: 2, NeedsManifest: true,
			Title: "source and category on client facts are accepted and change nothing", Run: checkFactsProvenance},

		// Intent evaluation (Spec 05, Spec 10 6.2-6.3).
		{ID: "evaluation.response", Category: catEvaluation, Spec: "Spec 05 4", Level: 1, NeedsManifest: true,
			Title: "an intent request gets an intent_response with eval_time_used and unique macro_ids", Run: checkEvalResponse},
		{ID: "evaluation.eval_time", Category: catEvaluation, Spec: "Spec 03 4.4", Level: 2, NeedsManifest: true,
			Title: "a client eval_time is echoed in eval_time_used; without one the server reports its own", Run: checkEvalTime},
		{ID: "evaluation.determinism", Category: catEvaluation, Spec: "Spec 10 6.2", Level: 1, NeedsManifest: true,
			Title: "100 identical requests give the same macro_ids, disclosure levels and scores", Run: checkDeterminism},
		{ID: "evaluation.gas", Category: catEvaluation, Spec: "Spec 10 6.3", Level: 1, NeedsManifest: true,
			Title: "max_facts_created 10 gives derivation_limit_exceeded with details.budget", Run: checkGas},
		{ID: "evaluation.max_tools", Category: catEvaluation, Spec: "Spec 05 2.2", Level: 1, NeedsManifest: true,
			Title: "max_tools_returned 1 returns at most one macro-tool", Run: checkMaxTools},
		{ID: "evaluation.proof_hints", Category: catEvaluation, Spec: "Spec 09 5", Level: 3, NeedsManifest: true,
			Title: "include_proof_hints returns a derivation per macro-tool", Run: checkProofHints},
		{ID: "evaluation.rule_coverage", Category: catEvaluation, Spec: "Spec 09 6", Level: 3, NeedsManifest: true,
			Title: "rule coverage, when offered, classifies rules as fired, partially_alive, dead, inapplicable", Run: checkRuleCoverage},
		{ID: "evaluation.disclosure_upgrade", Category: catEvaluation, Spec: "Spec 05 5.3", Level: 3, NeedsManifest: true,
			Title: "a disclosure_upgrade fact returns that macro-tool at full disclosure", Run: checkDisclosureUpgrade},

		// Macro-tools (Spec 06).
		{ID: "macro-tools.full", Category: catMacroTools, Spec: "Spec 06 2.2", Level: 1, NeedsManifest: true,
			Title: "at full disclosure every macro-tool has description, input_schema and safety", Run: checkToolsFull},
		{ID: "macro-tools.input_schema", Category: catMacroTools, Spec: "Spec 06 2.2", Level: 1, NeedsManifest: true,
			Title: "input schemas are object schemas whose required names are properties", Run: checkToolsInputSchema},
		{ID: "macro-tools.condensed", Category: catMacroTools, Spec: "Spec 06 2.2", Level: 2, NeedsManifest: true,
			Title: "condensed macro-tools carry name and a one-line description only", Run: checkToolsCondensed},
		{ID: "macro-tools.minimal", Category: catMacroTools, Spec: "Spec 06 2.2", Level: 2, NeedsManifest: true,
			Title: "minimal macro-tools carry macro_id and name only", Run: checkToolsMinimal},
		{ID: "macro-tools.adaptive", Category: catMacroTools, Spec: "Spec 05 5.2", Level: 2, NeedsManifest: true,
			Title: "adaptive disclosure never discloses a lower score more than a higher one", Run: checkToolsAdaptive},
		{ID: "macro-tools.safety", Category: catMacroTools, Spec: "Spec 06 2.3", Level: 2, NeedsManifest: true,
			Title: "side effects use the standard categories or x- names", Run: checkToolsSafety},
		{ID: "macro-tools.context_injection", Category: catMacroTools, Spec: "Spec 06 2.2", Level: 2, NeedsManifest: true,
			Title: "skills and context resources are well formed", Run: checkToolsContext},
		{ID: "macro-tools.validity", Category: catMacroTools, Spec: "Spec 06 2.2", Level: 3, NeedsManifest: true,
			Title: "validity windows are ordered times; a tool is offered inside its window only", Run: checkToolsValidity},

		// Invocation (Spec 07).
		{ID: "invocation.response", Category: catInvocation, Spec: "Spec 07 3", Level: 1, NeedsManifest: true,
			Title: "invoking a macro-tool with valid args gives an invoke_response with a result", Run: checkInvokeResponse},
		{ID: "invocation.observability", Category: catInvocation, Spec: "Spec 07 5", Level: 1, NeedsManifest: true,
			Title: "observability has a summary and events with known statuses", Run: checkInvokeObservability},
		{ID: "invocation.state_delta", Category: catInvocation, Spec: "Spec 07 4", Level: 2, NeedsManifest: true,
			Title: "state_delta asserts carry a category; retracts are fact patterns", Run: checkInvokeStateDelta},
		{ID: "invocation.next", Category: catInvocation, Spec: "Spec 07 6", Level: 2, NeedsManifest: true,
			Title: "next.suggested_intents name intents; continuation_facts are facts", Run: checkInvokeNext},
		{ID: "invocation.macro_not_found", Category: catInvocation, Spec: "Spec 07 2.4", Level: 1, NeedsManifest: true,
			Title: "an unknown macro_id answers macro_not_found", Run: checkMacroNotFound},
		{ID: "invocation.schema_validation", Category: catInvocation, Spec: "Spec 09 4.2", Level: 1, NeedsManifest: true,
			Title: "invalid args answer schema_validation_failed with schema_errors", Run: checkSchemaValidation},
		{ID: "invocation.macro_expired", Category: catInvocation, Spec: "Spec 07 2.3", Level: 3, NeedsManifest: true,
			Title: "invoking after the validity window (by the server's clock) answers macro_expired", Run: checkMacroExpired},

		// Errors (Spec 09).
		{ID: "errors.unsupported_version", Category: catErrors, Spec: "Spec 09 4.4", Level: 1, NeedsManifest: true,
			Title: "another version answers unsupported_version with requested and supported versions", Run: checkUnsupportedVersion},
		{ID: "errors.malformed_json", Category: catErrors, Spec: "Spec 02 3.1", Level: 1, NeedsManifest: true,
			Title: "invalid JSON answers malformed_message with id null", Run: checkMalformedJSON},
		{ID: "errors.missing_id", Category: catErrors, Spec: "Spec 02 2.3", Level: 1, NeedsManifest: true,
			Title: "a request without id answers malformed_message with id null", Run: checkMissingID},
		{ID: "errors.invalid_type", Category: catErrors, Spec: "Spec 09 3.1", Level: 1, NeedsManifest: true,
			Title: "an unknown message type answers invalid_type", Run: checkInvalidType},
		{ID: "errors.unknown_predicate", Category: catErrors, Spec: "Spec 09 4.1", Level: 1, NeedsManifest: true,
			Title: "an undeclared predicate answers unknown_predicate", Run: checkUnknownPredicate},
		{ID: "errors.arity_mismatch", Category: catErrors, Spec: "Spec 09 4.1", Level: 1, NeedsManifest: true,
			Title: "a fact with one argument too many answers arity_mismatch", Run: checkArityMismatch},
		{ID: "errors.type_mismatch", Category: catErrors, Spec: "Spec 09 4.1", Level: 1, NeedsManifest: true,
			Title: "an argument of the wrong type answers type_mismatch", Run: checkTypeMismatch},
		{ID: "errors.violation_details", Category: catErrors, Spec: "Spec 09 4.1", Level: 2, NeedsManifest: true,
			Title: "fact violations carry fact_index, predicate, issue, message and a suggestion", Run: checkViolationDetails},
		{ID: "errors.too_many_facts", Category: catErrors, Spec: "Spec 04 3.2.9", Level: 1, NeedsManifest: true,
			Title: "max_facts_per_request+1 facts answer too_many_facts", Run: checkTooManyFacts},
		{ID: "errors.message_too_large", Category: catErrors, Spec: "Spec 02 3.2", Level: 1, NeedsManifest: true, Phase: 1,
			Title: "a message of max_message_bytes+1 answers message_too_large", Run: checkMessageTooLarge},
		{ID: "errors.envelope", Category: catErrors, Spec: "Spec 09 2", Level: 1, Phase: 2,
			Title: "every error is an error envelope with code, message and recoverable", Run: checkErrorEnvelopes},
		{ID: "errors.registered_codes", Category: catErrors, Spec: "Spec 09 3", Level: 1, Phase: 2,
			Title: "every error code is in the registry or starts with x-", Run: checkErrorCodes},
		{ID: "errors.recoverable", Category: catErrors, Spec: "Spec 09 3.1", Level: 1, Phase: 2,
			Title: "every error's recoverable flag matches the registry", Run: checkRecoverable},
		{ID: "errors.http_status", Category: catErrors, Spec: "Spec 02 4.2", Level: 1, Transport: "http", Phase: 2,
			Title: "every error has the registry's HTTP status; responses have 200", Run: checkHTTPStatus},
		{ID: "errors.id_correlation", Category: catErrors, Spec: "Spec 09 2.3", Level: 1, Phase: 2,
			Title: "every answer echoes its request's id, and has id null when the id was unreadable", Run: checkIDCorrelation},

		// Security (Spec 08).
		{ID: "security.reserved_predicate", Category: catSecurity, Spec: "Spec 08 2.1", Level: 1, NeedsManifest: true,
			Title: "a _manglecp_ predicate answers reserved_predicate", Run: checkReservedPredicate},
		{ID: "security.auth_required", Category: catSecurity, Spec: "Spec 08 3", Level: 1, NeedsManifest: true,
			Title: "with auth.required, a request without credentials answers auth_required", Run: checkAuthRequired},
		{ID: "security.auth_invalid", Category: catSecurity, Spec: "Spec 08 3", Level: 1, NeedsManifest: true,
			Title: "with auth.required, a wrong token answers auth_invalid", Run: checkAuthInvalid},
		{ID: "security.cors", Category: catSecurity, Spec: "Spec 02 4.2", Level: 1, Transport: "http", NeedsManifest: true,
			Title: "with auth.required, CORS never allows origin *", Run: checkCORS},
		{ID: "security.confirmation", Category: catSecurity, Spec: "Spec 08 4.2", Level: 2, NeedsManifest: true,
			Title: "a tool requiring confirmation refuses a missing or invalid confirmation_token", Run: checkConfirmation},
		{ID: "security.proof_hints", Category: catSecurity, Spec: "Spec 09 5.5", Level: 3, NeedsManifest: true,
			Title: "proof hints expose no rule source, file paths or stack traces", Run: checkProofHintsOpaque},
		{ID: "security.no_internal_details", Category: catSecurity, Spec: "Spec 09 2", Level: 1, Phase: 2,
			Title: "no error exposes a stack trace, Go file path or panic", Run: checkNoLeaks},

		// Transport (Spec 02).
		{ID: "transport.http.well_known", Category: catTransport, Spec: "Spec 02 5.1", Level: 1, Transport: "http",
			Title: "GET /.well-known/manglecp/manifest.json answers 200 with a JSON manifest", Run: checkWellKnown},
		{ID: "transport.http.caching", Category: catTransport, Spec: "Spec 04 6.1", Level: 1, Transport: "http",
			Title: "the manifest has Cache-Control and ETag; If-None-Match answers 304", Run: checkHTTPCaching},
		{ID: "transport.http.endpoints", Category: catTransport, Spec: "Spec 02 4.2", Level: 1, Transport: "http", NeedsManifest: true,
			Title: "the manifest's endpoints, resolved against its URL, answer evaluate and invoke", Run: checkHTTPEndpoints},
		{ID: "transport.session.manifest_first", Category: catTransport, Spec: "Spec 02 4.1", Level: 1, Transport: "session",
			Title: "the manifest is the first message of a session", Run: checkManifestFirst},
		{ID: "transport.session.pipelining", Category: catTransport, Spec: "Spec 02 6.1", Level: 1, Transport: "session", NeedsManifest: true,
			Title: "pipelined requests are each answered, correlated by id", Run: checkPipelining},
		{ID: "transport.session.cancel", Category: catTransport, Spec: "Spec 02 6.2", Level: 2, Transport: "session", NeedsManifest: true,
			Title: "cancel stops a running request, which answers cancelled with its id", Run: checkCancel},
		{ID: "transport.envelope", Category: catTransport, Spec: "Spec 02 2", Level: 1, Phase: 2,
			Title: "every server message is a valid envelope of the right type", Run: checkEnvelopes},
		{ID: "transport.http.json", Category: catTransport, Spec: "Spec 02 4.2", Level: 1, Transport: "http", Phase: 2,
			Title: "every HTTP answer has Content-Type application/json", Run: checkHTTPJSON},
		{ID: "transport.ws.frames", Category: catTransport, Spec: "Spec 02 4.1", Level: 1, Transport: "websocket", Phase: 2,
			Title: "every WebSocket message is one JSON envelope in one text frame", Run: checkWSFrames},
		{ID: "transport.stdio.stdout", Category: catTransport, Spec: "Spec 02 4.3", Level: 1, Transport: "stdio", Phase: 2,
			Title: "stdout carries only protocol messages, one per line", Run: checkStdout},
	}
}
