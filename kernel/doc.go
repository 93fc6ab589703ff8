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
// (static.go). The others are compiled at load into rules with numbered
// variables and evaluated per request by the kernel itself, depth first
// over an indexed store (plan.go, exec.go), with the engine's semantics,
// limits and messages; the engine still evaluates what the kernel does not
// compile (non-linear recursion, temporal heads, deferred and merge
// predicates). A differential test and fuzz target hold the two to the
// same facts on every domain (exec_test.go).
//
// The kernel holds no tool-selection logic: every decision is a rule.
package kernel
