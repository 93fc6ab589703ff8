// Package plan is the kernel's third stage: it decides how requests
// evaluate an analysed program. [Plan.CompilePlan] turns the strata a
// request can change into steps: rules compiled with numbered variables,
// which kernel/eval evaluates itself, or runs of strata handed to the
// Mangle engine ([EngineStratum] says why). [Plan.PlanIntents] gives each
// declared intent the steps its answer can depend on, found by abstract
// interpretation over the server facts (prune.go).
//
// It evaluates nothing: kernel/eval evaluates the strata no request can
// change at load, then asks for the plan of the others.
package plan
