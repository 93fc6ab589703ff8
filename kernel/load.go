package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"codeberg.org/TauCeti/mangle-go/analysis"
	"codeberg.org/TauCeti/mangle-go/ast"
	"codeberg.org/TauCeti/mangle-go/parse"

	"github.com/manglecp/manglecp/internal/plural"
)

// Layer is one trust layer of rule files. Layers are given from the highest
// trust to the lowest.
type Layer struct {
	// Name is the layer's name: "schema", "policy", "domain" or "pipeline".
	Name string
	// FS holds the layer's .mg files; every *.mg file under its root is
	// loaded, in lexical path order.
	FS fs.FS
	// Prefix is prepended to file names in errors (e.g. the --rules
	// directory), so messages name files as the operator knows them.
	Prefix string
}

// LoadError is a start-up problem in the rules, with its location.
type LoadError struct {
	File    string // file name as known to the operator
	Line    int    // 1-based, 0 when unknown
	Column  int    // 0-based, 0 when unknown
	Message string
}

// Error formats the error as file:line:column: message.
func (e *LoadError) Error() string {
	switch {
	case e.File == "":
		return e.Message
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	case e.Column == 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// LoadErrors is every problem found while loading.
type LoadErrors []*LoadError

// Error joins the problems, one per line.
func (es LoadErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sourceFile is one parsed .mg file.
type sourceFile struct {
	layer   string
	name    string
	unit    parse.SourceUnit
	clauses []int // line of each clause, parallel to unit.Clauses
	decls   []int // line of each decl, parallel to unit.Decls
}

func (f *sourceFile) clauseLine(i int) int {
	if i < len(f.clauses) {
		return f.clauses[i]
	}
	return 0
}

// readLayers parses every file of every layer. Parse errors of all files
// are collected.
func readLayers(layers []Layer) ([]*sourceFile, error) {
	var files []*sourceFile
	var errs LoadErrors
	for _, l := range layers {
		var names []string
		err := fs.WalkDir(l.FS, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".mg") {
				names = append(names, p)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) && l.Name != "domain" {
			continue // an absent policy layer is an empty one
		}
		if err != nil {
			errs = append(errs, &LoadError{File: l.Prefix, Message: fmt.Sprintf("cannot read the %s layer: %v", l.Name, err)})
			continue
		}
		if l.Name == "domain" && len(names) == 0 {
			errs = append(errs, &LoadError{File: l.Prefix, Message: "the domain layer has no .mg files"})
			continue
		}
		sort.Strings(names)
		for _, n := range names {
			display := path.Join(l.Prefix, n)
			src, err := fs.ReadFile(l.FS, n)
			if err != nil {
				errs = append(errs, &LoadError{File: display, Message: err.Error()})
				continue
			}
			unit, err := parse.Unit(bytes.NewReader(src))
			if err != nil {
				errs = append(errs, parseErrors(display, string(src), err)...)
				continue
			}
			f := &sourceFile{layer: l.Name, name: display, unit: unit}
			f.decls, f.clauses = statementLines(string(src))
			if len(f.clauses) != len(unit.Clauses) {
				f.clauses = nil // the split disagrees with the parser: report no lines rather than wrong ones
			}
			files = append(files, f)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return files, nil
}

// statementLines finds the first line of each top-level statement of a .mg
// source, split into Decl statements and clauses. A statement ends at a '.'
// followed by white space, a comment or the end of input, outside strings.
func statementLines(src string) (decls, clauses []int) {
	line := 1
	start := 0 // line where the current statement started; 0 = none yet
	var text strings.Builder
	inString, escaped := byte(0), false
	for i := 0; i < len(src); i++ {
		ch := src[i]
		if ch == '\n' {
			line++
		}
		if inString != 0 {
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == inString:
				inString = 0
			}
			continue
		}
		switch {
		case ch == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			if i < len(src) {
				line++
			}
			continue
		case ch == '"' || ch == '\'' || ch == '`':
			inString = ch
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n':
			continue
		}
		if start == 0 {
			start = line
			text.Reset()
		}
		if text.Len() < 8 {
			text.WriteByte(ch)
		}
		if ch == '.' && (i+1 == len(src) || strings.IndexByte(" \t\r\n#", src[i+1]) >= 0) {
			t := text.String()
			switch {
			case strings.HasPrefix(t, "Decl"):
				decls = append(decls, start)
			case strings.HasPrefix(t, "Package"), strings.HasPrefix(t, "Use"):
			default:
				clauses = append(clauses, start)
			}
			start = 0
		}
	}
	return decls, clauses
}

// locateInError finds the clause an engine error message talks about, by
// looking for its printed form or its head predicate.
func locateInError(files []*sourceFile, msg string) *LoadError {
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			if strings.Contains(msg, c.String()) || strings.Contains(msg, c.ReplaceWildcards().String()) {
				return &LoadError{File: f.name, Line: f.clauseLine(i), Message: msg}
			}
		}
	}
	// Otherwise blame the clause whose head the message mentions first.
	best, bestPos := (*LoadError)(nil), len(msg)+1
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			if pos := strings.Index(msg, c.Head.Predicate.Symbol+"("); pos >= 0 && pos < bestPos {
				best, bestPos = &LoadError{File: f.name, Line: f.clauseLine(i), Message: msg}, pos
			}
		}
	}
	if best != nil {
		return best
	}
	return &LoadError{Message: msg}
}

// analyse merges the files, checks ownership and runs the Mangle analysis
// and a temporal-aware stratification.
func analyse(files []*sourceFile, extra map[ast.PredicateSym]ast.Decl) (*analysis.ProgramInfo, []analysis.Nodeset, map[ast.PredicateSym]int, error) {
	units := make([]parse.SourceUnit, len(files))
	for i, f := range files {
		units[i] = f.unit
	}
	info, err := analysis.Analyze(units, extra)
	if err != nil {
		if le := explainUnbound(files, err.Error()); le != nil {
			return nil, nil, nil, LoadErrors{le}
		}
		if le := explainArity(files, err.Error(), extra); le != nil {
			return nil, nil, nil, LoadErrors{le}
		}
		le := locateInError(files, "rule analysis failed: "+err.Error())
		le.Message = explainAnalysis(le.Message, files, extra)
		return nil, nil, nil, LoadErrors{le}
	}
	strata, predToStratum, err := stratifyTemporalAware(info)
	if err != nil {
		return nil, nil, nil, LoadErrors{unstratifiable(files)}
	}
	return info, strata, predToStratum, nil
}

// requestPredicates are asserted by the kernel with server trust; no rule
// or fact in any layer may define them.
var requestPredicates = map[string]bool{"intent": true, "intent_param": true, "tool_rank": true, "eval_time": true,
	"caller": true, "caller_permission": true}

// checkOwnership enforces the trust layers: every head predicate is defined
// in exactly one layer, and no layer defines a request predicate or a
// reserved _manglecp_ predicate.
func checkOwnership(files []*sourceFile) error {
	type def struct {
		layer, file string
		line        int
	}
	owner := map[string]def{}
	var errs LoadErrors
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			name := c.Head.Predicate.Symbol
			here := def{f.layer, f.name, f.clauseLine(i)}
			if requestPredicates[name] || strings.HasPrefix(name, "_manglecp_") {
				errs = append(errs, &LoadError{File: f.name, Line: here.line,
					Message: fmt.Sprintf("%s is asserted by the kernel for each request; rules and facts may not define it", name)})
				continue
			}
			if prev, ok := owner[name]; ok && prev.layer != f.layer {
				owning, intruder := prev, here
				if kernelLayer(f.layer) && !kernelLayer(prev.layer) {
					owning, intruder = here, prev // blame the domain file, not the kernel's
				}
				errs = append(errs, &LoadError{File: intruder.file, Line: intruder.line,
					Message: fmt.Sprintf("%s is defined in the %s layer (%s:%d); the %s layer may not add to it", name, owning.layer, owning.file, owning.line, intruder.layer)})
				continue
			}
			if _, ok := owner[name]; !ok {
				owner[name] = here
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func kernelLayer(name string) bool { return name == "schema" || name == "pipeline" }

// asLoadErrors normalizes an error to LoadErrors.
func asLoadErrors(err error) LoadErrors {
	var les LoadErrors
	if errors.As(err, &les) {
		return les
	}
	var le *LoadError
	if errors.As(err, &le) {
		return LoadErrors{le}
	}
	return LoadErrors{{Message: err.Error()}}
}

// unstratifiable names a clause on a cycle through negation or aggregation,
// which Mangle reports without a location.
func unstratifiable(files []*sourceFile) *LoadError {
	graph := map[string]map[string]bool{}
	type edge struct {
		file       *sourceFile
		index      int
		head, body string
	}
	var negative []edge
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			head := c.Head.Predicate.Symbol
			if graph[head] == nil {
				graph[head] = map[string]bool{}
			}
			aggregates := c.Transform != nil && !c.Transform.IsLetTransform()
			for _, prem := range c.Premises {
				lit, _ := plainPremise(prem)
				switch a := lit.(type) {
				case ast.Atom:
					graph[head][a.Predicate.Symbol] = true
					if aggregates {
						negative = append(negative, edge{f, i, head, a.Predicate.Symbol})
					}
				case ast.NegAtom:
					graph[head][a.Atom.Predicate.Symbol] = true
					negative = append(negative, edge{f, i, head, a.Atom.Predicate.Symbol})
				}
			}
		}
	}
	comp := sccs(graph)
	for _, e := range negative {
		if e.head == e.body || (comp[e.head] != 0 && comp[e.head] == comp[e.body]) {
			return &LoadError{File: e.file.name, Line: e.file.clauseLine(e.index),
				Message: fmt.Sprintf("rules cannot be stratified: %s depends on itself through a negation or an aggregation of %s", e.head, e.body)}
		}
	}
	return &LoadError{Message: "rules cannot be stratified (recursion through negation or aggregation)"}
}

var reNotFound = regexp.MustCompile(`could not find predicate ([A-Za-z_][A-Za-z0-9_:]*)\(([^)]*)\)`)

// explainAnalysis rewords the analyser's "could not find predicate p(A0)"
// as what the author should do, with the closest known predicate.
func explainAnalysis(msg string, files []*sourceFile, extra map[ast.PredicateSym]ast.Decl) string {
	m := reNotFound.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	known := map[string]bool{}
	for _, f := range files {
		for _, c := range f.unit.Clauses {
			known[c.Head.Predicate.Symbol] = true
		}
		for _, d := range f.unit.Decls {
			known[d.DeclaredAtom.Predicate.Symbol] = true
		}
	}
	for sym := range extra {
		known[sym.Symbol] = true
	}
	arity := 0
	if strings.TrimSpace(m[2]) != "" {
		arity = strings.Count(m[2], ",") + 1
	}
	hint := "; if clients supply it, declare it with decl_predicate and decl_arg"
	if known[m[1]] {
		hint = fmt.Sprintf("; %s is defined, but with another number of arguments", m[1])
	} else if best := closest(m[1], keys(known)); best != "" {
		hint = fmt.Sprintf("; did you mean %s?", best)
	}
	return fmt.Sprintf("this rule reads %s/%d, which no rule, fact or declaration defines (could not find predicate %s)%s", m[1], arity, m[1], hint)
}

// The analyser's words for a builtin premise (a comparison, say) that reads
// a variable nothing binds.
var (
	reUnboundGoal = regexp.MustCompile(`for goal "(:[a-z_:]+)\((.*)\)" expected ([A-Za-z_][A-Za-z0-9_]*) \(arg \d+\) to be constant or bound variable`)
	reNoValueYet  = regexp.MustCompile(`variable ([A-Za-z_][A-Za-z0-9_]*) in (:[a-z_:]+)\((.*)\) will not have a value yet`)
)

// comparisonOps are the comparison builtins as an author writes them.
var comparisonOps = map[string]string{":lt": "<", ":le": "<=", ":gt": ">", ":ge": ">=", ":eq": "=", ":neq": "!="}

// explainUnbound turns the analyser's "for goal ":gt(L,Min)" expected Min
// (arg 1) to be constant or bound variable", which names neither file nor
// line, into the rule that reads the variable, in the author's words. It
// returns nil when msg is not about that.
func explainUnbound(files []*sourceFile, msg string) *LoadError {
	var builtin, variable string
	if m := reUnboundGoal.FindStringSubmatch(msg); m != nil {
		builtin, variable = m[1], m[3]
	} else if m := reNoValueYet.FindStringSubmatch(msg); m != nil {
		builtin, variable = m[2], m[1]
	} else {
		return nil
	}
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			for _, prem := range c.Premises {
				a, ok := prem.(ast.Atom)
				if !ok || a.Predicate.Symbol != builtin || !readsVariable(a, variable) {
					continue
				}
				what := fmt.Sprintf("the builtin %s", a)
				if op, ok := comparisonOps[builtin]; ok && len(a.Args) == 2 {
					what = fmt.Sprintf("the comparison %s %s %s", a.Args[0], op, a.Args[1])
				}
				return &LoadError{File: f.name, Line: f.clauseLine(i), Message: fmt.Sprintf(
					"%s reads %s, which no premise of this rule gives a value: a variable in a comparison or builtin must also appear in an atom of the rule's body (e.g. limit(%s)), or be a constant",
					what, variable, variable)}
			}
		}
	}
	return nil
}

func readsVariable(a ast.Atom, name string) bool {
	for _, t := range a.Args {
		if v, ok := t.(ast.Variable); ok && v.Symbol == name {
			return true
		}
	}
	return false
}

// explainArity turns the analyser's "could not find predicate p(A0)" for a
// predicate that exists with another number of arguments into the rule that
// reads it, with both counts and where the predicate is defined. It returns
// nil when msg is not about that.
func explainArity(files []*sourceFile, msg string, extra map[ast.PredicateSym]ast.Decl) *LoadError {
	m := reNotFound.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	name := m[1]
	read := 0
	if strings.TrimSpace(m[2]) != "" {
		read = strings.Count(m[2], ",") + 1
	}
	// Where the predicate is defined, with its number of arguments: a rule
	// or fact of the layers, else the facts profile (decl_predicate).
	var defined *LoadError
	arity := -1
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			if c.Head.Predicate.Symbol == name && defined == nil {
				arity = c.Head.Predicate.Arity
				defined = &LoadError{File: f.name, Line: f.clauseLine(i)}
			}
		}
	}
	if defined == nil {
		for sym := range extra {
			if sym.Symbol == name {
				arity = sym.Arity
			}
		}
		for _, f := range files {
			for i, c := range f.unit.Clauses {
				if c.Head.Predicate.Symbol != "decl_predicate" || len(c.Head.Args) == 0 || defined != nil {
					continue
				}
				if s, ok := constString(c.Head.Args[0]); ok && s == name {
					defined = &LoadError{File: f.name, Line: f.clauseLine(i)}
				}
			}
		}
	}
	if arity < 0 || arity == read {
		return nil
	}
	// The rule that reads it with the wrong count.
	for _, f := range files {
		for i, c := range f.unit.Clauses {
			for _, prem := range c.Premises {
				lit, _ := plainPremise(prem)
				var a ast.Atom
				switch l := lit.(type) {
				case ast.Atom:
					a = l
				case ast.NegAtom:
					a = l.Atom
				default:
					continue
				}
				if a.Predicate.Symbol != name || len(a.Args) != read {
					continue
				}
				where := ""
				if defined != nil && defined.Line > 0 {
					where = fmt.Sprintf(" (%s:%d)", defined.File, defined.Line)
				}
				return &LoadError{File: f.name, Line: f.clauseLine(i), Message: fmt.Sprintf(
					"this rule reads %s with %s, but %s has %s%s: write %s(%s)",
					name, plural.S(read, "argument"), name, plural.S(arity, "argument"), where, name, placeholders(arity))}
			}
		}
	}
	return nil
}

// placeholders returns "_, _" for n arguments.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("_, ", n), ", ")
}
