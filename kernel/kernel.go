package kernel

import (
	"context"

	"github.com/manglecp/manglecp/protocol"
)

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
	var explain func(*evalRun, *evalResult)
	if req.Coverage || req.Explain {
		explain = func(run *evalRun, res *evalResult) {
			if req.Coverage {
				cov = coverageOf(p.e, run)
			}
			if req.Explain {
				x = proofs(p.e, run, res.Tools, res.Dropped)
			}
		}
	}
	res, err := p.e.Evaluate(ctx, req, explain)
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
