package mcpbridge

import (
	"encoding/json"

	"github.com/manglecp/manglecp/protocol"
)

// Limits bound what the bridge accepts from the MangleCP server, so that
// a hostile or broken server cannot make it (or the MCP hosts it serves)
// hold unbounded memory: a manifest or answer over a bound is refused
// with message_too_large, whose message names the bound. The zero value
// of each field means its default.
//
// The byte bounds stop reading only when the session's client reads with
// them: a [Dialer] should set client.Options.MaxReplyBytes to
// [Limits.ReplyBytes] (manglecp mcp does). The bridge checks every bound
// again on what it receives, whatever the dialer did.
//
// Worst case with the defaults: one message of at most 8 MiB is read and
// decoded at a time per call (decoded Go values take a few times the JSON
// size); a session's macro-tools are at most 256 tools of at most 8 KiB
// of description and 64 KiB of schema (about 18 MiB); the intent tools
// come from a manifest of at most 8 MiB with at most 256 intents and 1024
// predicates.
type Limits struct {
	// MaxManifestBytes bounds the manifest, as JSON; default 8 MiB.
	MaxManifestBytes int64
	// MaxAnswerBytes bounds one answer (an evaluation's, an invocation's),
	// as JSON; default 8 MiB.
	MaxAnswerBytes int64
	// MaxIntents bounds the intents of the manifest; default 256.
	MaxIntents int
	// MaxPredicates bounds the predicates of the manifest's facts profile,
	// from which the intent tools' schemas are built; default 1024.
	MaxPredicates int
	// MaxTools bounds the macro-tools of one evaluation; default 256.
	MaxTools int
	// MaxDescriptionBytes bounds each description: the domain's, an
	// intent's, a predicate's, a macro-tool's; default 8 KiB.
	MaxDescriptionBytes int
	// MaxSchemaBytes bounds each macro-tool's input schema, as JSON;
	// default 64 KiB.
	MaxSchemaBytes int
}

// The defaults of [Limits].
const (
	DefaultMaxManifestBytes    = 8 << 20
	DefaultMaxAnswerBytes      = 8 << 20
	DefaultMaxIntents          = 256
	DefaultMaxPredicates       = 1024
	DefaultMaxTools            = 256
	DefaultMaxDescriptionBytes = 8 << 10
	DefaultMaxSchemaBytes      = 64 << 10
)

// withDefaults fills the zero (or negative) fields.
func (l Limits) withDefaults() Limits {
	orDefault(&l.MaxManifestBytes, DefaultMaxManifestBytes)
	orDefault(&l.MaxAnswerBytes, DefaultMaxAnswerBytes)
	orDefault(&l.MaxIntents, DefaultMaxIntents)
	orDefault(&l.MaxPredicates, DefaultMaxPredicates)
	orDefault(&l.MaxTools, DefaultMaxTools)
	orDefault(&l.MaxDescriptionBytes, DefaultMaxDescriptionBytes)
	orDefault(&l.MaxSchemaBytes, DefaultMaxSchemaBytes)
	return l
}

// orDefault sets *v to d when it is zero or negative.
func orDefault[T int | int64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// ReplyBytes is the most a client should read of one message from the
// server for these limits: the larger of MaxManifestBytes and
// MaxAnswerBytes (defaults applied).
func (l Limits) ReplyBytes() int64 {
	l = l.withDefaults()
	return max(l.MaxManifestBytes, l.MaxAnswerBytes)
}

// tooLarge is the error for one bound: what went over it, the bound's
// name, its value and the actual figure.
func tooLarge(what, bound string, limit, actual int64) *protocol.Error {
	return protocol.Errorf(protocol.CodeMessageTooLarge,
		"the MangleCP server's %s is over the bridge's bound %s (%d, got %d); the bridge refused it", what, bound, limit, actual).
		WithDetails(&protocol.ErrorDetails{Limit: protocol.Int64Ptr(limit), Actual: protocol.Int64Ptr(actual)})
}

// checkManifest refuses a manifest over a bound.
func (l Limits) checkManifest(m *protocol.Manifest) *protocol.Error {
	if n := len(m.Intents); n > l.MaxIntents {
		return tooLarge("manifest", "MaxIntents (--max-intents)", int64(l.MaxIntents), int64(n))
	}
	if n := len(m.FactsProfile.Predicates); n > l.MaxPredicates {
		return tooLarge("manifest", "MaxPredicates (--max-predicates)", int64(l.MaxPredicates), int64(n))
	}
	if e := l.description("manifest (its domain description)", m.Domain.Description); e != nil {
		return e
	}
	for _, in := range m.Intents {
		if e := l.description("manifest (an intent description)", in.Description); e != nil {
			return e
		}
	}
	for _, p := range m.FactsProfile.Predicates {
		if e := l.description("manifest (a predicate description)", p.Description); e != nil {
			return e
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return protocol.Errorf(CodeProtocolMismatch, "the MangleCP server's manifest cannot be encoded")
	}
	if n := int64(len(raw)); n > l.MaxManifestBytes {
		return tooLarge("manifest", "MaxManifestBytes (--max-manifest-bytes)", l.MaxManifestBytes, n)
	}
	return nil
}

// checkEvaluation refuses an evaluation's answer over a bound.
func (l Limits) checkEvaluation(resp *protocol.IntentResponse) *protocol.Error {
	if n := len(resp.MacroTools); n > l.MaxTools {
		return tooLarge("evaluation answer", "MaxTools (--max-tools)", int64(l.MaxTools), int64(n))
	}
	for i := range resp.MacroTools {
		t := &resp.MacroTools[i]
		if e := l.description("evaluation answer (a macro-tool description)", t.Description); e != nil {
			return e
		}
		if t.InputSchema != nil {
			raw, err := json.Marshal(t.InputSchema)
			if err != nil {
				return protocol.Errorf(CodeProtocolMismatch, "a macro-tool's input schema cannot be encoded")
			}
			if n := int64(len(raw)); n > int64(l.MaxSchemaBytes) {
				return tooLarge("evaluation answer (a macro-tool input schema)", "MaxSchemaBytes (--max-schema-bytes)", int64(l.MaxSchemaBytes), n)
			}
		}
	}
	return l.answerSize("evaluation answer", resp)
}

// checkInvocation refuses an invocation's answer over MaxAnswerBytes.
func (l Limits) checkInvocation(resp *protocol.InvokeResponse) *protocol.Error {
	return l.answerSize("invocation answer", resp)
}

// answerSize checks an answer against MaxAnswerBytes. A client that read
// with ReplyBytes already stopped at MaxAnswerBytes when it is the larger
// bound; otherwise the answer is measured as JSON.
func (l Limits) answerSize(what string, v any) *protocol.Error {
	raw, err := json.Marshal(v)
	if err != nil {
		return protocol.Errorf(CodeProtocolMismatch, "the MangleCP server's %s cannot be encoded", what)
	}
	if n := int64(len(raw)); n > l.MaxAnswerBytes {
		return tooLarge(what, "MaxAnswerBytes (--max-answer-bytes)", l.MaxAnswerBytes, n)
	}
	return nil
}

// description checks one description against MaxDescriptionBytes.
func (l Limits) description(what, s string) *protocol.Error {
	if len(s) > l.MaxDescriptionBytes {
		return tooLarge(what, "MaxDescriptionBytes (--max-description-bytes)", int64(l.MaxDescriptionBytes), int64(len(s)))
	}
	return nil
}
