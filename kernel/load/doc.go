// Package load is the kernel's first stage: it reads rule files. A [Layer]
// is a directory of .mg files at one trust level; [ProtocolLayers] are the
// kernel's own (schema and pipeline, embedded by kernel/rules). [Read]
// parses every file of every layer with Mangle's parser and turns each
// syntax error into a [LoadError] naming file and line, in the author's
// words (syntax.go). [CollectFacts] and [SourceClauses] list the facts
// and clauses with their locations.
//
// It knows nothing of what the rules mean: kernel/analyse checks them.
package load
