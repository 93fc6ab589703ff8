package kernel

import (
	"context"

	"github.com/manglecp/manglecp/kernel/analyse"
	"github.com/manglecp/manglecp/kernel/eval"
	"github.com/manglecp/manglecp/kernel/explain"
	"github.com/manglecp/manglecp/kernel/load"
	"github.com/manglecp/manglecp/kernel/plan"
	"github.com/manglecp/manglecp/protocol"
)

// Program is a loaded, analysed and stratified rule program with its cached
// server facts and manifest declarations. It is immutable and safe for
// concurrent evaluations.
type Program struct {
	e *eval.Program
}

// Load loads domain layers (policy, domain, ... from highest to lowest trust)
// between the kernel's schema and pipeline layers. Every problem is
// reported as [LoadErrors] naming file and line.
func Load(domain ...Layer) (*Program, error) { return LoadWithExternals(nil, domain...) }

// LoadWithExternals is [Load] for a domain with external predicates: rules
// may read them, no rule may define them, and [Request.External] carries
// their facts.
func LoadWithExternals(externals []External, domain ...Layer) (*Program, error) {
	schema, pipeline := load.ProtocolLayers()
	layers := append([]Layer{schema}, domain...)
	layers = append(layers, pipeline)
	files, err := load.Read(layers)
	if err != nil {
		return nil, err
	}
	a, err := analyse.Analyse(files, externals)
	if err != nil {
		return nil, err
	}
	e, err := eval.New(a, true)
	if err != nil {
		return nil, err
	}
	return &Program{e: e}, nil
}

// Result is a complete evaluation: the selected tools, sorted by
// descending score then name, and statistics.
type Result struct {
	Tools           []Tool
	Dropped         []Dropped
	FactsEvaluated  int64
	FactsDerived    int64
	RulesFired      int64
	PhasesCompleted int
	// Work is what the evaluation spent, in the units of Request.MaxWork
	// (reading the result, coverage and proofs not included).
	Work int64
	// Explanation and Coverage are set when the request asked for them.
	Explanation *Explanation
	Coverage    *Coverage
	// IntentDenied is true when policy derived intent_denied for the
	// request's intent. Tools is then empty.
	IntentDenied bool
}

// Evaluate runs the program on a fresh store holding the cached server
// facts, the request predicates and the request's facts. ctx bounds the
// evaluation: when it ends the engine is stopped at its next store access
// and evaluation_timeout (deadline) or cancelled is returned. Exceeding
// MaxFactsCreated returns derivation_limit_exceeded with a budget. Any
// other failure is evaluation_failed; the cause never reaches the client.
// Rule coverage and proofs, when asked for, are read from the final store
// under the same limits.
func (p *Program) Evaluate(ctx context.Context, req Request) (*Result, error) {
	var cov *Coverage
	var x *Explanation
	var after func(*eval.Run, *eval.Result)
	if req.Coverage || req.Explain {
		after = func(run *eval.Run, res *eval.Result) {
			if req.Coverage {
				cov = explain.CoverageOf(p.e, run)
			}
			if req.Explain {
				x = explain.Proofs(p.e, run, res.Tools, res.Dropped)
			}
		}
	}
	res, err := p.e.Evaluate(ctx, req, after)
	if err != nil {
		return nil, err
	}
	return &Result{
		Tools: res.Tools, Dropped: res.Dropped,
		FactsEvaluated: res.FactsEvaluated, FactsDerived: res.FactsDerived, RulesFired: res.RulesFired,
		PhasesCompleted: res.PhasesCompleted, Work: res.Work,
		Explanation: x, Coverage: cov, IntentDenied: res.IntentDenied,
	}, nil
}

// Intents returns the intents the manifest advertises, sorted by name.
func (p *Program) Intents() []protocol.IntentDecl { return p.e.Intents() }

// FactsProfile returns the facts profile (predicates sorted by name).
func (p *Program) FactsProfile() protocol.FactsProfile { return p.e.FactsProfile() }

// Tools returns the names of the declared tools, sorted.
func (p *Program) Tools() []string { return p.e.Tools() }

// Skill returns a skill of the catalogue by id.
func (p *Program) Skill(id string) (protocol.Skill, bool) { return p.e.Skill(id) }

// SkillInline reports whether the catalogue marks the skill for inline
// delivery.
func (p *Program) SkillInline(id string) bool { return p.e.SkillInline(id) }

// ActionNames returns the action names that tool_action facts name, sorted.
func (p *Program) ActionNames() []string { return p.e.ActionNames() }

// ActionRefs returns the actions tool_action facts name, sorted by name,
// each with the first fact naming it.
func (p *Program) ActionRefs() []ActionRef { return p.e.ActionRefs() }

// ActionParams returns, for each action, the parameters of the tools it
// runs, sorted by tool and name. A tool whose parameters a rule derives
// with a variable name is left out: they are known only per request.
func (p *Program) ActionParams() map[string][]DeclaredParam { return p.e.ActionParams() }

// Warnings returns what loads but deserves the author's look, each with
// its file and line: an old spelling (decl_arg's "number", now "integer").
// The server logs them at load; `manglecp check` prints them.
func (p *Program) Warnings() []*LoadError { return p.e.Warnings() }

// RuleCount is the number of rules (clauses with a body).
func (p *Program) RuleCount() int { return p.e.RuleCount() }

// BaseFactCount is the number of cached server facts.
func (p *Program) BaseFactCount() int { return p.e.BaseFactCount() }

// EngineStrata returns the strata the engine evaluates, in evaluation
// order; none when the kernel compiles every rule.
func (p *Program) EngineStrata() []EngineStratum { return p.e.EngineStrata() }

// The stages' types the server and the domains use, under the names they
// always had.
type (
	// Layer is a trust layer of rule files (kernel/load).
	Layer = load.Layer
	// LoadError is a problem in a rule file, with its file and line.
	LoadError = load.LoadError
	// LoadErrors is every problem loading found.
	LoadErrors = load.LoadErrors
	// SourceClause is a clause of a rule file with its location.
	SourceClause = load.SourceClause
	// External declares a predicate whose facts the host computes per
	// request (kernel/analyse).
	External = analyse.External
	// ActionRef is an action a tool_action fact names.
	ActionRef = analyse.ActionRef
	// DeclaredParam is a parameter the rules declare for a tool.
	DeclaredParam = analyse.DeclaredParam
	// EngineStratum is a stratum the Mangle engine evaluates, and why
	// (kernel/plan).
	EngineStratum = plan.EngineStratum
	// Request is one evaluation (kernel/eval).
	Request = eval.Request
	// Tool is one selected tool with every attribute the rules derived.
	Tool = eval.Tool
	// Param is a tool parameter.
	Param = eval.Param
	// ParamPair is a pair of parameter values the rules tie together.
	ParamPair = eval.ParamPair
	// Resource is a resource the rules attach to a tool.
	Resource = eval.Resource
	// NextIntent is an intent the rules suggest after a tool.
	NextIntent = eval.NextIntent
	// Dropped is a candidate tool the pipeline dropped, and in which phase.
	Dropped = eval.Dropped
	// Error is an evaluation failure: the public protocol error and its
	// cause, for the server log.
	Error = eval.Error
	// Coverage is the rule coverage of one evaluation (kernel/explain).
	Coverage = explain.Coverage
	// RuleStatus is one rule that did not fire.
	RuleStatus = explain.RuleStatus
	// Explanation holds the proofs of one evaluation.
	Explanation = explain.Explanation
	// Derivation is the proof of one selected tool.
	Derivation = explain.Derivation
	// ProofNode is a node of a proof tree.
	ProofNode = explain.ProofNode
	// Exclusion is why a candidate was dropped.
	Exclusion = explain.Exclusion
	// UnmatchedFact is a client fact no rule reads.
	UnmatchedFact = explain.UnmatchedFact
)

// ProtocolLayers returns the kernel's own layers: schema (highest trust)
// and pipeline (lowest). [Load] places domain layers between them.
func ProtocolLayers() (schema, pipeline Layer) { return load.ProtocolLayers() }

// Lint reports what loads but deserves the author's look (kernel/analyse).
func Lint(domain ...Layer) ([]*LoadError, error) { return analyse.Lint(domain...) }

// SourceClauses parses the layers and returns their clauses in file order,
// for tools that show rule structure (manglecp check --show-rules).
func SourceClauses(domain ...Layer) ([]SourceClause, error) { return load.SourceClauses(domain...) }

// Actions reads the actions the tool_action facts of layers name, sorted by
// name, each with the first fact naming it. It only parses the files.
func Actions(layers ...Layer) ([]ActionRef, error) { return analyse.Actions(layers...) }
