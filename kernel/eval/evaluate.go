package eval

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/engine"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"codeberg.org/TauCeti/mangle-go/unionfind"
	"github.com/manglecp/manglecp/kernel/factcodec"
	"github.com/manglecp/manglecp/protocol"
)

// Request is one evaluation. Facts must already be validated and
// normalized by protocol.ValidateFacts.
type Request struct {
	Intent   string
	Params   map[string]any
	Facts    []protocol.Fact
	EvalTime time.Time
	// MaxFactsCreated is the created-facts budget (> 0). The engine's limit
	// also caps intermediate join width, which keeps abort latency low.
	MaxFactsCreated int64
	// MaxWork is the work budget in work units, counted by the store: one
	// per fact a lookup looks at, 100 per fact it returns for a join (about
	// 30-60 ns of CPU each on the development machine, whatever the join).
	// Unlike MaxFactsCreated it bounds joins that scan much and derive
	// little, so it bounds the CPU one evaluation can spend. Evaluation and
	// the reading of its result (coverage and proofs included) get the
	// budget each. 0 means no budget.
	MaxWork int64
	// MaxIntervalsPerAtom bounds the temporal store (> 0; 0 means the
	// engine default of 1000).
	MaxIntervalsPerAtom int64
	// Explain asks for proof hints; Coverage for rule coverage. Neither
	// costs anything when false.
	Explain, Coverage bool
	// External holds the materialized facts of external predicates; they
	// enter the store with server trust.
	External []protocol.Fact
	// ExternalLater, when not nil, is called once the client facts are in
	// the store, for more external facts: the host computes them while the
	// kernel loads the request. An error it returns ends the evaluation and
	// is returned as it is.
	ExternalLater func() ([]protocol.Fact, error)
	// Caller and Permissions identify who asked (caller/1,
	// caller_permission/1).
	Caller      string
	Permissions []string
}

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
	// IntentDenied is true when policy derived intent_denied for the
	// request's intent. Tools is then empty.
	IntentDenied bool
}

// Run is the final state of an evaluation that asked for rule
// coverage or proofs, which the explain stage reads.
type Run struct {
	Req     Request
	Store   *Store
	Ts      *temporalStore
	Matcher Matcher
	// Firing marks the rules whose body has a solution in the final store.
	Firing []bool
	// Clients maps each client fact's hash to its first index (Explain).
	Clients map[uint64]int
}

// Tool is one final_selected tool with every attribute the rules derived.
type Tool struct {
	Name         string
	Score        int64
	Phase        string
	Description  string
	Summary      string
	Action       string
	Instructions string
	Params       []Param
	// Pairs are the combinations of two parameters' values that go
	// together (tool_param_pair), sorted.
	Pairs                []ParamPair `json:",omitempty"`
	SideEffects          []string
	RequiresConfirmation bool
	Reversible           bool
	Idempotent           bool
	NextIntents          []NextIntent
	Evidence             []string
	// Skills are the ids of the skills rules proved necessary, sorted.
	Skills []string
	// Resources are the context resources, by descending priority.
	Resources []Resource
	// ValidFrom and ValidUntil are the validity window the rules derived
	// (tool_valid_from, tool_valid_until); nil when unbounded.
	ValidFrom, ValidUntil *time.Time
}

// Param is one input parameter of a tool.
type Param struct {
	Name        string
	Type        string
	Description string
	Required    bool
	Enum        []any
	Default     any
}

// ParamPair says that Param = Value goes with Other = OtherValue
// (tool_param_pair): arguments giving both parameters must be one of the
// tool's pairs for them.
type ParamPair struct {
	Param      string
	Value      any
	Other      string
	OtherValue any
}

// Resource is a context resource of a tool.
type Resource struct {
	URI       string
	Relevance string
	Priority  int64
}

// NextIntent is an intent to suggest after the tool ran.
type NextIntent struct {
	Name        string
	Description string
}

// Dropped is a candidate a phase removed.
type Dropped struct {
	Tool  string
	Phase string
}

// Error is an evaluation failure: Public is what a client may see, Cause is
// the internal reason for the server log. errors.As finds Public through
// Unwrap, so the protocol code survives wrapping.
type Error struct {
	Public *protocol.Error
	Cause  error
}

// Error includes the internal cause; never send it to a client.
func (e *Error) Error() string {
	if e.Cause == nil {
		return e.Public.Error()
	}
	return e.Public.Error() + ": " + e.Cause.Error()
}

// Unwrap returns the public protocol error.
func (e *Error) Unwrap() error { return e.Public }

// Evaluate runs the program on a fresh store holding the cached server
// facts, the request predicates and the request's facts. ctx bounds the
// evaluation: when it ends the engine is stopped at its next store access
// and evaluation_timeout (deadline) or cancelled is returned. Exceeding
// MaxFactsCreated returns derivation_limit_exceeded with a budget. Any
// other failure is evaluation_failed; the cause never reaches the client.
// explain, when not nil, is called with the final state (under the same
// stop flag and work budget as reading the result) unless the intent was
// denied.
func (p *Program) Evaluate(ctx context.Context, req Request, explain func(*Run, *Result)) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, contextError(err, req)
	}
	r, in, err := p.prepare(req)
	if err != nil {
		return nil, err
	}
	store, own := r.store, r.store.own
	inputCount := own.EstimateFactCount()
	release := context.AfterFunc(ctx, func() { store.stop.Store(true) })
	defer release()
	if err := guard(func() error { return p.run(r, req) }); err != nil {
		return nil, p.failure(ctx, err, req, store, int64(inputCount))
	}
	res := &Result{PhasesCompleted: p.phases}
	res.FactsEvaluated = int64(p.baseCount + len(p.TimedBase) + inputCount + in.temporal)
	res.FactsDerived = countDerived(own) - int64(inputCount) + p.staticDerived
	res.Work = store.work
	// Reading the result, rule coverage and proofs search the final store
	// much as the rules did (a rule that never fired is searched in full),
	// so the stop flag and a work budget of the same size bound them too.
	// A budget of its own keeps the evaluation's count deterministic: these
	// searches stop at the first solution, found in map order.
	store.work = 0
	if err := guard(func() error { p.collect(res, store, r.ts, req, in.clients, r.fired, explain); return nil }); err != nil {
		return nil, p.failure(ctx, err, req, store, int64(inputCount))
	}
	return res, nil
}

// loaded is what prepare counted of the request's facts.
type loaded struct {
	temporal int            // facts that went to the temporal store
	clients  map[uint64]int // with Explain: each client fact's first index, by hash
}

// Prepare builds a request's stores (the request predicates, the client
// and external facts over the server facts) and its runner.
func (p *Program) prepare(req Request) (*runner, loaded, error) {
	own := newIndexedStore()
	own.Add(ast.NewAtom("intent", ast.String(req.Intent)))
	own.Add(ast.NewAtom("eval_time", ast.Time(req.EvalTime.UnixNano())))
	own.Add(ast.NewAtom("caller", ast.String(req.Caller)))
	for _, perm := range req.Permissions {
		own.Add(ast.NewAtom("caller_permission", ast.String(perm)))
	}
	for _, k := range slices.Sorted(maps.Keys(req.Params)) {
		if c, err := factcodec.Constant(req.Params[k]); err == nil {
			own.Add(ast.NewAtom("intent_param", ast.String(k), c))
		}
	}
	store := &Store{base: p.base, own: own, stop: new(atomic.Bool), budget: req.MaxWork}
	limit := int(req.MaxIntervalsPerAtom)
	if limit <= 0 {
		limit = factstore.DefaultMaxIntervalsPerAtom
	}
	ts := newTemporalStore(limit, store)
	for _, b := range p.TimedBase {
		if _, err := ts.load(b.Atom, b.Interval); err != nil {
			return nil, loaded{}, intervalError(err, req, b.Atom.Predicate.Symbol)
		}
	}
	var in loaded
	if req.Explain {
		in.clients = make(map[uint64]int, len(req.Facts))
	}
	n := 0
	for _, f := range req.Facts {
		n += len(f.Args)
	}
	slab := make([]ast.BaseTerm, n) // every client fact's arguments
	var recent factcodec.Recent     // repeated values share their constant
	for i, f := range req.Facts {
		args := slab[:len(f.Args):len(f.Args)]
		slab = slab[len(f.Args):]
		a, err := factcodec.AtomRecent(f, args, &recent)
		if err != nil {
			return nil, loaded{}, &Error{Public: protocol.Errorf(protocol.CodeInvalidFacts, "fact %d cannot be evaluated: %v", i, err), Cause: err}
		}
		if in.clients != nil {
			if _, dup := in.clients[a.Hash()]; !dup {
				in.clients[a.Hash()] = i
			}
		}
		if !p.Temporal[f.Pred] {
			own.Add(a)
			continue
		}
		iv, timed, err := factcodec.Interval(f.T, req.EvalTime)
		if err == nil {
			if timed {
				_, err = ts.load(a, iv)
			} else {
				_, err = ts.load(a, ast.EternalInterval())
			}
		}
		if err != nil {
			return nil, loaded{}, intervalError(err, req, f.Pred)
		}
		in.temporal++
	}
	external := req.External
	if req.ExternalLater != nil {
		more, err := req.ExternalLater()
		if err != nil {
			return nil, loaded{}, err
		}
		external = append(external[:len(external):len(external)], more...)
	}
	for _, f := range external {
		arity, ok := p.External[f.Pred]
		if !ok || arity != len(f.Args) {
			return nil, loaded{}, &Error{Public: protocol.Errorf(protocol.CodeEvaluationFailed, "evaluation failed; the server log has the details"),
				Cause: fmt.Errorf("external fact %s/%d does not match a declared external predicate", f.Pred, len(f.Args))}
		}
		a, err := factcodec.Atom(f)
		if err != nil {
			return nil, loaded{}, &Error{Public: protocol.Errorf(protocol.CodeEvaluationFailed, "evaluation failed; the server log has the details"), Cause: err}
		}
		own.Add(a)
	}
	r := &runner{p: p, plan: p.PlanFor(req.Intent, req.Explain || req.Coverage), store: store, ts: ts, evalTime: req.EvalTime, fired: make([]bool, len(p.Info.Rules)),
		te: engine.NewTemporalEvaluator(ts, req.EvalTime), empty: unionfind.New()}
	return r, in, nil
}

// collect fills res from the final store: the tools and rules fired; then
// explain, when not nil, reads the final state (rule coverage, proofs).
func (p *Program) collect(res *Result, store *Store, ts *temporalStore, req Request, clients map[uint64]int, fired []bool, explain func(*Run, *Result)) {
	if store.Contains(ast.NewAtom("intent_denied", ast.String(req.Intent))) {
		res.IntentDenied = true
		return
	}
	res.Tools, res.Dropped = p.readResult(store)
	m := p.newMatcher(store, ts, req.EvalTime)
	clientPreds := map[string]bool{}
	for _, f := range req.Facts {
		clientPreds[f.Pred] = true
	}
	firing := p.firedRules(store, m, clientPreds, fired)
	res.RulesFired = rulesFired(firing)
	if explain != nil {
		explain(&Run{Req: req, Store: store, Ts: ts, Matcher: m, Firing: firing, Clients: clients}, res)
	}
}

// failure maps an evaluation error to the registry: the context's end,
// an exhausted work budget, interval or created-facts limit, or (anything
// else) evaluation_failed.
func (p *Program) failure(ctx context.Context, evalErr error, req Request, store *Store, inputCount int64) error {
	var aborted abortError
	if errors.As(evalErr, &aborted) {
		return contextError(ctx.Err(), req)
	}
	if errors.Is(evalErr, errBudget) {
		return workError(evalErr, req, store.work)
	}
	if errors.Is(evalErr, factstore.ErrIntervalLimitExceeded) {
		return intervalError(evalErr, req, "")
	}
	if strings.Contains(evalErr.Error(), "fact size limit reached") {
		// The static strata's facts count as created (static.go).
		consumed := max(p.staticCreated, req.MaxFactsCreated+1)
		if limit := req.MaxFactsCreated - p.staticCreated; limit > 0 {
			consumed = p.staticCreated + consumedFromGasError(evalErr.Error(), int64(p.baseTotal)+inputCount, limit, int64(store.own.EstimateFactCount())-inputCount)
		}
		return budgetError(evalErr, fmt.Sprintf("evaluation would derive more than %d facts (max_facts_created)", req.MaxFactsCreated),
			&protocol.Budget{Limit: req.MaxFactsCreated, Consumed: consumed, Unit: "derived_facts"},
			"Reduce the number of facts in the request, or increase max_facts_created in constraints (up to limits.max_derived_facts).")
	}
	return &Error{Public: protocol.Errorf(protocol.CodeEvaluationFailed, "evaluation failed; the server log has the details"), Cause: evalErr}
}

type abortError struct{}

func (abortError) Error() string { return "evaluation aborted" }

// Guard runs fn, converting an abort, an exhausted work budget or any
// engine panic into an error in this goroutine.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			switch r.(type) {
			case abortSignal:
				err = abortError{}
			case budgetSignal:
				err = errBudget
			default:
				err = fmt.Errorf("engine panic: %v\n%s", r, debug.Stack())
			}
		}
	}()
	return fn()
}

// Run evaluates the program's plan (plan.go, exec.go).
func (p *Program) run(r *runner, req Request) error {
	if req.MaxFactsCreated > 0 {
		// The static strata's facts were derived at load but are charged
		// to the budget as before (static.go).
		limit := req.MaxFactsCreated - p.staticCreated
		if limit <= 0 {
			return fmt.Errorf("fact size limit reached %d > %d", p.staticCreated, req.MaxFactsCreated)
		}
		r.createdLimit = int(limit)
		r.totalLimit = r.store.EstimateFactCount() + r.createdLimit
	}
	return r.run()
}

// errBudget is the evaluation's error when it exceeded its work budget.
var errBudget = errors.New("work budget (MaxWork) exhausted")

// workError reports an exhausted work budget: derivation_limit_exceeded,
// the registry's code for an evaluation that would exceed its budget, with
// the budget in facts scanned.
func workError(err error, req Request, consumed int64) error {
	return budgetError(err, fmt.Sprintf("evaluation would spend more than %d work units (the server's x-max_evaluation_work): the rules join the request's facts with each other", req.MaxWork),
		&protocol.Budget{Limit: req.MaxWork, Consumed: consumed, Unit: "work_units"},
		"Send fewer facts: the work of joining them grows with the product of their counts.")
}

// budgetError is derivation_limit_exceeded with its budget and what to
// do about it; no partial results are available.
func budgetError(cause error, message string, budget *protocol.Budget, suggestion string) error {
	f := false
	return &Error{
		Public: protocol.Errorf(protocol.CodeDerivationLimitExceeded, "%s", message).
			WithDetails(&protocol.ErrorDetails{Budget: budget, PartialResultsAvailable: &f, Suggestion: suggestion}),
		Cause: cause,
	}
}

func contextError(err error, req Request) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Public: protocol.Errorf(protocol.CodeEvaluationTimeout, "evaluation exceeded max_compute_ms and was stopped").
			WithDetails(&protocol.ErrorDetails{Suggestion: "Reduce the number of facts in the request, or increase max_compute_ms in constraints (up to limits.max_compute_ms)."}), Cause: err}
	}
	return &Error{Public: protocol.Errorf(protocol.CodeCancelled, "the request was cancelled"), Cause: err}
}

// intervalError reports an exhausted max_intervals_per_atom budget.
func intervalError(err error, req Request, pred string) error {
	if !errors.Is(err, factstore.ErrIntervalLimitExceeded) {
		return &Error{Public: protocol.Errorf(protocol.CodeInvalidFacts, "a temporal fact of %s cannot be stored: its interval is invalid", pred), Cause: err}
	}
	limit := req.MaxIntervalsPerAtom
	if limit <= 0 {
		limit = factstore.DefaultMaxIntervalsPerAtom
	}
	where := "evaluation"
	if pred != "" {
		where = "the facts of " + pred
	}
	f := false
	return &Error{
		Public: protocol.Errorf(protocol.CodeIntervalLimitExceeded, "%s would hold more than %d intervals for one atom (max_intervals_per_atom)", where, limit).
			WithDetails(&protocol.ErrorDetails{
				Budget:                  &protocol.Budget{Limit: limit, Consumed: limit + 1, Unit: "intervals_per_atom"},
				PartialResultsAvailable: &f,
				Suggestion:              "Send fewer intervals for the same fact, or increase max_intervals_per_atom in constraints (up to limits.max_intervals_per_atom).",
			}),
		Cause: err,
	}
}

var gasNumbers = regexp.MustCompile(`(\d+) > (\d+)$`)

// consumedFromGasError reports how many facts the evaluation tried to
// create when the engine's limit tripped. The engine's messages end in
// "N > M": M is either the total-store limit (initial + budget) or the
// budget itself (a round's new facts or a join's width).
func consumedFromGasError(msg string, initial, limit, delta int64) int64 {
	m := gasNumbers.FindStringSubmatch(strings.TrimSpace(msg))
	consumed := delta
	if m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		bound, _ := strconv.ParseInt(m[2], 10, 64)
		if bound == initial+limit {
			n -= initial
		}
		consumed = max(consumed, n)
	}
	return max(consumed, limit+1)
}

func countDerived(s *indexedStore) int64 {
	var n int64
	for p, r := range s.rels {
		if !p.IsInternalPredicate() {
			n += int64(len(r.facts))
		}
	}
	return n
}
