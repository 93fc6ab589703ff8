// Package analyse is the kernel's second stage: it checks and analyses the
// parsed files of kernel/load. [Analyse] checks layer ownership (a
// predicate's rules live in one layer; request predicates have none),
// temporal recursion and aggregations (temporal.go), patterns that would
// fail every evaluation reaching them (lint.go), the protocol vocabulary's
// contracts (contract.go) and cycles of tool_requires; runs Mangle's
// analysis and stratification, explaining its errors in the author's words
// (analyse.go); and reads the manifest declarations (intents, facts
// profile, tools, skills, actions) from the facts (analysis.go). Every
// problem is a load.LoadError naming file and line.
//
// Its result, [Analysis], is immutable: kernel/plan plans it and
// kernel/eval evaluates it. [Lint] reports what loads but deserves a look.
package analyse
