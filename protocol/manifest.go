package protocol

// Manifest is the server's capability advertisement (Spec 04 section 3).
// It never lists tools.
type Manifest struct {
	ServerName    string         `json:"server_name"`
	ServerVersion string         `json:"server_version"`
	Protocol      ProtocolInfo   `json:"protocol"`
	Status        Status         `json:"status"`
	Domain        DomainInfo     `json:"domain"`
	Endpoints     *Endpoints     `json:"endpoints,omitempty"`
	Intents       []IntentDecl   `json:"intents"`
	FactsProfile  FactsProfile   `json:"facts_profile"`
	Capabilities  Capabilities   `json:"capabilities"`
	Limits        Limits         `json:"limits"`
	Auth          AuthInfo       `json:"auth"`
	Extensions    map[string]any `json:"extensions"`
}

// ProtocolInfo declares the version and conformance level (Spec 04 3.2.2,
// Spec 10 section 3.1).
type ProtocolInfo struct {
	Manglecp          string   `json:"manglecp"`
	SupportedVersions []string `json:"supported_versions,omitempty"`
	ConformanceLevel  int      `json:"conformance_level"`
}

// Status is the server readiness state (Spec 04 section 4).
type Status string

// The readiness states of Spec 04 section 4.1.
const (
	StatusReady    Status = "ready"
	StatusBooting  Status = "booting"
	StatusDegraded Status = "degraded"
	StatusDraining Status = "draining"
)

// DomainInfo describes the server's domain (Spec 04 section 3.2.4).
type DomainInfo struct {
	ID          string         `json:"id"`
	Description string         `json:"description"`
	Categories  []string       `json:"categories,omitempty"`
	Affinities  map[string]int `json:"affinities,omitempty"`
}

// Endpoints are the HTTP endpoints (Spec 04 section 3.2.5).
type Endpoints struct {
	IntentEval  string `json:"intent_eval"`
	MacroInvoke string `json:"macro_invoke"`
}

// IntentDecl advertises an intent (Spec 04 section 3.2.6).
type IntentDecl struct {
	Name          string   `json:"name"`
	Description   string   `json:"description"`
	RequiredFacts []string `json:"required_facts,omitempty"`
	OptionalFacts []string `json:"optional_facts,omitempty"`
}

// FactsProfile declares accepted facts (Spec 04 section 3.2.7).
type FactsProfile struct {
	TimeFormats []string          `json:"time_formats"`
	Predicates  []PredicateSchema `json:"predicates,omitempty"`
	SchemaURI   *string           `json:"schema_uri,omitempty"`
}

// PredicateSchema declares one predicate (Spec 03 section 8).
type PredicateSchema struct {
	Predicate   string   `json:"predicate"`
	Arity       int      `json:"arity"`
	ArgTypes    []string `json:"arg_types,omitempty"`
	ArgNames    []string `json:"arg_names,omitempty"`
	Temporal    bool     `json:"temporal,omitempty"`
	Description string   `json:"description,omitempty"`
	Direction   string   `json:"direction,omitempty"`
}

// The argument type names of Spec 03 section 8.1.
const (
	ArgString  = "string"
	ArgNumber  = "number"
	ArgBoolean = "boolean"
	ArgAny     = "any"
)

// The predicate directions of Spec 03 section 8.2.
const (
	DirectionInput  = "input"
	DirectionOutput = "output"
	DirectionBoth   = "both"
)

// Capabilities are the server's capabilities (Spec 04 section 3.2.8).
type Capabilities struct {
	Temporal           bool                `json:"temporal"`
	Aggregation        bool                `json:"aggregation"`
	ExternalPredicates []ExternalPredicate `json:"external_predicates"`
	RuleSubmission     bool                `json:"rule_submission"`
	Subscriptions      bool                `json:"subscriptions"`
	NamedArgs          bool                `json:"named_args"`
}

// ExternalPredicate declares a predicate bridged to runtime data (Spec 04
// section 3.2.8).
type ExternalPredicate struct {
	Predicate     string `json:"predicate"`
	Arity         int    `json:"arity"`
	Description   string `json:"description"`
	Deterministic bool   `json:"deterministic"`
}

// Limits are the server limits (Spec 04 section 3.2.9).
type Limits struct {
	MaxMessageBytes     int64 `json:"max_message_bytes"`
	MaxFactsPerRequest  int64 `json:"max_facts_per_request"`
	MaxDerivedFacts     int64 `json:"max_derived_facts"`
	MaxIntervalsPerAtom int64 `json:"max_intervals_per_atom,omitempty"`
	MaxComputeMS        int64 `json:"max_compute_ms,omitempty"`
}

// AuthInfo advertises authentication (Spec 04 section 3.2.10).
type AuthInfo struct {
	Required bool     `json:"required"`
	Schemes  []string `json:"schemes,omitempty"`
	TokenURL *string  `json:"token_url"`
}

// Predicate returns the schema of name, or nil.
func (p *FactsProfile) Predicate(name string) *PredicateSchema {
	for i := range p.Predicates {
		if p.Predicates[i].Predicate == name {
			return &p.Predicates[i]
		}
	}
	return nil
}
