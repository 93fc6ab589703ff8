package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/builtin"
	"codeberg.org/TauCeti/mangle-go/engine"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"codeberg.org/TauCeti/mangle-go/unionfind"
	"github.com/manglecp/manglecp/kernel/analyse"
	"github.com/manglecp/manglecp/kernel/eval"
)

// Derivation explains why a tool was selected (Spec 09 section 5). It holds
// predicate names and facts, never rule text.
type Derivation struct {
	Tool       string
	SelectedBy string
	Score      int64
	// SupportingFacts are indexes into Request.Facts of the client facts in
	// the derivation, sorted.
	SupportingFacts []int
	// RuleChain lists the derived predicates of the derivation, top-down,
	// each once.
	RuleChain []string
	Tree      *ProofNode
}

// ProofNode is one fact of a derivation tree. Type is "server" (a server
// fact), "session" (a client fact), "derived", or "absent" (a negated
// premise that held because the fact does not exist). Policy predicates are
// shown without their children: their rules are not disclosed.
type ProofNode struct {
	Fact     string
	Type     string
	Children []*ProofNode
}

// Exclusion is a candidate a phase removed.
type Exclusion struct {
	Candidate  string
	ExcludedBy string
	Reason     string
}

// UnmatchedFact is a client fact no rule reads.
type UnmatchedFact struct {
	Pred   string
	Reason string
}

// Explanation is the proof hints of one evaluation.
type Explanation struct {
	Derivations []Derivation
	Excluded    []Exclusion
	Unmatched   []UnmatchedFact
}

// maxProofDepth bounds derivation trees; deeper subtrees are cut.
const maxProofDepth = 24

// explainer re-matches rules against the final store to find a derivation
// of each goal (post-hoc provenance, MANGLE_NOTES section 8). Candidate
// solutions are sorted, so the same inputs give the same proofs.
type explainer struct {
	p       *eval.Program
	qc      engine.QueryContext
	te      *engine.TemporalEvaluator
	ts      factstore.TemporalFactStore
	store   *eval.Store
	clients map[uint64]int // atom hash -> index of the client fact
	rules   map[ast.PredicateSym][]ast.Clause
	memo    map[uint64]*ProofNode
	onStack map[uint64]bool
	nodes   int
	client  map[*ProofNode]int // session leaves -> index of the client fact
}

// Proofs explains the tools and dropped candidates of run: a derivation
// of each selected tool, why each candidate was dropped, and the client
// facts no rule reads.
func Proofs(p *eval.Program, run *eval.Run, tools []eval.Tool, dropped []eval.Dropped) *Explanation {
	preds := make([]string, len(run.Req.Facts))
	for i, f := range run.Req.Facts {
		preds[i] = f.Pred
	}
	return newExplainer(p, run.Store, run.Ts, run.Req.EvalTime, run.Clients).explanation(tools, dropped, preds)
}

func newExplainer(p *eval.Program, s *eval.Store, ts factstore.TemporalFactStore, evalTime time.Time, clients map[uint64]int) *explainer {
	rules := map[ast.PredicateSym][]ast.Clause{}
	for _, r := range p.Info.Rules {
		rules[r.Head.Predicate] = append(rules[r.Head.Predicate], r.ReplaceWildcards())
	}
	return &explainer{
		p: p, store: s, clients: clients, rules: rules,
		qc:      engine.QueryContext{PredToDecl: p.Info.Decls, Store: s},
		te:      engine.NewTemporalEvaluator(ts, evalTime),
		ts:      ts,
		memo:    map[uint64]*ProofNode{},
		onStack: map[uint64]bool{},
		client:  map[*ProofNode]int{},
	}
}

// explain builds the proof tree of a ground atom.
func (x *explainer) explain(goal ast.Atom, depth int) *ProofNode {
	h := goal.Hash()
	if n, ok := x.memo[h]; ok {
		return n
	}
	node := &ProofNode{Fact: goal.String()}
	switch {
	case x.isClient(goal):
		node.Type = "session"
		x.client[node] = x.clients[h]
	case x.p.Server.Contains(goal) || analyse.RequestPredicates[goal.Predicate.Symbol] || x.isExternal(goal):
		node.Type = "server"
	default:
		node.Type = "derived"
		if x.p.Policy[goal.Predicate.Symbol] || depth >= maxProofDepth || x.onStack[h] {
			break
		}
		x.onStack[h] = true
		node.Children = x.proveBody(goal, depth)
		delete(x.onStack, h)
	}
	x.memo[h] = node
	return node
}

func (x *explainer) isExternal(a ast.Atom) bool {
	_, ok := x.p.External[a.Predicate.Symbol]
	return ok
}

func (x *explainer) isClient(a ast.Atom) bool {
	_, ok := x.clients[a.Hash()]
	return ok
}

// proveBody finds the first rule and body solution (in sorted order) that
// derive goal and explains its positive premises.
func (x *explainer) proveBody(goal ast.Atom, depth int) []*ProofNode {
	for _, r := range x.rules[goal.Predicate] {
		subst, ok := unifyHead(r, goal)
		if !ok {
			continue
		}
		if sol, ok := x.solve(r.Premises, subst); ok {
			var children []*ProofNode
			for _, prem := range r.Premises {
				lit, temporal := analyse.PlainPremise(prem)
				switch a := lit.(type) {
				case ast.Atom:
					if _, isBuiltin := builtin.Predicates[a.Predicate]; isBuiltin {
						continue
					}
					ground, ok := substAtom(a, sol)
					if !ok {
						// Variables the premise does not bind (wildcards): name
						// the smallest stored fact that matches.
						if ground, ok = x.matching(a, sol, temporal); !ok {
							continue
						}
					}
					children = append(children, x.explain(ground, depth+1))
				case ast.NegAtom:
					if ground, ok := substAtom(a.Atom, sol); ok {
						children = append(children, &ProofNode{Fact: "!" + ground.String(), Type: "absent"})
					}
				}
			}
			return children
		}
	}
	return nil
}

// unifyHead binds the head variables of r to goal's constants. Variables a
// transform defines (aggregates, lets) are left unbound.
func unifyHead(r ast.Clause, goal ast.Atom) (unionfind.UnionFind, bool) {
	defined := map[ast.Variable]bool{}
	for t := r.Transform; t != nil; t = t.Next {
		for _, st := range t.Statements {
			if st.Var != nil {
				defined[*st.Var] = true
			}
		}
	}
	subst := unionfind.New()
	for i, arg := range r.Head.Args {
		if v, ok := arg.(ast.Variable); ok && defined[v] {
			continue
		}
		next, err := unionfind.UnifyTermsExtend([]ast.BaseTerm{arg}, []ast.BaseTerm{goal.Args[i]}, subst)
		if err != nil {
			return subst, false
		}
		subst = next
	}
	return subst, true
}

// solve finds the first body solution in a canonical order.
func (x *explainer) solve(premises []ast.Term, subst unionfind.UnionFind) (unionfind.UnionFind, bool) {
	if len(premises) == 0 {
		return subst, true
	}
	x.nodes++
	if x.nodes > 200000 {
		return subst, false // a pathological body: give up rather than burn CPU
	}
	var sols []unionfind.UnionFind
	var err error
	if tl, ok := premises[0].(ast.TemporalLiteral); ok {
		sols, err = x.te.EvalTemporalLiteral(tl, subst)
	} else {
		sols, err = x.qc.EvalPremise(premises[0], subst)
	}
	if err != nil {
		return subst, false
	}
	if len(sols) > 1 {
		keys := make([]string, len(sols))
		for i, s := range sols {
			keys[i] = substKey(premises[0], s)
		}
		sort.SliceStable(sols, func(i, j int) bool { return keys[i] < keys[j] })
	}
	for _, s := range sols {
		if out, ok := x.solve(premises[1:], s); ok {
			return out, true
		}
	}
	return subst, false
}

func substKey(t ast.Term, s unionfind.UnionFind) string {
	lit, _ := analyse.PlainPremise(t)
	if a, ok := lit.(ast.Atom); ok {
		if g, ok := substAtom(a, s); ok {
			return g.String()
		}
	}
	return fmt.Sprint(s)
}

// substAtom applies a solution to an atom; ok is false when it stays open.
func substAtom(a ast.Atom, s unionfind.UnionFind) (ast.Atom, bool) {
	args := make([]ast.BaseTerm, len(a.Args))
	for i, t := range a.Args {
		switch v := t.(type) {
		case ast.Variable:
			c, ok := s.Get(v).(ast.Constant)
			if !ok {
				return a, false
			}
			args[i] = c
		default:
			args[i] = t
		}
	}
	return ast.Atom{Predicate: a.Predicate, Args: args}, true
}

// matching finds the smallest (by text) stored fact matching a partly
// bound atom, in the temporal store for temporal premises.
func (x *explainer) matching(a ast.Atom, sol unionfind.UnionFind, temporal bool) (ast.Atom, bool) {
	args := make([]ast.BaseTerm, len(a.Args))
	for i, t := range a.Args {
		args[i] = t
		if v, ok := t.(ast.Variable); ok {
			if c, ok := sol.Get(v).(ast.Constant); ok {
				args[i] = c
			}
		}
	}
	q := ast.Atom{Predicate: a.Predicate, Args: args}
	var best ast.Atom
	found := false
	consider := func(f ast.Atom) {
		if !found || f.String() < best.String() {
			best, found = f, true
		}
	}
	if temporal {
		_ = x.ts.GetAllFacts(q, func(tf factstore.TemporalFact) error { consider(tf.Atom); return nil })
	} else {
		_ = x.store.GetFacts(q, func(f ast.Atom) error { consider(f); return nil })
	}
	return best, found
}

// chain lists the derived predicates of a tree top-down, each once.
func chain(n *ProofNode, seen map[string]bool, out *[]string) {
	if n.Type == "derived" {
		pred := n.Fact
		if i := strings.IndexByte(pred, '('); i >= 0 {
			pred = pred[:i]
		}
		if !seen[pred] {
			seen[pred] = true
			*out = append(*out, pred)
		}
	}
	for _, c := range n.Children {
		chain(c, seen, out)
	}
}

func support(n *ProofNode, x *explainer, seen map[int]bool) {
	if i, ok := x.client[n]; ok {
		seen[i] = true
	}
	for _, c := range n.Children {
		support(c, x, seen)
	}
}

// explanation builds the proof hints of an evaluation.
func (x *explainer) explanation(tools []eval.Tool, dropped []eval.Dropped, facts []string) *Explanation {
	ex := &Explanation{}
	for _, t := range tools {
		goal := ast.NewAtom("final_selected", ast.String(t.Name), ast.Number(t.Score), ast.String(t.Phase))
		tree := x.explain(goal, 0)
		d := Derivation{Tool: t.Name, SelectedBy: t.Phase, Score: t.Score, Tree: tree}
		chain(tree, map[string]bool{}, &d.RuleChain)
		seen := map[int]bool{}
		support(tree, x, seen)
		for i := range seen {
			d.SupportingFacts = append(d.SupportingFacts, i)
		}
		sort.Ints(d.SupportingFacts)
		ex.Derivations = append(ex.Derivations, d)
	}
	reasons := map[string]string{
		"exclusion":  "prohibited by server policy in this context",
		"conflict":   "a conflicting tool with a higher score (or the same score and an earlier name) was kept",
		"dependency": "a capability it depends on is excluded or lost a conflict",
	}
	for _, d := range dropped {
		ex.Excluded = append(ex.Excluded, Exclusion{Candidate: d.Tool, ExcludedBy: d.Phase, Reason: reasons[d.Phase]})
	}
	read := x.p.BodyPredicates()
	seenPred := map[string]bool{}
	for _, pred := range facts {
		if !read[pred] && !seenPred[pred] {
			seenPred[pred] = true
			ex.Unmatched = append(ex.Unmatched, UnmatchedFact{Pred: pred, Reason: "No rules reference this predicate"})
		}
	}
	return ex
}
