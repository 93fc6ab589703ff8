// Package eval is the kernel's fourth stage: it evaluates requests. [New]
// puts an analysed program's server facts into an indexed store
// (index.go), evaluates once the strata and rules no request can change
// (static.go) and plans the others (kernel/plan). [Program.Evaluate]
// builds a request's store over the server facts (store.go, temporal.go),
// runs the plan depth first with the engine's semantics (exec.go,
// groupby.go) under a created-facts limit, a work budget counted in the
// store and the context's deadline, and reads back the selected tools
// with every attribute the rules derived (result.go). It never returns
// partial results.
//
// Rule coverage and proofs are kernel/explain's: Evaluate hands it the
// final state ([Run]) under the same limits.
package eval
