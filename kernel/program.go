package kernel

import (
	"fmt"
	"io/fs"
	"sort"

	"codeberg.org/TauCeti/mangle-go/analysis"
	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/factstore"
	"github.com/manglecp/manglecp/kernel/factcodec"
	"github.com/manglecp/manglecp/kernel/rules"
	"github.com/manglecp/manglecp/protocol"
)

// ProtocolLayers returns the kernel's own layers: schema (highest trust)
// and pipeline (lowest). [Load] places domain layers between them.
func ProtocolLayers() (schema, pipeline Layer) {
	s, _ := fs.Sub(rules.FS, "schema")
	p, _ := fs.Sub(rules.FS, "pipeline")
	return Layer{Name: "schema", FS: s, Prefix: "kernel/schema"}, Layer{Name: "pipeline", FS: p, Prefix: "kernel/pipeline"}
}

// Program is a loaded, analysed and stratified rule program with its cached
// server facts and manifest declarations. It is immutable and safe for
// concurrent evaluations.
type Program struct {
	e *Evaluator
}

// Analysis is a rule program read, checked and analysed: the engine's
// program info and strata, the server facts and the manifest declarations.
type Analysis struct {
	info          *analysis.ProgramInfo // the rules, without the server facts
	strata        []analysis.Nodeset
	predToStratum map[ast.PredicateSym]int
	facts         []ast.Atom      // server facts without a validity interval
	timedBase     []timedAtom     // server facts with a validity interval
	temporal      map[string]bool // profile predicates whose facts go to the temporal store
	ruleBodies    [][]ast.Term    // premises with wildcards replaced, per rule
	soleRule      []bool          // per rule: the only rule of its head predicate

	policy   map[string]bool    // predicates the policy layer defines; proofs do not open them
	external map[string]int     // external predicate -> arity
	declLoc  map[string]located // where each profile predicate is declared
	skills   map[string]protocol.Skill
	inline   map[string]bool
	intents  []protocol.IntentDecl
	profile  protocol.FactsProfile
	tools    []string
	actions  []ActionRef
	// actionParams are the parameters the rules declare with constants
	// for the tools of each action (ActionParams).
	actionParams map[string][]DeclaredParam
	ruleCount    int
	// warnings are the problems that load but deserve the author's look
	// (Warnings).
	warnings []*LoadError
}

// Plan is how requests evaluate an analysed program: the strata no
// request can change are left out (evaluated at load), the others are
// compiled into steps, and each declared intent gets the steps its answer
// can depend on.
type Plan struct {
	*Analysis
	// baseFacts are the server facts with what the static strata derived.
	baseFacts factstore.ReadOnlyFactStore
	// dynStrata are the strata each request runs (through steps).
	dynStrata []analysis.Nodeset
	// staticRule marks the rules evaluated at load.
	staticRule []bool
	// steps is how a request evaluates the dynamic strata (plan.go);
	// compiledRule marks the rules it evaluates itself, whose firing the
	// evaluation records.
	steps        []step
	compiledRule []bool
	// intentPlans are the plans of the declared intents: the steps of
	// steps with only the rules each intent's answer can depend on
	// (prune.go).
	intentPlans map[string][]step
	// engineStrata are the strata the engine evaluates, and why.
	engineStrata []EngineStratum
}

// Evaluator is a planned program with its server facts in an indexed
// store: what evaluates requests.
type Evaluator struct {
	*Plan
	base      *indexedStore // server facts, read-only (frozen) after Load
	baseCount int           // server facts of the rules (not counting what precomputeStatic derived)
	// server is the server facts alone (proofs stop at them); base adds
	// what the static strata derive (static.go). baseTotal counts base.
	server    *indexedStore
	baseTotal int
	// staticFired marks the static rules that fired; staticDerived and
	// staticCreated count the facts the static strata derived (without
	// and with the engine's internal predicates).
	staticFired                  []bool
	staticDerived, staticCreated int64
	baseHas                      map[ast.PredicateSym]bool // predicates with server facts
	phases                       int
}

// argInteger is the decl_arg type of a whole-number argument: the same
// word as tool_param's JSON Schema type. The manifest advertises it as
// "number", the facts profile's name for it.
const argInteger = "integer"

// Warnings returns what loads but deserves the author's look, each with
// its file and line: an old spelling (decl_arg's "number", now "integer").
// The server logs them at load; `manglecp check` prints them.
func (p *Analysis) Warnings() []*LoadError { return append([]*LoadError(nil), p.warnings...) }

// spellingWarnings reports the decl_arg facts typed "number": the old
// spelling of "integer" (one word for whole numbers in decl_arg and
// tool_param alike), still accepted.
func spellingWarnings(files []*sourceFile) []*LoadError {
	var out []*LoadError
	authored(files, func(f *sourceFile, i int, c ast.Clause) {
		if c.Head.Predicate.Symbol != "decl_arg" || len(c.Head.Args) != 4 || len(c.Premises) > 0 {
			return
		}
		if t, ok := constString(c.Head.Args[3]); ok && t == protocol.ArgNumber {
			out = append(out, &LoadError{File: f.name, Line: f.clauseLine(i), Message: "warning: " +
				`decl_arg: "number" is the old spelling of "integer" (a fact's number argument is a 64-bit integer, as tool_param's "integer"); write "integer": the manifest still says "number"`})
		}
	})
	return out
}

// External declares a predicate whose facts the host computes per request
// from Go (an external predicate, Spec 04 section 3.2.8).
//
// Mangle v0.5.0 panics when an external predicate's inputs are variables
// bound by earlier premises (MANGLE_NOTES section 7), which is exactly how
// rules want to use them. So the kernel does not use the engine's callback
// API: the host materializes each external predicate's tuples before
// evaluation and the kernel adds them as server facts. Rules then join on
// them like on any other predicate, with inputs bound in any order.
type External struct {
	Name  string
	Arity int
}

// Load loads domain layers (policy, domain, ... from highest to lowest trust)
// between the kernel's schema and pipeline layers. Every problem is
// reported as [LoadErrors] naming file and line.
func Load(domain ...Layer) (*Program, error) { return LoadWithExternals(nil, domain...) }

// LoadWithExternals is [Load] for a domain with external predicates: rules
// may read them, no rule may define them, and [Request.External] carries
// their facts.
func LoadWithExternals(externals []External, domain ...Layer) (*Program, error) {
	schema, pipeline := ProtocolLayers()
	layers := append([]Layer{schema}, domain...)
	layers = append(layers, pipeline)
	files, err := readLayers(layers)
	if err != nil {
		return nil, err
	}
	a, err := analyseFiles(files, externals)
	if err != nil {
		return nil, err
	}
	e, err := newEvaluator(a, true)
	if err != nil {
		return nil, err
	}
	return &Program{e: e}, nil
}

// analyseFiles checks and analyses the parsed files of every layer and
// reads the manifest declarations.
func analyseFiles(files []*sourceFile, externals []External) (*Analysis, error) {
	if err := checkOwnership(files); err != nil {
		return nil, err
	}
	if err := checkTemporalRecursion(files); err != nil {
		return nil, err
	}
	if err := checkAggregations(files); err != nil {
		return nil, err
	}
	facts := collectFacts(files)
	if err := checkFailingPatterns(files, facts); err != nil {
		return nil, err
	}
	if err := checkRequiresCycles(facts["tool_requires"]); err != nil {
		return nil, err
	}
	if err := checkContract(files, externals); err != nil {
		return nil, err
	}
	p := &Analysis{policy: map[string]bool{}}
	for _, f := range files {
		if f.layer == "policy" {
			for _, c := range f.unit.Clauses {
				p.policy[c.Head.Predicate.Symbol] = true
			}
		}
	}
	if err := p.readDeclarations(files, facts); err != nil {
		return nil, err
	}
	p.actionParams = actionParams(files, facts["tool_action"])
	extra, err := p.clientDecls(files)
	if err != nil {
		return nil, err
	}
	if err := p.externalDecls(files, externals, extra); err != nil {
		return nil, err
	}
	info, strata, predToStratum, err := analyse(files, extra)
	if err != nil {
		return nil, err
	}
	p.info, p.strata, p.predToStratum = info, strata, predToStratum
	p.ruleCount = len(info.Rules)
	for i, a := range info.InitialFacts {
		if iv := info.InitialFactTimes[i]; iv != nil {
			p.timedBase = append(p.timedBase, timedAtom{a, *iv})
			continue
		}
		p.facts = append(p.facts, a)
	}
	perHead := map[ast.PredicateSym]int{}
	for _, r := range info.Rules {
		perHead[r.Head.Predicate]++
	}
	p.soleRule = make([]bool, len(info.Rules))
	p.ruleBodies = make([][]ast.Term, len(info.Rules))
	for i, r := range info.Rules {
		p.soleRule[i] = perHead[r.Head.Predicate] == 1
		p.ruleBodies[i] = r.ReplaceWildcards().Premises
	}
	shared := *info
	shared.InitialFacts, shared.InitialFactTimes = nil, nil
	p.info = &shared
	p.warnings = spellingWarnings(files)
	return p, nil
}

// newEvaluator puts the server facts of a into an indexed store, evaluates
// the static strata into it and plans the others (with compile false every
// stratum goes to the engine: the differential tests' reference).
func newEvaluator(a *Analysis, compile bool) (*Evaluator, error) {
	p := &Evaluator{Plan: &Plan{Analysis: a}, phases: 6}
	// Server facts go to a shared read-only store once; the engine must not
	// add them again per request.
	p.base = newIndexedStore()
	for _, f := range a.facts {
		p.base.Add(f)
	}
	for i, t := range p.tools {
		p.base.Add(ast.NewAtom("tool_rank", ast.String(t), ast.Number(int64(i))))
	}
	p.baseCount = p.base.EstimateFactCount()
	p.baseHas = map[ast.PredicateSym]bool{}
	for _, sym := range p.base.ListPredicates() {
		p.baseHas[sym] = true
	}
	for _, t := range p.timedBase {
		p.baseHas[t.atom.Predicate] = true
	}
	for sym := range p.external {
		p.baseHas[ast.PredicateSym{Symbol: sym, Arity: p.external[sym]}] = true
	}
	if err := p.precomputeStatic(); err != nil {
		return nil, err
	}
	p.baseFacts = p.base
	p.compilePlan(compile)
	p.planIntents()
	return p, nil
}

// collectFacts returns the body-less clauses of every file by predicate.
func collectFacts(files []*sourceFile) map[string][]located {
	out := map[string][]located{}
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			if len(c.Premises) == 0 && c.Transform == nil {
				out[c.Head.Predicate.Symbol] = append(out[c.Head.Predicate.Symbol], located{c.Head, f.name, f.clauseLine(i)})
			}
		}
	}
	return out
}

type timedAtom struct {
	atom     ast.Atom
	interval ast.Interval
}

type located struct {
	atom ast.Atom
	file string
	line int
}

func (l located) str(i int) (string, error) {
	if i >= len(l.atom.Args) {
		return "", l.errorf("needs at least %d arguments", i+1)
	}
	c, ok := l.atom.Args[i].(ast.Constant)
	if !ok || c.Type != ast.StringType {
		return "", l.errorf("argument %d must be a string", i)
	}
	s, _ := c.StringValue()
	return s, nil
}

func (l located) num(i int) (int64, error) {
	c, ok := l.atom.Args[i].(ast.Constant)
	if !ok || c.Type != ast.NumberType {
		return 0, l.errorf("argument %d must be an integer", i)
	}
	return c.NumberValue()
}

func (l located) errorf(format string, args ...any) error {
	return &LoadError{File: l.file, Line: l.line, Message: l.atom.Predicate.Symbol + ": " + fmt.Sprintf(format, args...)}
}

// Intents returns the intents the manifest advertises, sorted by name.
func (p *Analysis) Intents() []protocol.IntentDecl {
	out := make([]protocol.IntentDecl, len(p.intents))
	copy(out, p.intents)
	return out
}

// FactsProfile returns the facts profile (predicates sorted by name).
func (p *Analysis) FactsProfile() protocol.FactsProfile {
	fp := p.profile
	fp.Predicates = append([]protocol.PredicateSchema(nil), p.profile.Predicates...)
	fp.TimeFormats = append([]string(nil), p.profile.TimeFormats...)
	return fp
}

// Tools returns the names of the declared tools, sorted.
func (p *Analysis) Tools() []string { return append([]string(nil), p.tools...) }

// Skill returns a skill of the catalogue by id.
func (p *Analysis) Skill(id string) (protocol.Skill, bool) {
	s, ok := p.skills[id]
	if ok {
		s.Resources = append([]protocol.SkillResource(nil), s.Resources...)
	}
	return s, ok
}

// SkillInline reports whether the catalogue marks the skill for inline
// delivery.
func (p *Analysis) SkillInline(id string) bool { return p.inline[id] }

// readSkills reads the skill catalogue from the program's facts.
func (p *Analysis) readSkills(facts map[string][]located, fail func(error)) {
	p.skills, p.inline = map[string]protocol.Skill{}, map[string]bool{}
	for _, l := range facts["skill"] {
		id, err1 := l.str(0)
		name, err2 := l.str(1)
		desc, err3 := l.str(2)
		if err := firstErr(err1, err2, err3); err != nil {
			fail(err)
			continue
		}
		p.skills[id] = protocol.Skill{SkillID: id, Name: name, Description: desc, ContentType: "text/markdown"}
	}
	withSkill := func(pred string, fn func(id string, s *protocol.Skill, l located) error) {
		for _, l := range facts[pred] {
			id, err := l.str(0)
			if err != nil {
				fail(err)
				continue
			}
			s, ok := p.skills[id]
			if !ok {
				fail(l.errorf("skill %q is not declared (add skill/3)", id))
				continue
			}
			if err := fn(id, &s, l); err != nil {
				fail(err)
				continue
			}
			p.skills[id] = s
		}
	}
	withSkill("skill_content", func(_ string, s *protocol.Skill, l located) (err error) { s.Content, err = l.str(1); return })
	withSkill("skill_content_type", func(_ string, s *protocol.Skill, l located) (err error) { s.ContentType, err = l.str(1); return })
	withSkill("skill_resource", func(_ string, s *protocol.Skill, l located) error {
		uri, err1 := l.str(1)
		typ, err2 := l.str(2)
		desc, err3 := l.str(3)
		s.Resources = append(s.Resources, protocol.SkillResource{URI: uri, Type: typ, Description: desc})
		return firstErr(err1, err2, err3)
	})
	withSkill("skill_inline", func(id string, _ *protocol.Skill, _ located) error { p.inline[id] = true; return nil })
	for id, s := range p.skills {
		if s.Content == "" {
			fail(&LoadError{Message: fmt.Sprintf("skill %q has no skill_content", id)})
		}
		sort.Slice(s.Resources, func(i, j int) bool { return s.Resources[i].URI < s.Resources[j].URI })
	}
}

// ActionNames returns the action names that tool_action facts name, sorted.
func (p *Analysis) ActionNames() []string {
	out := make([]string, len(p.actions))
	for i, a := range p.actions {
		out[i] = a.Name
	}
	return out
}

// ActionRef is an action a tool_action fact names, with the first fact
// naming it: what a domain's Go program must register, and where the rules
// ask for it.
type ActionRef struct {
	Name string // the action
	Tool string // the tool of the first tool_action fact naming it
	File string // that fact's file, as known to the operator
	Line int    // its 1-based line, 0 when unknown
}

// ActionRefs returns the actions tool_action facts name, sorted by name,
// each with the first fact naming it.
func (p *Analysis) ActionRefs() []ActionRef { return append([]ActionRef(nil), p.actions...) }

// Actions reads the actions the tool_action facts of layers name, sorted by
// name, each with the first fact naming it. It only parses the files (a
// syntax error is reported as [LoadErrors]); it does not analyse the rules,
// so it works without knowing the domain's external predicates.
func Actions(layers ...Layer) ([]ActionRef, error) {
	files, err := readLayers(layers)
	if err != nil {
		return nil, err
	}
	return actionRefs(collectFacts(files)["tool_action"]), nil
}

// actionRefs lists the actions of tool_action facts, sorted by name, each
// at its first fact. Malformed facts are reported by readDeclarations.
func actionRefs(facts []located) []ActionRef {
	seen := map[string]bool{}
	var out []ActionRef
	for _, l := range facts {
		a, err := l.str(1)
		if err != nil || seen[a] {
			continue
		}
		seen[a] = true
		tool, _ := l.str(0)
		out = append(out, ActionRef{Name: a, Tool: tool, File: l.file, Line: l.line})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RuleCount is the number of rules (clauses with a body).
func (p *Analysis) RuleCount() int { return p.ruleCount }

// BaseFactCount is the number of cached server facts.
func (p *Evaluator) BaseFactCount() int { return p.baseCount }

// readDeclarations reads intents, the facts profile and the tool list from
// the program's facts and checks them.
func (p *Analysis) readDeclarations(files []*sourceFile, facts map[string][]located) error {
	var errs LoadErrors
	fail := func(err error) {
		errs = append(errs, asLoadErrors(err)...)
	}
	preds := map[string]*protocol.PredicateSchema{}
	predOrder := []string{}
	for _, l := range facts["decl_predicate"] {
		name, err1 := l.str(0)
		dir, err2 := l.str(1)
		desc, err3 := l.str(2)
		if err := firstErr(err1, err2, err3); err != nil {
			fail(err)
			continue
		}
		if dir != protocol.DirectionInput && dir != protocol.DirectionOutput && dir != protocol.DirectionBoth {
			fail(l.errorf("direction %q must be input, output or both", dir))
			continue
		}
		if _, dup := preds[name]; dup {
			fail(l.errorf("predicate %s declared twice", name))
			continue
		}
		preds[name] = &protocol.PredicateSchema{Predicate: name, Direction: dir, Description: desc}
		if p.declLoc == nil {
			p.declLoc = map[string]located{}
		}
		p.declLoc[name] = l
		predOrder = append(predOrder, name)
	}
	type arg struct{ name, typ string }
	args := map[string]map[int64]arg{}
	argLoc := map[string]located{}
	for _, l := range facts["decl_arg"] {
		pred, err1 := l.str(0)
		idx, err2 := l.num(1)
		name, err3 := l.str(2)
		typ, err4 := l.str(3)
		if err := firstErr(err1, err2, err3, err4); err != nil {
			fail(err)
			continue
		}
		if preds[pred] == nil {
			fail(l.errorf("argument of undeclared predicate %s (add decl_predicate)", pred))
			continue
		}
		switch typ {
		case argInteger:
			// The facts profile's wire name (Spec 03 section 8.1) for
			// the 64-bit integers a "number" argument holds.
			typ = protocol.ArgNumber
		case protocol.ArgString, protocol.ArgNumber, protocol.ArgBoolean, protocol.ArgAny:
			// "number" is the old spelling of integer: Warnings says so.
		default:
			fail(l.errorf("type %q must be string, integer, boolean or any%s", typ, didYouMean(typ, []string{"string", argInteger, "boolean", "any"})))
			continue
		}
		if args[pred] == nil {
			args[pred] = map[int64]arg{}
		}
		if _, dup := args[pred][idx]; dup {
			fail(l.errorf("argument %d of %s declared twice", idx, pred))
			continue
		}
		args[pred][idx] = arg{name, typ}
		argLoc[pred] = l
	}
	for name, s := range preds {
		as := args[name]
		s.Arity = len(as)
		for i := int64(0); i < int64(len(as)); i++ {
			a, ok := as[i]
			if !ok {
				fail(argLoc[name].errorf("arguments of %s must be numbered 0..%d without gaps", name, len(as)-1))
				break
			}
			s.ArgNames = append(s.ArgNames, a.name)
			s.ArgTypes = append(s.ArgTypes, a.typ)
		}
	}
	for _, l := range facts["decl_temporal"] {
		name, err := l.str(0)
		if err != nil {
			fail(err)
			continue
		}
		if preds[name] == nil {
			fail(l.errorf("temporal flag on undeclared predicate %s", name))
			continue
		}
		preds[name].Temporal = true
	}
	if preds["disclosure_upgrade"] == nil {
		// A protocol predicate (Spec 05 section 5.3): every profile has it.
		preds["disclosure_upgrade"] = &protocol.PredicateSchema{Predicate: "disclosure_upgrade", Arity: 1,
			ArgTypes: []string{protocol.ArgString}, ArgNames: []string{"macro_id"}, Direction: protocol.DirectionInput,
			Description: "Return the macro-tool with this macro_id at full disclosure (Spec 05 section 5.3)."}
		predOrder = append(predOrder, "disclosure_upgrade")
	}
	sort.Strings(predOrder)
	p.temporal = map[string]bool{}
	for _, n := range predOrder {
		if preds[n].Temporal {
			p.temporal[n] = true
		}
		p.profile.Predicates = append(p.profile.Predicates, *preds[n])
	}
	p.profile.TimeFormats = []string{"rfc3339", "epoch_ms"}

	intents := map[string]*protocol.IntentDecl{}
	for _, l := range facts["decl_intent"] {
		name, err1 := l.str(0)
		desc, err2 := l.str(1)
		if err := firstErr(err1, err2); err != nil {
			fail(err)
			continue
		}
		intents[name] = &protocol.IntentDecl{Name: name, Description: desc}
	}
	for _, l := range facts["decl_intent_fact"] {
		in, err1 := l.str(0)
		pred, err2 := l.str(1)
		need, err3 := l.str(2)
		if err := firstErr(err1, err2, err3); err != nil {
			fail(err)
			continue
		}
		d := intents[in]
		switch {
		case d == nil:
			fail(l.errorf("intent %s is not declared (add decl_intent)", in))
			continue
		case preds[pred] == nil:
			fail(l.errorf("intent %s names predicate %s, which is not in the facts profile (add decl_predicate)", in, pred))
			continue
		case need == "required":
			d.RequiredFacts = append(d.RequiredFacts, pred)
		case need == "optional":
			d.OptionalFacts = append(d.OptionalFacts, pred)
		default:
			fail(l.errorf("need %q must be required or optional", need))
		}
	}
	for _, d := range intents {
		sort.Strings(d.RequiredFacts)
		sort.Strings(d.OptionalFacts)
		p.intents = append(p.intents, *d)
	}
	sort.Slice(p.intents, func(i, j int) bool { return p.intents[i].Name < p.intents[j].Name })

	seen := map[string]bool{}
	for _, l := range facts["tool"] {
		name, err := l.str(0)
		if err != nil {
			fail(err)
			continue
		}
		if !seen[name] {
			seen[name] = true
			p.tools = append(p.tools, name)
		}
	}
	sort.Strings(p.tools)
	// Tie-breaking needs a rank for every tool the selection facts name:
	// checkContract has checked that each names a declared tool.
	for _, l := range facts["tool_action"] {
		if _, err := l.str(1); err != nil {
			fail(err)
		}
	}
	p.actions = actionRefs(facts["tool_action"])
	p.readSkills(facts, fail)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// clientDecls declares client predicates that no rule defines, so rules may
// use them in bodies (the analyser needs a declaration for every body
// predicate). It also rejects client predicates owned by the kernel layers.
func (p *Analysis) clientDecls(files []*sourceFile) (map[ast.PredicateSym]ast.Decl, error) {
	heads := map[string]string{}
	declared := map[string]bool{}
	for _, f := range files {
		for _, c := range f.unit.Clauses {
			heads[c.Head.Predicate.Symbol] = f.layer
		}
		for _, d := range f.unit.Decls {
			declared[d.DeclaredAtom.Predicate.Symbol] = true
		}
	}
	var errs LoadErrors
	extra := map[ast.PredicateSym]ast.Decl{}
	for _, s := range p.profile.Predicates {
		at := func(format string, args ...any) *LoadError {
			if l, ok := p.declLoc[s.Predicate]; ok {
				return &LoadError{File: l.file, Line: l.line, Message: fmt.Sprintf(format, args...)}
			}
			return &LoadError{Message: fmt.Sprintf(format, args...)}
		}
		if requestPredicates[s.Predicate] {
			errs = append(errs, at("facts profile predicate %s is asserted by the kernel; clients may not supply it", s.Predicate))
			continue
		}
		if layer := heads[s.Predicate]; (layer == "schema" || layer == "policy" || layer == "pipeline") && s.Direction != protocol.DirectionOutput {
			errs = append(errs, at("facts profile predicate %s is defined by the %s layer; clients may not supply it (declare it output)", s.Predicate, layer))
			continue
		}
		if _, defined := heads[s.Predicate]; defined || declared[s.Predicate] {
			continue
		}
		vars := make([]ast.BaseTerm, s.Arity)
		for i := range vars {
			vars[i] = ast.Variable{Symbol: fmt.Sprintf("A%d", i)}
		}
		d, err := ast.NewSyntheticDecl(ast.NewAtom(s.Predicate, vars...))
		if err != nil {
			errs = append(errs, &LoadError{Message: err.Error()})
			continue
		}
		if s.Temporal {
			d.Descr = append(d.Descr, ast.NewAtom(ast.DescrTemporal))
		}
		extra[d.DeclaredAtom.Predicate] = d
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return extra, nil
}

// externalDecls declares the external predicates for the analyser and
// checks that no rule defines them and no profile predicate shares a name.
func (p *Analysis) externalDecls(files []*sourceFile, externals []External, extra map[ast.PredicateSym]ast.Decl) error {
	var errs LoadErrors
	p.external = map[string]int{}
	for _, e := range externals {
		for _, f := range files {
			for i, c := range f.unit.Clauses {
				if c.Head.Predicate.Symbol == e.Name {
					errs = append(errs, &LoadError{File: f.name, Line: f.clauseLine(i), Message: fmt.Sprintf("%s is an external predicate computed by the host; rules may not define it", e.Name)})
				}
			}
		}
		if p.profile.Predicate(e.Name) != nil || requestPredicates[e.Name] {
			errs = append(errs, &LoadError{Message: fmt.Sprintf("external predicate %s has the name of a facts profile or request predicate", e.Name)})
			continue
		}
		vars := make([]ast.BaseTerm, e.Arity)
		for i := range vars {
			vars[i] = ast.Variable{Symbol: fmt.Sprintf("A%d", i)}
		}
		d, err := ast.NewSyntheticDecl(ast.NewAtom(e.Name, vars...))
		if err != nil {
			errs = append(errs, &LoadError{Message: err.Error()})
			continue
		}
		extra[d.DeclaredAtom.Predicate] = d
		p.external[e.Name] = e.Arity
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkRequiresCycles rejects tool_requires facts that form a cycle: a
// tool would need itself, which dependency completeness (Contract 4)
// cannot satisfy. Every fact on a cycle is reported with its location.
func checkRequiresCycles(requires []located) error {
	graph := map[string]map[string]bool{}
	for _, l := range requires {
		from, err1 := l.str(0)
		to, err2 := l.str(1)
		if firstErr(err1, err2) != nil {
			continue // reported by readDeclarations
		}
		if graph[from] == nil {
			graph[from] = map[string]bool{}
		}
		graph[from][to] = true
	}
	comp := sccs(graph)
	var errs LoadErrors
	for _, l := range requires {
		from, _ := l.str(0)
		to, _ := l.str(1)
		c := comp[from]
		if c == 0 || comp[to] != c || (from != to && cycleSize(comp, from) < 2) {
			continue
		}
		var members []string
		for name, k := range comp {
			if k == c {
				members = append(members, name)
			}
		}
		sort.Strings(members)
		errs = append(errs, &LoadError{File: l.file, Line: l.line,
			Message: fmt.Sprintf("tool_requires is cyclic: %q needs %q, and %v all require each other, so none of them can have its dependencies (Contract 4)", from, to, members)})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// atomFromFact is a helper for tests and callers holding wire facts.
func atomFromFact(f protocol.Fact) (ast.Atom, error) { return factcodec.Atom(f) }
