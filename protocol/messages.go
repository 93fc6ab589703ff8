package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
)

// IntentRequest is the intent_request payload (Spec 05 section 2).
type IntentRequest struct {
	Intent      Intent       `json:"intent"`
	Facts       []Fact       `json:"facts"`
	EvalTime    *Time        `json:"eval_time,omitempty"`
	Constraints *Constraints `json:"constraints,omitempty"`
	Options     *Options     `json:"options,omitempty"`
}

// Intent names what the client wants to accomplish (Spec 05 section 2.2).
type Intent struct {
	Name   string         `json:"name"`
	Params map[string]any `json:"params,omitempty"`
}

// Constraints are client budgets (Spec 05 section 2.2). A nil field means
// "use the server's limit".
type Constraints struct {
	MaxFactsCreated     *int64 `json:"max_facts_created,omitempty"`
	MaxIntervalsPerAtom *int64 `json:"max_intervals_per_atom,omitempty"`
	MaxComputeMS        *int64 `json:"max_compute_ms,omitempty"`
	MaxToolsReturned    *int64 `json:"max_tools_returned,omitempty"`
	MaxTokensBudget     *int64 `json:"max_tokens_budget,omitempty"`
}

// Options are evaluation options (Spec 05 section 2.2).
type Options struct {
	IncludeProofHints    bool   `json:"include_proof_hints,omitempty"`
	DisclosurePreference string `json:"disclosure_preference,omitempty"`
	// IncludeRuleCoverage asks for rule coverage diagnostics (Spec 09
	// section 6); an extension option.
	IncludeRuleCoverage bool `json:"x-include_rule_coverage,omitempty"`
}

// The disclosure levels and preferences of Spec 05 section 5.
const (
	DisclosureFull      = "full"
	DisclosureCondensed = "condensed"
	DisclosureMinimal   = "minimal"
	DisclosureAdaptive  = "adaptive"
)

// IntentResponse is the intent_response payload (Spec 05 section 4).
type IntentResponse struct {
	EvalTimeUsed   Time         `json:"eval_time_used"`
	EvalDurationMS int64        `json:"eval_duration_ms"`
	MacroTools     []MacroTool  `json:"macro_tools"`
	ProofHints     *ProofHints  `json:"proof_hints,omitempty"`
	RequiredSkills []Skill      `json:"required_skills,omitempty"`
	Diagnostics    *Diagnostics `json:"diagnostics,omitempty"`
	// Warnings report non-fatal conditions (a clamped constraint, a
	// truncated list); codes come from the warning registry.
	Warnings []Warning `json:"warnings,omitempty"`
}

// Diagnostics are evaluation statistics (Spec 05 section 4.4).
type Diagnostics struct {
	FactsEvaluated  int64         `json:"facts_evaluated"`
	FactsDerived    int64         `json:"facts_derived"`
	RulesFired      int64         `json:"rules_fired"`
	PhasesCompleted *int          `json:"phases_completed"`
	RuleCoverage    *RuleCoverage `json:"rule_coverage,omitempty"`
}

// ProofHints explain an evaluation (Spec 09 section 5). They hold
// predicate names, phase names, scores and facts, never rule source, file
// paths or policy rule details.
type ProofHints struct {
	Derivations    []Derivation    `json:"derivations"`
	Excluded       []Exclusion     `json:"excluded,omitempty"`
	UnmatchedFacts []UnmatchedFact `json:"unmatched_facts,omitempty"`
}

// Derivation explains why a macro-tool was selected.
type Derivation struct {
	MacroID         string     `json:"macro_id"`
	SelectedBy      string     `json:"selected_by"`
	Score           int64      `json:"score"`
	SupportingFacts []Fact     `json:"supporting_facts"`
	RuleChain       []string   `json:"rule_chain"`
	Tree            *ProofNode `json:"tree,omitempty"`
}

// ProofNode is one node of a derivation tree; Type is "server", "session",
// "derived" or "absent" (a negated premise).
type ProofNode struct {
	Fact     string       `json:"fact"`
	Type     string       `json:"type"`
	Children []*ProofNode `json:"children,omitempty"`
}

// Exclusion explains why a candidate was not returned.
type Exclusion struct {
	Candidate  string `json:"candidate"`
	ExcludedBy string `json:"excluded_by"`
	Reason     string `json:"reason"`
}

// UnmatchedFact is a client fact no rule used.
type UnmatchedFact struct {
	Pred   string `json:"pred"`
	Reason string `json:"reason"`
}

// RuleCoverage is the rule coverage extension (Spec 09 section 6).
type RuleCoverage struct {
	TotalRules        int          `json:"total_rules"`
	RulesFired        int          `json:"rules_fired"`
	RulesDormant      int          `json:"rules_dormant"`
	RulesInapplicable int          `json:"rules_inapplicable"`
	DormantDetails    []RuleStatus `json:"dormant_details"`
}

// RuleStatus is a rule that did not fire.
type RuleStatus struct {
	Rule              string   `json:"rule"`
	MissingPredicates []string `json:"missing_predicates,omitempty"`
	Status            string   `json:"status"`
}

// Warning is one non-fatal condition in a response.
type Warning struct {
	Code    WarningCode    `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// MacroTool is a synthesized tool (Spec 06 section 2). Which fields are set
// depends on DisclosureLevel (Spec 06 section 2.2).
type MacroTool struct {
	MacroID          string            `json:"macro_id"`
	Name             string            `json:"name"`
	Description      string            `json:"description,omitempty"`
	DisclosureLevel  string            `json:"disclosure_level"`
	InputSchema      map[string]any    `json:"input_schema,omitempty"`
	OutputSchema     map[string]any    `json:"output_schema,omitempty"`
	ContextInjection *ContextInjection `json:"context_injection,omitempty"`
	Safety           *Safety           `json:"safety,omitempty"`
	Validity         *Validity         `json:"validity,omitempty"`
	Metadata         *ToolMetadata     `json:"metadata,omitempty"`
}

// ContextInjection bundles what a client needs to use a tool (Spec 06
// section 2.2).
type ContextInjection struct {
	Instructions     string            `json:"instructions,omitempty"`
	Skills           []SkillRef        `json:"skills,omitempty"`
	ContextResources []ContextResource `json:"context_resources,omitempty"`
}

// SkillRef is a skill in a context injection: referenced (Inline false) or
// inline with its content.
type SkillRef struct {
	SkillID string `json:"skill_id"`
	Inline  bool   `json:"inline"`
	Content string `json:"content,omitempty"`
}

// ContextResource is a resource a rule found relevant (Spec 06 section 2.2).
type ContextResource struct {
	URI       string `json:"uri"`
	Relevance string `json:"relevance,omitempty"`
	Priority  *int64 `json:"priority,omitempty"`
}

// Safety is a tool's safety metadata (Spec 06 section 2.2).
type Safety struct {
	RequiresUserConfirmation bool     `json:"requires_user_confirmation"`
	SideEffects              []string `json:"side_effects"`
	Reversible               bool     `json:"reversible"`
	Idempotent               bool     `json:"idempotent"`
}

// Validity is a tool's validity window (Spec 06 section 2.2).
type Validity struct {
	NotBefore *Time `json:"not_before,omitempty"`
	ExpiresAt *Time `json:"expires_at,omitempty"`
}

// ToolMetadata is informational selection data (Spec 06 section 2.2).
type ToolMetadata struct {
	SelectionPhase string   `json:"selection_phase,omitempty"`
	Score          int64    `json:"score"`
	SourceRules    []string `json:"source_rules,omitempty"`
}

// Skill is a reusable instruction bundle (Spec 06 section 4).
type Skill struct {
	SkillID     string          `json:"skill_id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Content     string          `json:"content"`
	ContentType string          `json:"content_type,omitempty"`
	Resources   []SkillResource `json:"resources,omitempty"`
}

// SkillResource is a resource a skill references.
type SkillResource struct {
	URI         string `json:"uri"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
}

// InvokeRequest is the invoke_request payload (Spec 07 section 2).
type InvokeRequest struct {
	MacroID           string         `json:"macro_id"`
	Args              map[string]any `json:"args"`
	EvalTime          *Time          `json:"eval_time,omitempty"`
	ConfirmationToken string         `json:"confirmation_token,omitempty"`
}

// InvokeResponse is the invoke_response payload (Spec 07 section 3).
type InvokeResponse struct {
	Result        map[string]any `json:"result"`
	StateDelta    StateDelta     `json:"state_delta"`
	Observability Observability  `json:"observability"`
	Next          *Next          `json:"next,omitempty"`
}

// StateDelta is the advisory state change (Spec 07 section 4). Clients
// apply Retract (patterns, null = wildcard) before Assert.
type StateDelta struct {
	Assert  []Fact `json:"assert"`
	Retract []Fact `json:"retract"`
}

// Observability summarizes an execution (Spec 07 section 5).
type Observability struct {
	Summary    string  `json:"summary"`
	Events     []Event `json:"events"`
	DurationMS int64   `json:"duration_ms"`
}

// Event is one atomic action of an execution (Spec 07 section 5.2).
type Event struct {
	Action     string `json:"action"`
	Status     string `json:"status"`
	DurationMS int64  `json:"duration_ms"`
	Detail     string `json:"detail,omitempty"`
}

// The event statuses of Spec 07 section 5.2.
const (
	EventSuccess = "success"
	EventFailure = "failure"
	EventSkipped = "skipped"
)

// Next suggests how to continue (Spec 07 section 6).
type Next struct {
	SuggestedIntents  []SuggestedIntent `json:"suggested_intents"`
	ContinuationFacts []Fact            `json:"continuation_facts"`
}

// SuggestedIntent is an intent the client may evaluate next.
type SuggestedIntent struct {
	Name        string         `json:"name"`
	Params      map[string]any `json:"params,omitempty"`
	Description string         `json:"description,omitempty"`
}

// Progress is the progress payload (Spec 07 section 7).
type Progress struct {
	Status  string   `json:"status"`
	Detail  string   `json:"detail,omitempty"`
	Percent *float64 `json:"percent,omitempty"`
}

// Authenticate is the authenticate payload of session transports (Spec 08
// section 3.3).
type Authenticate struct {
	Scheme string `json:"scheme"`
	Token  string `json:"token"`
}

// AuthenticateResponse answers Authenticate (Spec 08 sections 3.3, 4.3).
type AuthenticateResponse struct {
	Status             string   `json:"status"`
	Identity           *string  `json:"identity"`
	Permissions        []string `json:"permissions"`
	TrustLevel         string   `json:"trust_level,omitempty"`
	AutoConfirmEffects []string `json:"auto_confirm_effects,omitempty"`
}

// Cancel is the cancel payload (Spec 02 section 6.2).
type Cancel struct {
	RequestID string `json:"request_id"`
}

// Time is an absolute instant on the wire: an RFC 3339 string, or epoch
// milliseconds as a number. It encodes as RFC 3339 in UTC with the
// precision it carries. A request's eval_time may also be the string
// "now" (Now set, Time zero): the server's clock when it handles the
// request, as "now" is in temporal annotations (Spec 03 section 4.1).
type Time struct {
	time.Time
	// Now reports the value "now": the receiver's current time.
	Now bool
}

// timeType is the type of Time, for errors of its values.
var timeType = reflect.TypeFor[Time]()

// NewTime wraps t.
func NewTime(t time.Time) *Time { return &Time{Time: t.UTC()} }

// UnmarshalJSON accepts an RFC 3339 string, an integer of epoch ms or
// "now". A value that is none of them is a *json.UnmarshalTypeError, to
// which encoding/json adds the field's path, so the error names the field
// (e.g. eval_time).
func (t *Time) UnmarshalJSON(data []byte) error {
	var v any
	if err := decodeNumbers(data, &v); err != nil {
		return err
	}
	if v == "now" {
		*t = Time{Now: true}
		return nil
	}
	tt, err := ParseTime(v)
	if err != nil {
		return &json.UnmarshalTypeError{Value: err.Error(), Type: timeType}
	}
	*t = Time{Time: tt}
	return nil
}

// MarshalJSON encodes RFC 3339 with nanoseconds when present, or "now".
func (t Time) MarshalJSON() ([]byte, error) {
	if t.Now {
		return []byte(`"now"`), nil
	}
	return json.Marshal(t.UTC().Format(time.RFC3339Nano))
}

// CheckTimeRange reports an instant a server cannot evaluate: Mangle keeps
// times as int64 nanoseconds since 1970, so only years 1677 to 2262 are
// representable; anything outside would wrap around silently.
func CheckTimeRange(t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return fmt.Errorf("time %s is outside the supported range %s to %s", t.Format(time.RFC3339), minTime.Format(time.RFC3339), maxTime.Format(time.RFC3339))
	}
	return nil
}

var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// ParseTime converts a decoded JSON time value (an RFC 3339 string or an
// epoch-milliseconds json.Number) to a time.Time.
func ParseTime(v any) (time.Time, error) {
	switch x := v.(type) {
	case string:
		tt, err := ParseRFC3339(x)
		if err != nil {
			return time.Time{}, fmt.Errorf("time %s is not RFC 3339 (e.g. 2026-02-19T14:30:00Z)", Quote(x))
		}
		// An offset can carry year 0000 or 9999 out of them in UTC, where
		// the time is kept and written back.
		if tt.Year() < 0 || tt.Year() > 9999 {
			return time.Time{}, fmt.Errorf("time %s is outside years 0000-9999 in UTC", Quote(x))
		}
		return tt, nil
	case json.Number:
		ms, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("time %s is not an integer of epoch milliseconds", Clip(string(x)))
		}
		t := time.UnixMilli(ms).UTC()
		if t.Year() < 0 || t.Year() > 9999 {
			return time.Time{}, fmt.Errorf("time %s (epoch ms) is beyond the years RFC 3339 can write (0000-9999)", Clip(string(x)))
		}
		return t, nil
	case float64:
		return time.UnixMilli(int64(x)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("time must be an RFC 3339 string or epoch milliseconds, got %s", jsonTypeName(v))
}

// errNotRFC3339 is ParseRFC3339's error for a string without the shape of
// a date-time.
var errNotRFC3339 = errors.New("not an RFC 3339 date-time: YYYY-MM-DDTHH:MM:SS, an optional .fraction, then Z or ±HH:MM")

// isRFC3339 reports whether b has the shape of RFC 3339 section 5.6's
// date-time, with "T" and "Z" in upper case: time.Parse alone also takes a
// one-digit hour and a comma before the fraction, which RFC 3339 does not.
// The values (a month of 13, an hour of 24) are time.Parse's to check,
// but for the offset's.
func isRFC3339(b []byte) bool {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(b) <= len(shape) {
		return false
	}
	for i := range len(shape) {
		if c := shape[i]; c == 'd' && !isDigit(b[i]) || c != 'd' && b[i] != c {
			return false
		}
	}
	rest := b[len(shape):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	switch {
	case len(rest) == 1:
		return rest[0] == 'Z'
	case len(rest) == 6:
		// time-numoffset: an hour of 00-23 and a minute of 00-59, which
		// time.Parse does not bound.
		return (rest[0] == '+' || rest[0] == '-') && isDigit(rest[1]) && isDigit(rest[2]) && rest[3] == ':' && isDigit(rest[4]) && isDigit(rest[5]) &&
			(rest[1] < '2' || rest[1] == '2' && rest[2] <= '3') && rest[4] <= '5'
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// ParseRFC3339 parses an RFC 3339 date-time (Spec 03 section 4.2) as RFC
// 3339 section 5.6 writes it, which is wider than Go's time.RFC3339: the
// "T" and "Z" may be lowercase, and the seconds may be 60 (a leap second);
// and narrower: the hour has two digits, a fraction follows a "." and an
// offset is at most 23:59, as RFC 3339 has them.
// Go times have no leap seconds, so 23:59:60 is read as the instant after
// 23:59:59, which is 00:00:00 of the next day, as POSIX time counts it
// (fractions are kept: 23:59:60.5 is 00:00:00.5). The result is in UTC.
func ParseRFC3339(s string) (time.Time, error) {
	b := []byte(s)
	if len(b) > 10 && b[10] == 't' {
		b[10] = 'T'
	}
	if n := len(b); n > 0 && b[n-1] == 'z' {
		b[n-1] = 'Z'
	}
	if !isRFC3339(b) {
		return time.Time{}, errNotRFC3339
	}
	leap := false
	// "YYYY-MM-DDTHH:MM:SS" (isRFC3339): the seconds are at 17 and 18.
	if b[17] == '6' && b[18] == '0' {
		b[17], b[18] = '5', '9'
		leap = true
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, err
	}
	if leap {
		t = t.Add(time.Second)
	}
	return t.UTC(), nil
}
