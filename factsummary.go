package manglecp

import (
	"hash"

	"github.com/manglecp/manglecp/internal/macroid"
	"github.com/manglecp/manglecp/internal/macros"
)

// factsSummary is what rendering needs of a request's facts that does not
// depend on the kernel's answer: the hash of their keys (macro_ids build
// on it) and their memory (the macro-tool cache counts it). For a large
// request it is computed on a goroutine of its own while the kernel
// evaluates; otherwise when rendering first asks for it.
type factsSummary struct {
	done     chan struct{} // closed once keys and heap are set
	keys     hash.Hash     // SHA-256 after the keys' text; rendering adds the external facts, once
	heap     int64         // macros.FactsBytes of the facts
	panicked any
}

// summaryAheadFacts is the fewest facts whose summary is computed while
// the kernel evaluates: below it a goroutine costs more than it saves.
const summaryAheadFacts = 1024

// summarizeAhead starts computing ev's facts summary on a goroutine of its
// own when the request is large. The goroutine only reads the facts and
// their keys, which nothing writes after decoding, and ends by itself.
func (ev *evaluation) summarizeAhead() {
	if len(ev.facts) < summaryAheadFacts || ev.summary != nil {
		return
	}
	sum := &factsSummary{done: make(chan struct{})}
	ev.summary = sum
	facts, keys := ev.facts, ev.factKeys
	go func() {
		defer close(sum.done)
		defer func() { sum.panicked = recover() }()
		sum.keys, sum.heap = macroid.HashKeys(keys), macros.FactsBytes(facts)
	}()
}

// summarized returns ev's facts summary, waiting for it or computing it.
// The facts' keys are read no more after it: their buffers go back for
// another request (releaseKeys).
func (ev *evaluation) summarized() *factsSummary {
	if ev.summary == nil {
		ev.summary = &factsSummary{keys: macroid.HashKeys(ev.factKeys), heap: macros.FactsBytes(ev.facts)}
	} else if ev.summary.done != nil {
		<-ev.summary.done
		if v := ev.summary.panicked; v != nil {
			panic(v) // as if computed here
		}
	}
	if ev.releaseKeys != nil {
		ev.factKeys = nil
		ev.releaseKeys()
		ev.releaseKeys = nil
	}
	return ev.summary
}
