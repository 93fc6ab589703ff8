package analyse

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"codeberg.org/TauCeti/mangle-go/ast"

	"github.com/manglecp/manglecp/internal/schema"
	"github.com/manglecp/manglecp/kernel/factcodec"
	"github.com/manglecp/manglecp/kernel/load"
	"github.com/manglecp/manglecp/protocol"
)

// The contract is typed by the names of its declared arguments
// (rules/schema/contract.mg): an argument called Intent names a declared
// intent, Tool (or Other, Dependency) a declared tool, SkillID a declared
// skill, Param a parameter of the clause's Tool, ParamType a JSON Schema
// type, Value a value of the parameter's type, Predicate a predicate of the
// program or its facts profile, Score and Priority an integer. checkContract holds every fact and rule head of a contract
// predicate in the policy and domain layers to those kinds, wherever the
// argument is a constant.
const (
	kindIntent = iota + 1
	kindTool
	kindSkill
	kindParam
	kindParamType
	kindValue
	kindInteger
	kindPredicate
)

var argKinds = map[string]int{
	"Intent": kindIntent, "Tool": kindTool, "Other": kindTool, "Dependency": kindTool,
	"SkillID": kindSkill, "Param": kindParam, "OtherParam": kindParam, "ParamType": kindParamType, "Value": kindValue,
	"Score": kindInteger, "Priority": kindInteger, "Predicate": kindPredicate,
}

// declaring are the argument positions that declare a name rather than
// refer to one (tool/1 declares the tool, skill/3 the skill, tool_param/4
// the parameter); the decl_* predicates are checked by readDeclarations.
var declaring = map[string]int{"tool": 0, "skill": 0, "tool_param": 1}

// jsonTypes are the type names of JSON Schema (2020-12, section 6.1.1).
var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// contractNames is what the rules declare, for checking references to it.
// A set whose declaring clause has a variable in the declaring position
// (e.g. tool(T) :- ...) is open: references to it are not checked.
type contractNames struct {
	intents, tools, skills     map[string]bool
	toolsOpen                  bool
	params                     map[string]map[string]*paramDecl // tool -> param
	paramsOpen                 map[string]bool                  // tool -> a tool_param with a variable name
	allParamsOpen, intentsOpen bool
	predicates                 map[string]bool // every predicate defined, read, declared or in the profile
	conflicts                  load.LoadErrors // parameters declared with two constant types
}

// paramDecl is a tool_param clause with a constant tool and parameter.
type paramDecl struct {
	typ  string // "" when the type is not a constant string
	file string
	line int
}

// contractArgs reads the argument names of each contract predicate from
// the schema layer's declarations.
func contractArgs(files []*load.File) map[string][]string {
	out := map[string][]string{}
	for _, f := range files {
		if f.Layer != "schema" {
			continue
		}
		for _, d := range f.Unit.Decls {
			var names []string
			for _, a := range d.DeclaredAtom.Args {
				v, _ := a.(ast.Variable)
				names = append(names, v.Symbol)
			}
			out[d.DeclaredAtom.Predicate.Symbol] = names
		}
	}
	return out
}

// authored calls fn for each clause of the policy and domain layers.
func authored(files []*load.File, fn func(f *load.File, i int, c ast.Clause)) {
	for _, f := range files {
		if kernelLayer(f.Layer) {
			continue
		}
		for i, c := range f.Unit.Clauses {
			fn(f, i, c)
		}
	}
}

func constString(t ast.BaseTerm) (string, bool) {
	c, ok := t.(ast.Constant)
	if !ok || c.Type != ast.StringType {
		return "", false
	}
	s, err := c.StringValue()
	return s, err == nil
}

// readContractNames collects the intents, tools, skills and parameters the
// rules declare, in facts and rule heads alike.
func readContractNames(files []*load.File) *contractNames {
	n := &contractNames{intents: map[string]bool{}, tools: map[string]bool{}, skills: map[string]bool{},
		params: map[string]map[string]*paramDecl{}, paramsOpen: map[string]bool{}}
	authored(files, func(f *load.File, i int, c ast.Clause) {
		args := c.Head.Args
		if len(args) == 0 {
			return
		}
		name, isConst := constString(args[0])
		switch c.Head.Predicate.Symbol {
		case "decl_intent":
			n.intents[name] = isConst || n.intents[name]
			n.intentsOpen = n.intentsOpen || !isConst
		case "tool":
			n.tools[name] = isConst || n.tools[name]
			n.toolsOpen = n.toolsOpen || !isConst
		case "skill":
			n.skills[name] = true
		case "tool_param":
			if len(args) < 3 {
				return
			}
			param, pConst := constString(args[1])
			switch {
			case !isConst:
				n.allParamsOpen = true
			case !pConst:
				n.paramsOpen[name] = true
			default:
				if n.params[name] == nil {
					n.params[name] = map[string]*paramDecl{}
				}
				typ, _ := constString(args[2])
				here := &paramDecl{typ: typ, file: f.Name, line: f.ClauseLine(i)}
				prev := n.params[name][param]
				if prev != nil && typ != "" && prev.typ != "" && typ != prev.typ {
					n.conflicts = append(n.conflicts, &load.LoadError{File: here.file, Line: here.line, Message: fmt.Sprintf(
						"tool_param: parameter %q of tool %q is declared %s here and %s at %s:%d; a parameter has one type", param, name, typ, prev.typ, prev.file, prev.line)})
				}
				if prev == nil || (typ != "" && typ < prev.typ) {
					n.params[name][param] = here
				}
			}
		}
	})
	delete(n.intents, "")
	delete(n.tools, "")
	return n
}

// checkContract checks every fact and rule head of a contract predicate
// against the contract's declared arguments (see argKinds), flags a
// predicate that nothing reads and whose name is close to a contract
// predicate's, and compiles each tool's input schema as far as the rules
// fix it at load.
func checkContract(files []*load.File, externals []External) error {
	contract := contractArgs(files)
	names := readContractNames(files)
	read := readPredicates(files, externals)
	names.predicates = map[string]bool{}
	for p := range read {
		names.predicates[p] = true
	}
	for p := range contract {
		names.predicates[p] = true
	}
	for p := range RequestPredicates {
		names.predicates[p] = true
	}
	for _, f := range files {
		for _, c := range f.Unit.Clauses {
			names.predicates[c.Head.Predicate.Symbol] = true
		}
	}
	var errs load.LoadErrors
	authored(files, func(f *load.File, i int, c ast.Clause) {
		pred := c.Head.Predicate.Symbol
		argNames, ok := contract[pred]
		if !ok || strings.HasPrefix(pred, "decl_") || len(argNames) != len(c.Head.Args) {
			return
		}
		at := func(format string, args ...any) {
			errs = append(errs, &load.LoadError{File: f.Name, Line: f.ClauseLine(i), Message: fmt.Sprintf(format, args...)})
		}
		tool, toolConst := "", false
		for j, a := range argNames {
			if argKinds[a] == kindTool && j == 0 {
				tool, toolConst = constString(c.Head.Args[0])
			}
		}
		for j, a := range argNames {
			kind := argKinds[a]
			if kind == 0 {
				continue
			}
			if d, ok := declaring[pred]; ok && d == j {
				continue
			}
			if msg := checkArg(pred, j, a, kind, c.Head.Args, tool, toolConst, names); msg != "" {
				at("%s", msg)
			}
		}
	})
	errs = append(errs, names.conflicts...)
	errs = append(errs, misspelledPredicates(files, contract, read)...)
	errs = append(errs, checkInputSchemas(files, names)...)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkArg checks argument j (named a, of kind) of a head of pred and
// returns the problem in words, or "".
func checkArg(pred string, j int, a string, kind int, args []ast.BaseTerm, tool string, toolConst bool, names *contractNames) string {
	arg := args[j]
	c, isConst := arg.(ast.Constant)
	if !isConst {
		return ""
	}
	if kind == kindInteger {
		if c.Type != ast.NumberType {
			return fmt.Sprintf("%s: %s (argument %d) must be an integer, not %s", pred, a, j+1, c)
		}
		return ""
	}
	if kind == kindValue {
		return checkValue(pred, c, tool, toolConst, args, names)
	}
	s, ok := constString(arg)
	if !ok {
		return fmt.Sprintf("%s: %s (argument %d) must be a string, not %s: names are strings in the contract (write %q)", pred, a, j+1, c, strings.TrimPrefix(c.String(), "/"))
	}
	switch kind {
	case kindIntent:
		if names.intentsOpen || names.intents[s] {
			return ""
		}
		return fmt.Sprintf("%s names the intent %q, which is not declared: add decl_intent(%q, \"...\")%s", pred, s, s, didYouMean(s, slices.Sorted(maps.Keys(names.intents))))
	case kindTool:
		if names.toolsOpen || names.tools[s] {
			return ""
		}
		return fmt.Sprintf("%s names the tool %q, which is not declared: add tool(%q)%s", pred, s, s, didYouMean(s, slices.Sorted(maps.Keys(names.tools))))
	case kindSkill:
		if names.skills[s] {
			return ""
		}
		return fmt.Sprintf("%s names the skill %q, which is not declared: add skill(%q, NAME, DESCRIPTION)%s", pred, s, s, didYouMean(s, slices.Sorted(maps.Keys(names.skills))))
	case kindParam:
		if !toolConst || names.allParamsOpen || names.paramsOpen[tool] || !names.tools[tool] {
			return ""
		}
		if _, ok := names.params[tool][s]; ok {
			return ""
		}
		return fmt.Sprintf("%s names the parameter %q of tool %q, which has no such parameter: add tool_param(%q, %q, TYPE, DESCRIPTION)%s", pred, s, tool, tool, s, didYouMean(s, slices.Sorted(maps.Keys(names.params[tool]))))
	case kindPredicate:
		if names.predicates[s] {
			return ""
		}
		return fmt.Sprintf("%s names the predicate %q, which no rule, fact, declaration or decl_predicate defines%s", pred, s, didYouMean(s, slices.Sorted(maps.Keys(names.predicates))))
	case kindParamType:
		for _, t := range jsonTypes {
			if s == t {
				return ""
			}
		}
		return fmt.Sprintf("%s: %q is not a JSON Schema type; use one of %s%s", pred, s, strings.Join(jsonTypes, ", "), didYouMean(s, jsonTypes))
	}
	return ""
}

// checkValue checks a constant enum or default value against the type of
// its parameter, when the rules fix both.
func checkValue(pred string, c ast.Constant, tool string, toolConst bool, args []ast.BaseTerm, names *contractNames) string {
	param, ok := constString(args[1])
	if !toolConst || !ok {
		return ""
	}
	d := names.params[tool][param]
	if d == nil || d.typ == "" || !validType(d.typ) {
		return "" // an unknown parameter or type is reported on its own
	}
	v := factcodec.TermValue(c)
	if typeAccepts(d.typ, v) {
		return ""
	}
	what := "default"
	if pred == "tool_param_enum" {
		what = "enum value"
	}
	return fmt.Sprintf("%s: the %s %s of parameter %q of tool %q is not of its type %s (declared at %s:%d)", pred, what, c, param, tool, d.typ, d.file, d.line)
}

func validType(t string) bool {
	for _, j := range jsonTypes {
		if t == j {
			return true
		}
	}
	return false
}

// typeSchemas are the compiled schemas {"type": T} of the JSON Schema
// types, compiled once (they never change).
var typeSchemas = sync.OnceValue(func() map[string]*schema.Schema {
	out := map[string]*schema.Schema{}
	for _, t := range jsonTypes {
		if sch, err := schema.Compile(map[string]any{"type": t}, schema.Limits{}); err == nil {
			out[t] = sch
		}
	}
	return out
})

// typeAccepts reports whether a JSON value (as factcodec renders constants)
// is of a JSON Schema type, by validating it with the server's validator.
func typeAccepts(typ string, v any) bool {
	sch := typeSchemas()[typ]
	if sch == nil {
		return false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return false
	}
	inst, err := schema.Decode(raw)
	if err != nil {
		return false
	}
	return sch.Validate(inst) == nil
}

// checkInputSchemas renders, for each tool whose parameters the rules
// declare with constants, the input schema as the server would (types,
// constant enums and defaults) and compiles it.
func checkInputSchemas(files []*load.File, names *contractNames) load.LoadErrors {
	props := map[string]map[string]map[string]any{} // tool -> param -> property
	for tool, ps := range names.params {
		props[tool] = map[string]map[string]any{}
		for p, d := range ps {
			if d.typ == "" {
				continue
			}
			props[tool][p] = map[string]any{"type": d.typ}
		}
	}
	authored(files, func(_ *load.File, _ int, c ast.Clause) {
		pred := c.Head.Predicate.Symbol
		if (pred != "tool_param_enum" && pred != "tool_param_default") || len(c.Head.Args) != 3 {
			return
		}
		tool, ok1 := constString(c.Head.Args[0])
		param, ok2 := constString(c.Head.Args[1])
		v, ok3 := c.Head.Args[2].(ast.Constant)
		prop := props[tool][param]
		if !ok1 || !ok2 || !ok3 || prop == nil {
			return
		}
		if pred == "tool_param_default" {
			prop["default"] = factcodec.TermValue(v)
			return
		}
		enum, _ := prop["enum"].([]any)
		prop["enum"] = append(enum, factcodec.TermValue(v))
	})
	var errs load.LoadErrors
	for _, tool := range slices.Sorted(maps.Keys(props)) {
		properties := map[string]any{}
		valid := true
		for p, prop := range props[tool] {
			properties[p] = prop
			valid = valid && validType(prop["type"].(string))
		}
		if !valid {
			continue // the type is reported at its tool_param
		}
		doc := map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
			"properties": properties, "additionalProperties": false}
		if _, err := schema.Compile(doc, schema.Limits{}); err != nil {
			var first *paramDecl
			for _, d := range names.params[tool] {
				if first == nil || d.file < first.file || (d.file == first.file && d.line < first.line) {
					first = d
				}
			}
			errs = append(errs, &load.LoadError{File: first.file, Line: first.line,
				Message: fmt.Sprintf("the input schema of tool %q does not compile: %s", tool, oneLine(err.Error()))})
		}
	}
	return errs
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// readPredicates returns the predicates something reads or declares: a
// rule body, a Decl, a decl_predicate fact (clients supply it) or the
// host (an external predicate).
func readPredicates(files []*load.File, externals []External) map[string]bool {
	read := map[string]bool{}
	for _, e := range externals {
		read[e.Name] = true
	}
	for _, f := range files {
		for _, d := range f.Unit.Decls {
			read[d.DeclaredAtom.Predicate.Symbol] = true
		}
		for _, c := range f.Unit.Clauses {
			if c.Head.Predicate.Symbol == "decl_predicate" && len(c.Head.Args) > 0 {
				if s, ok := constString(c.Head.Args[0]); ok {
					read[s] = true
				}
			}
			addBodyPredicates(c.Premises, read)
		}
	}
	return read
}

// misspelledPredicates reports each predicate the policy or domain layer
// defines that is not in the contract, that nothing reads or declares
// (read), and whose name is close to a contract predicate's: the kernel
// would silently ignore it (tool_descripton for tool_description).
func misspelledPredicates(files []*load.File, contract map[string][]string, read map[string]bool) load.LoadErrors {
	contractNames := slices.Sorted(maps.Keys(contract))
	var errs load.LoadErrors
	reported := map[string]bool{}
	authored(files, func(f *load.File, i int, c ast.Clause) {
		pred := c.Head.Predicate.Symbol
		if _, ok := contract[pred]; ok || read[pred] || reported[pred] {
			return
		}
		best := closest(pred, contractNames)
		if best == "" {
			return
		}
		reported[pred] = true
		errs = append(errs, &load.LoadError{File: f.Name, Line: f.ClauseLine(i),
			Message: fmt.Sprintf("%s is not a contract predicate and no rule reads it, so the kernel ignores it: did you mean %s?", pred, best)})
	})
	return errs
}

// didYouMean returns "; did you mean "x"?" for the candidate a user most
// plausibly meant by s (protocol.Closest, as the CLI and the server
// suggest intents), or "".
func didYouMean(s string, candidates []string) string {
	if best := protocol.Closest(s, candidates); best != "" && best != s {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// closest returns the candidate nearest to s by edit distance when it is
// near enough to be a typo (at most 2 edits, and fewer than a third of
// s), or "". Ties go to the first in sorted order. It is stricter than
// protocol.Closest because it decides errors: a predicate nothing reads is
// an error only when it is this close to a contract predicate.
func closest(s string, candidates []string) string {
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	best, bestD := "", 3
	for _, c := range sorted {
		if c == s {
			return ""
		}
		if d := protocol.EditDistance(s, c); d < bestD && d*3 < len(s) {
			best, bestD = c, d
		}
	}
	return best
}

// DeclaredParam is a parameter of a tool that the rules declare with a
// constant name (tool_param), for checking a handler's input type.
type DeclaredParam struct {
	Action string // the action running the tool
	Tool   string
	Name   string
	Type   string // the JSON Schema type; "" when a rule derives it
	File   string // the tool_param clause, as known to the operator
	Line   int
}

// ActionParams returns, for each action, the parameters of the tools it
// runs, sorted by tool and name. A tool whose parameters a rule derives
// with a variable name is left out: they are known only per request.
func (p *Analysis) ActionParams() map[string][]DeclaredParam {
	out := make(map[string][]DeclaredParam, len(p.actionParams))
	for a, ps := range p.actionParams {
		out[a] = append([]DeclaredParam(nil), ps...)
	}
	return out
}

// actionParams collects DeclaredParams by action from the tool_action
// facts and the tool_param clauses.
func actionParams(files []*load.File, toolActions []load.Located) map[string][]DeclaredParam {
	names := readContractNames(files)
	if names.allParamsOpen {
		return nil
	}
	out := map[string][]DeclaredParam{}
	for _, l := range toolActions {
		tool, err1 := l.Str(0)
		action, err2 := l.Str(1)
		if firstErr(err1, err2) != nil || names.paramsOpen[tool] {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(names.params[tool])) {
			d := names.params[tool][name]
			out[action] = append(out[action], DeclaredParam{Action: action, Tool: tool, Name: name, Type: d.typ, File: d.file, Line: d.line})
		}
	}
	for a := range out {
		sort.SliceStable(out[a], func(i, j int) bool { return out[a][i].Tool < out[a][j].Tool })
	}
	return out
}
