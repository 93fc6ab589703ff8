// Package kernel is the MangleCP evaluation layer: it loads Mangle rules once
// in trust layers and evaluates intents against a fresh fact store per
// request.
//
// Loading ([Load]) parses every .mg file of every [Layer] (schema, policy,
// domain, pipeline, in that trust order), checks layer ownership (a
// predicate's heads live in one layer; request predicates have none),
// analyses and stratifies the program once, and reads the manifest
// declarations (intents, facts profile, tools) from the program's facts.
// Rules that would fail every evaluation reaching them (a comparison that
// cannot succeed, an unbounded recursion, cyclic tool_requires) are load
// errors too. Every problem is a [*LoadError] naming file and line.
//
// Evaluation ([Program.Evaluate]) builds a store that overlays the cached
// server facts with the request's facts, runs the six-phase pipeline under
// a created-facts limit, a work budget counted in the store (which bounds
// the CPU of joins that derive little) and a context deadline that really
// stops the engine, and reads back final_selected with every attribute the
// rules derived. It never returns partial results.
//
// The strata that no request can change are evaluated once at load
// (kernel/eval/static.go). The others are compiled at load into rules
// with numbered variables (kernel/plan) and evaluated per request by the
// kernel itself, depth first over an indexed store (kernel/eval/exec.go),
// with the engine's semantics, limits and messages; the engine still
// evaluates what the kernel does not compile (non-linear recursion,
// temporal heads, deferred and merge predicates). A differential test and
// fuzz target hold the two to the same facts on every domain
// (kernel/eval/exec_test.go), and to the same results, proofs and rule
// coverage (exec_test.go).
//
// The kernel holds no tool-selection logic: every decision is a rule.
//
// This package is the facade the server uses; the work is done by one
// package per stage, each importing only earlier ones:
//
//   - kernel/load: rule files read into layers and parsed; syntax errors
//     in the author's words (kernel/rules embeds the kernel's own layers).
//   - kernel/analyse: ownership, contracts, failing patterns, temporal
//     checks, Mangle's analysis and stratification, the manifest
//     declarations.
//   - kernel/plan: the dynamic strata compiled into steps, the strata left
//     to the engine, each intent's plan.
//   - kernel/eval: the indexed stores, the static strata evaluated at load,
//     the per-request evaluation and the reading of its result.
//   - kernel/explain: rule coverage and proofs of a finished evaluation.
//
// kernel/factcodec converts wire facts and clauses to Mangle and back.
package kernel
