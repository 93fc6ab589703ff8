package manglecp

import (
	"context"
	"fmt"
	"io/fs"
	"reflect"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// Domain is a MangleCP domain: rules and the actions they name.
type Domain struct {
	// ID and Description fill the manifest's domain object.
	ID          string
	Description string
	Categories  []string
	// Rules holds policy/*.mg (trust layer "policy") and domain/*.mg (trust
	// layer "domain"). The kernel adds its own schema and pipeline layers.
	Rules fs.FS
	// RulesName names Rules in error messages (e.g. a directory path).
	RulesName string
	// Actions maps the action names used in tool_action facts to handlers.
	Actions map[string]ActionSpec
	// External maps external predicate names to the Go code that computes
	// their facts for each request (Spec 04 section 3.2.8).
	External map[string]External
	// Extensions are added to the manifest's extensions (names start with
	// "x-"), e.g. why a capability of the domain is unavailable.
	Extensions map[string]any
	// Health, when set, is called once by [NewServer] with the
	// [HealthReport] the domain calls whenever a part of it stops working
	// or works again (a browser process being restarted): the server is
	// degraded while a part is, and the part's manifest extension follows.
	Health func(report HealthReport)
	// Close, when set, releases what the domain holds (a browser process,
	// connections). [Server.Close] calls it once, after the server stopped
	// taking requests.
	Close func() error
	// Samples holds sample requests of the domain: *.json files at its
	// root, each an intent_request envelope. [Server.Reload] evaluates them
	// on new rules and keeps the old rules when one fails (status degraded);
	// `manglecp check` reports such a failure as an error. They should
	// reach the domain's rules the way real requests do. Nil: no samples.
	Samples fs.FS
	// Codes are the domain's own error codes ("x-name", Spec 09 section
	// 3.2), registered with the server's registry at construction:
	// [NewServer] fails when a code is registered twice or is malformed.
	// An action returns one as a *protocol.Error (wrapped or not); the
	// client gets it with the status and recoverable flag given here. A
	// code the domain did not register is logged and masked as
	// internal_error.
	Codes []protocol.CodeInfo
}

// registry builds the error registry of d: the standard codes plus d's.
func (d Domain) registry() (*protocol.Registry, error) {
	codes := make([]protocol.DomainCode, len(d.Codes))
	for i, c := range d.Codes {
		codes[i] = protocol.DomainCode{Domain: d.ID, CodeInfo: c}
	}
	reg, err := protocol.NewRegistry(codes...)
	if err != nil {
		return nil, fmt.Errorf("manglecp: domain error codes: %w", err)
	}
	return reg, nil
}

// External is an external predicate: facts computed by Go for each
// request, read by rules like any other predicate.
//
// The server calls Compute before evaluating, in name order, and adds the
// returned tuples as server facts. (Mangle v0.5.0's own external predicate
// callbacks panic when rules bind their inputs through earlier premises, so
// the predicate is materialized instead; Compute decides which tuples
// matter from the request's facts.) Deterministic must be false when equal
// requests can get different tuples, e.g. from a clock or a file system:
// the manifest then says so, and because tuples enter the macro_id hash a
// changed result never reuses an old macro_id.
type External struct {
	Arity         int
	Description   string
	Deterministic bool
	Compute       func(ctx context.Context, in *ExternalInput) ([][]any, error)
}

// ExternalInput is what an external predicate sees: the request's intent,
// validated facts and evaluation time. The facts are the server's, shared
// with the rest of the evaluation: read them, never modify them.
type ExternalInput struct {
	Intent   string
	Facts    []protocol.Fact
	EvalTime time.Time
}

// ActionSpec registers one action.
type ActionSpec struct {
	// Run executes the action.
	Run Action
	// OutputSchema, when set, is the JSON Schema of Outcome.Result; it is
	// advertised on the macro-tool and results are checked against it.
	OutputSchema map[string]any
	// ParamSchemas, when set, returns more of the JSON Schema of some
	// parameters of a tool this action runs (parameter -> schema keywords:
	// items, properties, required, minLength, pattern ...), for what
	// tool_param facts cannot say (the fields of an array's items). The
	// macro-tool's input schema carries these keywords beside the type,
	// description, enum and default the rules give (which they never
	// replace), so arguments are validated against them when invoked,
	// before any confirmation is asked. A schema must be self-contained
	// (no $ref) and compile under JSON Schema 2020-12.
	ParamSchemas func(tool string) map[string]map[string]any

	// input is the argument type of a [Typed] action, checked against the
	// tools' parameters when the rules load.
	input reflect.Type
}

// Action executes a macro-tool. It must honour ctx: the server cancels it
// when the client goes away or the invocation timeout passes. An error or a
// panic becomes execution_failed; its text is logged, never sent.
type Action func(ctx context.Context, call *Call) (*Outcome, error)

// Call is what an action receives. It must not be modified after the action
// returns.
type Call struct {
	// MacroID and Tool identify the macro-tool being invoked.
	MacroID string
	Tool    string
	// Intent and Params are those of the evaluation that synthesized it.
	Intent string
	Params map[string]any
	// Args are the invocation arguments, already valid against the input
	// schema (numbers are json.Number).
	Args map[string]any
	// Facts are the client facts the macro-tool was synthesized from,
	// validated and positional.
	Facts []protocol.Fact
	// EvalTime is the invocation's evaluation time.
	EvalTime time.Time
	// Progress reports progress on session transports; it is never nil.
	Progress func(status, detail string, percent float64)
}

// Outcome is an action's result.
type Outcome struct {
	// Result is the tool's output object.
	Result map[string]any
	// Summary is a one to three sentence account of the execution.
	Summary string
	// Events are the atomic steps, in order; the server caps their number.
	Events []protocol.Event
	// Assert and Retract form the state delta. The server fills in the
	// category ("server" unless set) and provenance of asserted facts.
	Assert  []protocol.Fact
	Retract []protocol.Fact
	// ContinuationFacts are facts to include in the next intent request.
	ContinuationFacts []protocol.Fact
}

// Step runs fn as a named step and appends its event, timed, to o.Events.
// A returned error marks the step failed and is returned.
func (o *Outcome) Step(action string, fn func() (detail string, err error)) error {
	start := time.Now()
	detail, err := fn()
	ev := protocol.Event{Action: action, Status: protocol.EventSuccess, DurationMS: time.Since(start).Milliseconds(), Detail: detail}
	if err != nil {
		ev.Status = protocol.EventFailure
	}
	o.Events = append(o.Events, ev)
	return err
}

// Skip appends a skipped event.
func (o *Outcome) Skip(action, detail string) {
	o.Events = append(o.Events, protocol.Event{Action: action, Status: protocol.EventSkipped, Detail: detail})
}
