package manglecp

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/manglecp/manglecp/kernel"
)

// lostTools is a rule reload refused because the new rules lose tools the
// running rules serve: a registered action that no tool runs any more, or a
// tool a sample request selects that the new rules no longer declare. Such
// rules load and may even pass the samples, yet clients holding the
// running rules' macro-tools, and the samples' intents, would lose them.
type lostTools struct {
	// problems name the running rules' file and line where known.
	problems kernel.LoadErrors
	// tools are the lost tools' names, sorted (public: clients see them).
	tools []string
	// removed are the rule files the running rules had and the new lack.
	removed []string
}

func (e *lostTools) Error() string {
	var b strings.Builder
	b.WriteString("manglecp: the new rules lose tools the running rules serve:\n")
	b.WriteString(e.problems.Error())
	if len(e.removed) > 0 {
		fmt.Fprintf(&b, "\nrule files removed since the running rules: %s", strings.Join(e.removed, ", "))
	}
	return b.String()
}

// reason is the public degraded reason: tool names (clients see those
// anyway), no files or rule text.
func (e *lostTools) reason() string {
	names := e.tools
	more := ""
	if len(names) > 3 {
		more = fmt.Sprintf(" and %d more", len(names)-3)
		names = names[:3]
	}
	return fmt.Sprintf("rule reload rejected: the new rules lose tools the running rules serve (%s%s); the previous rules are still serving (the server log names the file)",
		strings.Join(names, ", "), more)
}

// checkLostTools compares the running program with next, which loaded and
// passed the samples (nextSamples: the tools each sample selected on it).
// It returns a *lostTools when next drops the only tool of an action the
// running rules run, or a tool a sample selects on the running rules; nil
// otherwise. Tools may move between files, be renamed while their action
// stays reachable, or be added freely.
func (s *Server) checkLostTools(ctx context.Context, running, next *kernel.Program, oldRules, newRules fs.FS, nextSamples map[string][]string) *lostTools {
	declared := map[string]bool{}
	for _, t := range next.Tools() {
		declared[t] = true
	}
	reached := map[string]bool{}
	for _, a := range next.ActionRefs() {
		reached[a.Name] = true
	}
	lost := map[string]bool{}
	var problems kernel.LoadErrors
	for _, a := range running.ActionRefs() {
		if reached[a.Name] {
			continue
		}
		lost[a.Tool] = true
		problems = append(problems, &kernel.LoadError{File: a.File, Line: a.Line,
			Message: fmt.Sprintf("tool_action(%q, %q) is gone: no tool of the new rules runs the registered action %q", a.Tool, a.Name, a.Name)})
	}
	// The samples on the running rules: an error there (the running rules
	// fail a sample) leaves nothing to compare.
	before, _ := s.runSamples(ctx, running)
	for _, name := range sortedKeys(before) {
		for _, tool := range before[name] {
			if declared[tool] || lost[tool] {
				continue
			}
			lost[tool] = true
			problems = append(problems, &kernel.LoadError{
				Message: fmt.Sprintf("the sample request %s selects tool %q on the running rules; the new rules do not declare it (they select %s)",
					name, tool, toolList(nextSamples[name]))})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	e := &lostTools{problems: problems}
	for t := range lost {
		e.tools = append(e.tools, t)
	}
	slices.Sort(e.tools)
	e.removed = s.removedRuleFiles(oldRules, newRules)
	return e
}

// removedRuleFiles lists the rule files oldRules has and newRules lacks,
// named as in load errors.
func (s *Server) removedRuleFiles(oldRules, newRules fs.FS) []string {
	removed := []string{}
	newFiles := ruleFiles(newRules)
	for _, f := range ruleFiles(oldRules) {
		if !slices.Contains(newFiles, f) {
			removed = append(removed, joinName(s.domain.RulesName, f))
		}
	}
	return removed
}

func toolList(tools []string) string {
	if len(tools) == 0 {
		return "none"
	}
	return strings.Join(tools, ", ")
}

// ruleFiles lists the .mg files of the policy and domain layers of rules,
// sorted; nil when rules cannot be read.
func ruleFiles(rules fs.FS) []string {
	var out []string
	for _, layer := range []string{"policy", "domain"} {
		_ = fs.WalkDir(rules, layer, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // a missing layer has no files
			}
			if !d.IsDir() && path.Ext(p) == ".mg" {
				out = append(out, p)
			}
			return nil
		})
	}
	slices.Sort(out)
	return out
}
