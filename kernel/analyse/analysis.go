package analyse

import (
	"fmt"
	"sort"

	"codeberg.org/TauCeti/mangle-go/analysis"
	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/kernel/load"
	"github.com/manglecp/manglecp/protocol"
)

// Analysis is a rule program read, checked and analysed: the engine's
// program info and strata, the server facts and the manifest declarations.
type Analysis struct {
	Info          *analysis.ProgramInfo // the rules, without the server facts
	Strata        []analysis.Nodeset
	PredToStratum map[ast.PredicateSym]int
	Facts         []ast.Atom      // server facts without a validity interval
	TimedBase     []timedAtom     // server facts with a validity interval
	Temporal      map[string]bool // profile predicates whose facts go to the temporal store
	RuleBodies    [][]ast.Term    // premises with wildcards replaced, per rule
	SoleRule      []bool          // per rule: the only rule of its head predicate

	Policy      map[string]bool         // predicates the policy layer defines; proofs do not open them
	External    map[string]int          // external predicate -> arity
	declLoc     map[string]load.Located // where each profile predicate is declared
	Skills      map[string]protocol.Skill
	inline      map[string]bool
	IntentDecls []protocol.IntentDecl
	Profile     protocol.FactsProfile
	ToolNames   []string
	actions     []ActionRef
	// actionParams are the parameters the rules declare with constants
	// for the tools of each action (ActionParams).
	actionParams map[string][]DeclaredParam
	ruleCount    int
	// warnings are the problems that load but deserve the author's look
	// (Warnings).
	warnings []*load.LoadError
}

// argInteger is the decl_arg type of a whole-number argument: the same
// word as tool_param's JSON Schema type. The manifest advertises it as
// "number", the facts profile's name for it.
const argInteger = "integer"

// Warnings returns what loads but deserves the author's look, each with
// its file and line: an old spelling (decl_arg's "number", now "integer").
// The server logs them at load; `manglecp check` prints them.
func (p *Analysis) Warnings() []*load.LoadError { return append([]*load.LoadError(nil), p.warnings...) }

// spellingWarnings reports the decl_arg facts typed "number": the old
// spelling of "integer" (one word for whole numbers in decl_arg and
// tool_param alike), still accepted.
func spellingWarnings(files []*load.File) []*load.LoadError {
	var out []*load.LoadError
	authored(files, func(f *load.File, i int, c ast.Clause) {
		if c.Head.Predicate.Symbol != "decl_arg" || len(c.Head.Args) != 4 || len(c.Premises) > 0 {
			return
		}
		if t, ok := constString(c.Head.Args[3]); ok && t == protocol.ArgNumber {
			out = append(out, &load.LoadError{File: f.Name, Line: f.ClauseLine(i), Message: "warning: " +
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

// Analyse checks and analyses the parsed files of every layer and
// reads the manifest declarations.
func Analyse(files []*load.File, externals []External) (*Analysis, error) {
	if err := checkOwnership(files); err != nil {
		return nil, err
	}
	if err := checkTemporalRecursion(files); err != nil {
		return nil, err
	}
	if err := checkAggregations(files); err != nil {
		return nil, err
	}
	facts := load.CollectFacts(files)
	if err := checkFailingPatterns(files, facts); err != nil {
		return nil, err
	}
	if err := checkRequiresCycles(facts["tool_requires"]); err != nil {
		return nil, err
	}
	if err := checkContract(files, externals); err != nil {
		return nil, err
	}
	p := &Analysis{Policy: map[string]bool{}}
	for _, f := range files {
		if f.Layer == "policy" {
			for _, c := range f.Unit.Clauses {
				p.Policy[c.Head.Predicate.Symbol] = true
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
	p.Info, p.Strata, p.PredToStratum = info, strata, predToStratum
	p.ruleCount = len(info.Rules)
	for i, a := range info.InitialFacts {
		if iv := info.InitialFactTimes[i]; iv != nil {
			p.TimedBase = append(p.TimedBase, timedAtom{a, *iv})
			continue
		}
		p.Facts = append(p.Facts, a)
	}
	perHead := map[ast.PredicateSym]int{}
	for _, r := range info.Rules {
		perHead[r.Head.Predicate]++
	}
	p.SoleRule = make([]bool, len(info.Rules))
	p.RuleBodies = make([][]ast.Term, len(info.Rules))
	for i, r := range info.Rules {
		p.SoleRule[i] = perHead[r.Head.Predicate] == 1
		p.RuleBodies[i] = r.ReplaceWildcards().Premises
	}
	shared := *info
	shared.InitialFacts, shared.InitialFactTimes = nil, nil
	p.Info = &shared
	p.warnings = spellingWarnings(files)
	return p, nil
}

type timedAtom struct {
	Atom     ast.Atom
	Interval ast.Interval
}

// Intents returns the intents the manifest advertises, sorted by name.
func (p *Analysis) Intents() []protocol.IntentDecl {
	out := make([]protocol.IntentDecl, len(p.IntentDecls))
	copy(out, p.IntentDecls)
	return out
}

// FactsProfile returns the facts profile (predicates sorted by name).
func (p *Analysis) FactsProfile() protocol.FactsProfile {
	fp := p.Profile
	fp.Predicates = append([]protocol.PredicateSchema(nil), p.Profile.Predicates...)
	fp.TimeFormats = append([]string(nil), p.Profile.TimeFormats...)
	return fp
}

// Tools returns the names of the declared tools, sorted.
func (p *Analysis) Tools() []string { return append([]string(nil), p.ToolNames...) }

// Skill returns a skill of the catalogue by id.
func (p *Analysis) Skill(id string) (protocol.Skill, bool) {
	s, ok := p.Skills[id]
	if ok {
		s.Resources = append([]protocol.SkillResource(nil), s.Resources...)
	}
	return s, ok
}

// SkillInline reports whether the catalogue marks the skill for inline
// delivery.
func (p *Analysis) SkillInline(id string) bool { return p.inline[id] }

// readSkills reads the skill catalogue from the program's facts.
func (p *Analysis) readSkills(facts map[string][]load.Located, fail func(error)) {
	p.Skills, p.inline = map[string]protocol.Skill{}, map[string]bool{}
	for _, l := range facts["skill"] {
		id, err1 := l.Str(0)
		name, err2 := l.Str(1)
		desc, err3 := l.Str(2)
		if err := firstErr(err1, err2, err3); err != nil {
			fail(err)
			continue
		}
		p.Skills[id] = protocol.Skill{SkillID: id, Name: name, Description: desc, ContentType: "text/markdown"}
	}
	withSkill := func(pred string, fn func(id string, s *protocol.Skill, l load.Located) error) {
		for _, l := range facts[pred] {
			id, err := l.Str(0)
			if err != nil {
				fail(err)
				continue
			}
			s, ok := p.Skills[id]
			if !ok {
				fail(l.Errorf("skill %q is not declared (add skill/3)", id))
				continue
			}
			if err := fn(id, &s, l); err != nil {
				fail(err)
				continue
			}
			p.Skills[id] = s
		}
	}
	withSkill("skill_content", func(_ string, s *protocol.Skill, l load.Located) (err error) { s.Content, err = l.Str(1); return })
	withSkill("skill_content_type", func(_ string, s *protocol.Skill, l load.Located) (err error) { s.ContentType, err = l.Str(1); return })
	withSkill("skill_resource", func(_ string, s *protocol.Skill, l load.Located) error {
		uri, err1 := l.Str(1)
		typ, err2 := l.Str(2)
		desc, err3 := l.Str(3)
		s.Resources = append(s.Resources, protocol.SkillResource{URI: uri, Type: typ, Description: desc})
		return firstErr(err1, err2, err3)
	})
	withSkill("skill_inline", func(id string, _ *protocol.Skill, _ load.Located) error { p.inline[id] = true; return nil })
	for id, s := range p.Skills {
		if s.Content == "" {
			fail(&load.LoadError{Message: fmt.Sprintf("skill %q has no skill_content", id)})
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
func Actions(layers ...load.Layer) ([]ActionRef, error) {
	files, err := load.Read(layers)
	if err != nil {
		return nil, err
	}
	return actionRefs(load.CollectFacts(files)["tool_action"]), nil
}

// actionRefs lists the actions of tool_action facts, sorted by name, each
// at its first fact. Malformed facts are reported by readDeclarations.
func actionRefs(facts []load.Located) []ActionRef {
	seen := map[string]bool{}
	var out []ActionRef
	for _, l := range facts {
		a, err := l.Str(1)
		if err != nil || seen[a] {
			continue
		}
		seen[a] = true
		tool, _ := l.Str(0)
		out = append(out, ActionRef{Name: a, Tool: tool, File: l.File, Line: l.Line})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RuleCount is the number of rules (clauses with a body).
func (p *Analysis) RuleCount() int { return p.ruleCount }

// readDeclarations reads intents, the facts profile and the tool list from
// the program's facts and checks them.
func (p *Analysis) readDeclarations(files []*load.File, facts map[string][]load.Located) error {
	var errs load.LoadErrors
	fail := func(err error) {
		errs = append(errs, load.AsLoadErrors(err)...)
	}
	preds := map[string]*protocol.PredicateSchema{}
	predOrder := []string{}
	for _, l := range facts["decl_predicate"] {
		name, err1 := l.Str(0)
		dir, err2 := l.Str(1)
		desc, err3 := l.Str(2)
		if err := firstErr(err1, err2, err3); err != nil {
			fail(err)
			continue
		}
		if dir != protocol.DirectionInput && dir != protocol.DirectionOutput && dir != protocol.DirectionBoth {
			fail(l.Errorf("direction %q must be input, output or both", dir))
			continue
		}
		if _, dup := preds[name]; dup {
			fail(l.Errorf("predicate %s declared twice", name))
			continue
		}
		preds[name] = &protocol.PredicateSchema{Predicate: name, Direction: dir, Description: desc}
		if p.declLoc == nil {
			p.declLoc = map[string]load.Located{}
		}
		p.declLoc[name] = l
		predOrder = append(predOrder, name)
	}
	type arg struct{ name, typ string }
	args := map[string]map[int64]arg{}
	argLoc := map[string]load.Located{}
	for _, l := range facts["decl_arg"] {
		pred, err1 := l.Str(0)
		idx, err2 := l.Num(1)
		name, err3 := l.Str(2)
		typ, err4 := l.Str(3)
		if err := firstErr(err1, err2, err3, err4); err != nil {
			fail(err)
			continue
		}
		if preds[pred] == nil {
			fail(l.Errorf("argument of undeclared predicate %s (add decl_predicate)", pred))
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
			fail(l.Errorf("type %q must be string, integer, boolean or any%s", typ, didYouMean(typ, []string{"string", argInteger, "boolean", "any"})))
			continue
		}
		if args[pred] == nil {
			args[pred] = map[int64]arg{}
		}
		if _, dup := args[pred][idx]; dup {
			fail(l.Errorf("argument %d of %s declared twice", idx, pred))
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
				fail(argLoc[name].Errorf("arguments of %s must be numbered 0..%d without gaps", name, len(as)-1))
				break
			}
			s.ArgNames = append(s.ArgNames, a.name)
			s.ArgTypes = append(s.ArgTypes, a.typ)
		}
	}
	for _, l := range facts["decl_temporal"] {
		name, err := l.Str(0)
		if err != nil {
			fail(err)
			continue
		}
		if preds[name] == nil {
			fail(l.Errorf("temporal flag on undeclared predicate %s", name))
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
	p.Temporal = map[string]bool{}
	for _, n := range predOrder {
		if preds[n].Temporal {
			p.Temporal[n] = true
		}
		p.Profile.Predicates = append(p.Profile.Predicates, *preds[n])
	}
	p.Profile.TimeFormats = []string{"rfc3339", "epoch_ms"}

	intents := map[string]*protocol.IntentDecl{}
	for _, l := range facts["decl_intent"] {
		name, err1 := l.Str(0)
		desc, err2 := l.Str(1)
		if err := firstErr(err1, err2); err != nil {
			fail(err)
			continue
		}
		intents[name] = &protocol.IntentDecl{Name: name, Description: desc}
	}
	for _, l := range facts["decl_intent_fact"] {
		in, err1 := l.Str(0)
		pred, err2 := l.Str(1)
		need, err3 := l.Str(2)
		if err := firstErr(err1, err2, err3); err != nil {
			fail(err)
			continue
		}
		d := intents[in]
		switch {
		case d == nil:
			fail(l.Errorf("intent %s is not declared (add decl_intent)", in))
			continue
		case preds[pred] == nil:
			fail(l.Errorf("intent %s names predicate %s, which is not in the facts profile (add decl_predicate)", in, pred))
			continue
		case need == "required":
			d.RequiredFacts = append(d.RequiredFacts, pred)
		case need == "optional":
			d.OptionalFacts = append(d.OptionalFacts, pred)
		default:
			fail(l.Errorf("need %q must be required or optional", need))
		}
	}
	for _, d := range intents {
		sort.Strings(d.RequiredFacts)
		sort.Strings(d.OptionalFacts)
		p.IntentDecls = append(p.IntentDecls, *d)
	}
	sort.Slice(p.IntentDecls, func(i, j int) bool { return p.IntentDecls[i].Name < p.IntentDecls[j].Name })

	seen := map[string]bool{}
	for _, l := range facts["tool"] {
		name, err := l.Str(0)
		if err != nil {
			fail(err)
			continue
		}
		if !seen[name] {
			seen[name] = true
			p.ToolNames = append(p.ToolNames, name)
		}
	}
	sort.Strings(p.ToolNames)
	// Tie-breaking needs a rank for every tool the selection facts name:
	// checkContract has checked that each names a declared tool.
	for _, l := range facts["tool_action"] {
		if _, err := l.Str(1); err != nil {
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
func (p *Analysis) clientDecls(files []*load.File) (map[ast.PredicateSym]ast.Decl, error) {
	heads := map[string]string{}
	declared := map[string]bool{}
	for _, f := range files {
		for _, c := range f.Unit.Clauses {
			heads[c.Head.Predicate.Symbol] = f.Layer
		}
		for _, d := range f.Unit.Decls {
			declared[d.DeclaredAtom.Predicate.Symbol] = true
		}
	}
	var errs load.LoadErrors
	extra := map[ast.PredicateSym]ast.Decl{}
	for _, s := range p.Profile.Predicates {
		at := func(format string, args ...any) *load.LoadError {
			if l, ok := p.declLoc[s.Predicate]; ok {
				return &load.LoadError{File: l.File, Line: l.Line, Message: fmt.Sprintf(format, args...)}
			}
			return &load.LoadError{Message: fmt.Sprintf(format, args...)}
		}
		if RequestPredicates[s.Predicate] {
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
		d, err := syntheticDecl(s.Predicate, s.Arity)
		if err != nil {
			errs = append(errs, &load.LoadError{Message: err.Error()})
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

// syntheticDecl declares a predicate no rule file declares, for the
// analyser: its arguments are named A0, A1, ...
func syntheticDecl(name string, arity int) (ast.Decl, error) {
	vars := make([]ast.BaseTerm, arity)
	for i := range vars {
		vars[i] = ast.Variable{Symbol: fmt.Sprintf("A%d", i)}
	}
	return ast.NewSyntheticDecl(ast.NewAtom(name, vars...))
}

// externalDecls declares the external predicates for the analyser and
// checks that no rule defines them and no profile predicate shares a name.
func (p *Analysis) externalDecls(files []*load.File, externals []External, extra map[ast.PredicateSym]ast.Decl) error {
	var errs load.LoadErrors
	p.External = map[string]int{}
	for _, e := range externals {
		for _, f := range files {
			for i, c := range f.Unit.Clauses {
				if c.Head.Predicate.Symbol == e.Name {
					errs = append(errs, &load.LoadError{File: f.Name, Line: f.ClauseLine(i), Message: fmt.Sprintf("%s is an external predicate computed by the host; rules may not define it", e.Name)})
				}
			}
		}
		if p.Profile.Predicate(e.Name) != nil || RequestPredicates[e.Name] {
			errs = append(errs, &load.LoadError{Message: fmt.Sprintf("external predicate %s has the name of a facts profile or request predicate", e.Name)})
			continue
		}
		d, err := syntheticDecl(e.Name, e.Arity)
		if err != nil {
			errs = append(errs, &load.LoadError{Message: err.Error()})
			continue
		}
		extra[d.DeclaredAtom.Predicate] = d
		p.External[e.Name] = e.Arity
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkRequiresCycles rejects tool_requires facts that form a cycle: a
// tool would need itself, which dependency completeness (Contract 4)
// cannot satisfy. Every fact on a cycle is reported with its location.
func checkRequiresCycles(requires []load.Located) error {
	graph := map[string]map[string]bool{}
	for _, l := range requires {
		from, err1 := l.Str(0)
		to, err2 := l.Str(1)
		if firstErr(err1, err2) != nil {
			continue // reported by readDeclarations
		}
		if graph[from] == nil {
			graph[from] = map[string]bool{}
		}
		graph[from][to] = true
	}
	comp := sccs(graph)
	var errs load.LoadErrors
	for _, l := range requires {
		from, _ := l.Str(0)
		to, _ := l.Str(1)
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
		errs = append(errs, &load.LoadError{File: l.File, Line: l.Line,
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

// RuleNames names the rules "pred" or "pred#n" when a predicate has several.
func (p *Analysis) RuleNames() []string {
	count := map[string]int{}
	for _, r := range p.Info.Rules {
		count[r.Head.Predicate.Symbol]++
	}
	seen := map[string]int{}
	names := make([]string, len(p.Info.Rules))
	for i, r := range p.Info.Rules {
		sym := r.Head.Predicate.Symbol
		seen[sym]++
		names[i] = sym
		if count[sym] > 1 {
			names[i] = fmt.Sprintf("%s#%d", sym, seen[sym])
		}
	}
	return names
}

// BodyPredicates is the set of predicates some rule body reads.
func (p *Analysis) BodyPredicates() map[string]bool {
	out := map[string]bool{}
	for _, r := range p.Info.Rules {
		addBodyPredicates(r.Premises, out)
	}
	return out
}

// addBodyPredicates adds to out the predicates premises read, positively,
// negated or through a temporal literal.
func addBodyPredicates(premises []ast.Term, out map[string]bool) {
	for _, prem := range premises {
		lit, _ := PlainPremise(prem)
		switch a := lit.(type) {
		case ast.Atom:
			out[a.Predicate.Symbol] = true
		case ast.NegAtom:
			out[a.Atom.Predicate.Symbol] = true
		}
	}
}
