package kernel

import (
	"context"
	"fmt"
	"testing"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/engine"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"github.com/manglecp/manglecp/kernel/eval"
	"github.com/manglecp/manglecp/kernel/factcodec"
	"github.com/manglecp/manglecp/protocol"
)

// benchSizes are the client fact counts of both benchmarks.
var benchSizes = []int{10, 100, 1000, 10000}

// benchLimit is the created-facts limit of both benchmarks: high enough
// for 10000 facts, and set on both sides because it also caps join width.
const benchLimit = 1_000_000

// benchWork is the work budget of BenchmarkKernelEvaluate: the server's
// default (manglecp.Options.Limits.MaxEvaluationWork), so the budget's
// counting and checks are measured.
const benchWork = 10_000_000

// benchFacts is a deterministic browser session of n facts: the page URL,
// then a repeating mix of network requests, their responses (about 8%
// fail with 404 or 500) and console events (10% errors) spread over 8
// sessions, with increasing timestamps.
func benchFacts(n int) []protocol.Fact {
	facts := []protocol.Fact{protocol.NewFact("current_url", "https://app.example.com/dashboard")}
	ts := 1771510000000
	levels := []string{"log", "info", "error", "debug", "log", "info", "log", "warn", "info", "warn"}
	for i := 0; len(facts) < n; i++ {
		session := fmt.Sprint("s", i%8)
		id := fmt.Sprint("r", i)
		ts += 37
		status := 200
		switch {
		case i%20 == 1:
			status = 404
		case i%33 == 5:
			status = 500
		}
		facts = append(facts,
			protocol.NewFact("net_request", session, id, "GET", fmt.Sprintf("https://api.example.com/items/%d", i), jn(ts)),
			protocol.NewFact("net_response", session, id, jn(status), jn(ts+120)),
			protocol.NewFact("console_event", session, levels[i%len(levels)], fmt.Sprintf("message %d", i%50), jn(ts+200)),
		)
	}
	return facts[:n]
}

// BenchmarkKernelEvaluate is the kernel's in-process cost of one
// diagnose_error request on the browser domain: converting facts, the
// overlay store with its abort checks, evaluation, statistics and
// rendering.
func BenchmarkKernelEvaluate(b *testing.B) {
	p := mustLoad(b, browserRules)
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("facts=%d", n), func(b *testing.B) {
			req := Request{Intent: "diagnose_error", Facts: benchFacts(n), EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: benchLimit, MaxWork: benchWork}
			ctx := context.Background()
			b.ReportAllocs()
			done := cpuPerOp(b)
			for b.Loop() {
				if _, err := p.Evaluate(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
}

// BenchmarkRawEngine evaluates the same analysed program on the same facts
// with the bare engine and no kernel around it: a fresh SimpleInMemoryStore
// holding the program's initial facts (p.e.base), the request atoms (intent,
// eval_time, caller, caller_permission) and the pre-converted client atoms, plus a fresh temporal
// store for the temporal predicates, as Evaluate routes them. It is the
// floor BenchmarkKernelEvaluate is measured against.
func BenchmarkRawEngine(b *testing.B) {
	p := mustLoad(b, browserRules)
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("facts=%d", n), func(b *testing.B) {
			plain := []ast.Atom{
				ast.NewAtom("intent", ast.String("diagnose_error")),
				ast.NewAtom("eval_time", ast.Time(testEvalTime.UnixNano())),
				ast.NewAtom("caller", ast.String("anonymous")),
				ast.NewAtom("caller_permission", ast.String("*")),
			}
			var timed []ast.Atom
			for _, f := range benchFacts(n) {
				a, err := factcodec.Atom(f)
				if err != nil {
					b.Fatal(err)
				}
				if p.e.Temporal[f.Pred] {
					timed = append(timed, a)
				} else {
					plain = append(plain, a)
				}
			}
			evalRaw := func() factstore.SimpleInMemoryStore {
				store := factstore.NewSimpleInMemoryStore()
				store.Merge(p.e.Server)
				for _, a := range plain {
					store.Add(a)
				}
				ts := factstore.NewTemporalStore()
				for _, t := range p.e.TimedBase {
					if _, err := ts.Add(t.Atom, t.Interval); err != nil {
						b.Fatal(err)
					}
				}
				for _, a := range timed {
					if _, err := ts.AddEternal(a); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := engine.EvalStratifiedProgramWithStats(p.e.Info, p.e.Strata, p.e.PredToStratum, store,
					engine.WithEvaluationTime(testEvalTime), engine.WithTemporalStore(ts), engine.WithCreatedFactLimit(benchLimit)); err != nil {
					b.Fatal(err)
				}
				return store
			}
			// Both benchmarks must do the same work.
			res, err := p.Evaluate(context.Background(), Request{Intent: "diagnose_error", Facts: benchFacts(n), EvalTime: testEvalTime, Caller: "anonymous", Permissions: anyone, MaxFactsCreated: benchLimit})
			if err != nil {
				b.Fatal(err)
			}
			if got := len(eval.Facts(evalRaw(), "final_selected", 3)); got != len(res.Tools) || got == 0 {
				b.Fatalf("raw engine selected %d tools, kernel %d", got, len(res.Tools))
			}
			b.ReportAllocs()
			done := cpuPerOp(b)
			for b.Loop() {
				evalRaw()
			}
			done()
		})
	}
}
