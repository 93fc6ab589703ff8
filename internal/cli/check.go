package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/factcodec"
	"github.com/manglecp/manglecp/internal/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// checkReport is the JSON form of `manglecp check`.
type checkReport struct {
	OK         bool            `json:"ok"`
	Errors     []checkProblem  `json:"errors"`
	Warnings   []checkProblem  `json:"warnings"`
	Rules      int             `json:"rules,omitempty"`
	Intents    []string        `json:"intents,omitempty"`
	Predicates int             `json:"predicates,omitempty"`
	Clauses    []checkedClause `json:"clauses,omitempty"`
	Skipped    []checkProblem  `json:"clauses_not_representable,omitempty"`
}

type checkProblem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// checkedClause is a rule in the structured clause format of Spec 03
// section 7.
type checkedClause struct {
	File   string          `json:"file"`
	Line   int             `json:"line"`
	Clause protocol.Clause `json:"clause"`
}

// check loads DIR exactly as `serve --rules DIR` does and reports every
// problem with file and line (exit 1), including rules that would fail
// every evaluation reaching them (comparisons that cannot succeed,
// unbounded recursion, cyclic tool_requires), evaluates the domain's sample
// requests on the rules as a reload would (a failing one is an error), then
// prints the lint warnings for Mangle v0.5.0 pitfalls (exit 0 when there are
// only warnings).
func check(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := cmdHelp{name: "check", synopsis: "manglecp check DIR [--json [--show-rules]]",
		description: "Loads the rules of DIR (DIR/policy/*.mg and DIR/domain/*.mg) exactly as\n'manglecp serve --rules DIR' does and prints every problem as file:line: message (exit 1),\nincluding rules that would fail every evaluation (comparisons that cannot succeed,\nunbounded recursion, cyclic tool_requires), then runs the domain's sample requests on\nthe rules as a reload would (one that fails is an error), then prints warnings for\nMangle v0.5.0 pitfalls (exit 0 when there are only warnings).",
		args:        "DIR  a directory with policy/ and domain/ subdirectories of .mg files"}
	fl := newFlagSet("check")
	asJSON := fl.Bool("json", false, "print the report as JSON")
	showRules := fl.Bool("show-rules", false, "with --json: include every rule of DIR in the clause format of Spec 03 section 7")
	pos, code, ok := parseArgs(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, h, "one DIR expected, got %d arguments", len(pos))
	}
	if *showRules && !*asJSON {
		return usageError(stderr, h, "--show-rules needs --json (the rules are printed in the JSON report)")
	}
	dir := pos[0]
	rep := checkReport{Errors: []checkProblem{}, Warnings: []checkProblem{}}
	d, opts, err := configure(dir, "", "", nil, nil)
	if err == nil {
		var srv *manglecp.Server
		if srv, err = manglecp.NewServer(d, opts); err == nil {
			if serr := srv.CheckSamples(ctx); serr != nil {
				rep.Errors = append(rep.Errors, checkProblem{Message: strings.TrimPrefix(serr.Error(), "manglecp: ")})
			}
			m := srv.Manifest()
			rep.Predicates = len(m.FactsProfile.Predicates)
			for _, in := range m.Intents {
				rep.Intents = append(rep.Intents, in.Name)
			}
		}
	}
	if err != nil {
		rep.Errors = problems(err)
	}
	layers := []kernel.Layer{ruleLayer(d.Rules, dir, "policy"), ruleLayer(d.Rules, dir, "domain")}
	if warnings, lerr := kernel.Lint(layers...); lerr == nil {
		for _, w := range warnings {
			rep.Warnings = append(rep.Warnings, checkProblem{File: w.File, Line: w.Line, Message: strings.TrimPrefix(w.Message, "warning: ")})
		}
	}
	if clauses, cerr := kernel.SourceClauses(layers...); cerr == nil {
		for _, c := range clauses {
			if len(c.Clause.Premises) > 0 {
				rep.Rules++
			}
			if !*showRules {
				continue
			}
			pc, err := factcodec.ClauseFromAST(c.Clause)
			if err != nil {
				rep.Skipped = append(rep.Skipped, checkProblem{File: c.File, Line: c.Line, Message: err.Error()})
				continue
			}
			rep.Clauses = append(rep.Clauses, checkedClause{File: c.File, Line: c.Line, Clause: pc})
		}
	}
	rep.OK = len(rep.Errors) == 0
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		for _, p := range rep.Errors {
			fmt.Fprintln(stdout, "error: "+p.String())
		}
		for _, p := range rep.Warnings {
			fmt.Fprintln(stdout, "warning: "+p.String())
		}
		if rep.OK {
			fmt.Fprintf(stdout, "ok: %d rules, %d intents (%s), %d predicates\n", rep.Rules, len(rep.Intents), strings.Join(rep.Intents, ", "), rep.Predicates)
		} else {
			fmt.Fprintf(stdout, "%d errors\n", len(rep.Errors))
		}
	}
	if !rep.OK {
		return 1
	}
	return 0
}

func (p checkProblem) String() string {
	switch {
	case p.File == "":
		return p.Message
	case p.Line == 0:
		return p.File + ": " + p.Message
	}
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
}

func ruleLayer(rules fs.FS, dir, name string) kernel.Layer {
	if rules == nil {
		rules = os.DirFS(dir)
	}
	sub, _ := fs.Sub(rules, name)
	return kernel.Layer{Name: name, FS: sub, Prefix: dir + "/" + name}
}

// problems splits a start-up error into located problems.
func problems(err error) []checkProblem {
	var les kernel.LoadErrors
	if errors.As(err, &les) {
		out := make([]checkProblem, len(les))
		for i, e := range les {
			out[i] = checkProblem{File: e.File, Line: e.Line, Message: e.Message}
		}
		return out
	}
	var le *kernel.LoadError
	if errors.As(err, &le) {
		return []checkProblem{{File: le.File, Line: le.Line, Message: le.Message}}
	}
	return []checkProblem{{Message: strings.TrimPrefix(err.Error(), "manglecp: ")}}
}
