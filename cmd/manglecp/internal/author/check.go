package author

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/internal/plural"
	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/kernel/factcodec"
	"github.com/manglecp/manglecp/protocol"
)

// checkReport is the JSON form of `manglecp check`.
type checkReport struct {
	OK         bool            `json:"ok"`
	Errors     []checkProblem  `json:"errors"`
	Warnings   []checkProblem  `json:"warnings"`
	Info       []checkProblem  `json:"info,omitempty"`
	CheckedAs  string          `json:"checked_as,omitempty"`
	Actions    []checkAction   `json:"actions,omitempty"`
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

// checkAction is an action the rules name (a tool_action fact), where the
// first fact naming it is.
type checkAction struct {
	Name string `json:"name"`
	Tool string `json:"tool"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// checkedClause is a rule in the structured clause format of Spec 03
// section 7.
type checkedClause struct {
	File   string          `json:"file"`
	Line   int             `json:"line"`
	Clause protocol.Clause `json:"clause"`
}

// actionList is the --actions flag: comma-separated action names; set
// tells an empty list apart from no flag.
type actionList struct {
	names []string
	set   bool
}

func (a *actionList) String() string { return strings.Join(a.names, ",") }

func (a *actionList) Set(v string) error {
	a.set = true
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			a.names = append(a.names, n)
		}
	}
	return nil
}

// externalList is the repeatable --external NAME/ARITY flag: external
// predicates the Go program computes (Domain.External).
type externalList map[string]int

func (e externalList) String() string { return "" }

func (e externalList) Set(v string) error {
	name, arity, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(arity)
	if !ok || name == "" || err != nil || n < 0 {
		return fmt.Errorf("want NAME/ARITY, e.g. assigned/1, got %q", v)
	}
	e[name] = n
	return nil
}

// Check is `manglecp check DIR`: it loads DIR exactly as `serve --rules DIR` does and reports every
// problem with file and line (exit 1), including rules that would fail
// every evaluation reaching them (comparisons that cannot succeed,
// unbounded recursion, cyclic tool_requires), evaluates the domain's sample
// requests on the rules as a reload would (a failing one is an error), then
// prints the lint warnings for Mangle v0.5.0 pitfalls (exit 0 when there are
// only warnings) and, as information, the strata the engine evaluates.
//
// Which Go program the rules belong to decides what their actions are
// checked against: --actions names it; without it, rules whose actions a
// built-in domain registers are checked as that domain's (its external
// predicates and sample requests too), and other rules as a custom
// domain's, whose needed actions are listed as information.
func Check(ctx context.Context, _ cmdline.Env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "check", Synopsis: "manglecp check DIR [--actions A,B,...] [--external NAME/ARITY]... [--json [--show-rules]]",
		Description: "Loads the rules of DIR (DIR/policy/*.mg and DIR/domain/*.mg) exactly as\n'manglecp serve --rules DIR' does and prints every problem as file:line: message (exit 1),\nincluding rules that would fail every evaluation (comparisons that cannot succeed,\nunbounded recursion, cyclic tool_requires), then runs the domain's sample requests on\nthe rules as a reload would (one that fails is an error), then prints warnings for\nMangle v0.5.0 pitfalls (exit 0 when there are only warnings) and, as information,\nthe rules the kernel hands to the Mangle engine, 5-10 times slower, and why.\n\nThe actions the rules name (tool_action facts) must be registered by the Go program\nserving them. With --actions, each must be in the list (an error at the fact's\nfile:line otherwise). Without it, rules whose actions the browser or workspace domain\nregisters are checked as that domain's, with its external predicates and samples;\nother rules are a custom domain's: check lists the actions they need (info), and runs\nits sample requests, DIR/*.json (intent_request envelopes, as Domain.Samples). A custom\ndomain's external predicates (computed by Go, Domain.External) are declared with\n--external NAME/ARITY.",
		Args:        "DIR  a directory with policy/ and domain/ subdirectories of .mg files"}
	fl := cmdline.NewFlagSet("check")
	asJSON := fl.Bool("json", false, "print the report as JSON")
	showRules := fl.Bool("show-rules", false, "with --json: include every rule of DIR in the clause format of Spec 03 section 7")
	var actions actionList
	fl.Var(&actions, "actions", "the `names` of the actions your Go program registers, comma-separated: every action the rules name must be one of them")
	externals := externalList{}
	fl.Var(externals, "external", "an external predicate your Go program computes (Domain.External), as `NAME/ARITY`; repeat for several")
	pos, code, ok := cmdline.ParseArgs(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmdline.UsageError(stderr, h, "one DIR expected, got %d arguments", len(pos))
	}
	if *showRules && !*asJSON {
		return cmdline.UsageError(stderr, h, "--show-rules needs --json (the rules are printed in the JSON report)")
	}
	dir := pos[0]
	rep := checkReport{Errors: []checkProblem{}, Warnings: []checkProblem{}}
	layers := []kernel.Layer{ruleLayer(dir, "policy"), ruleLayer(dir, "domain")}
	d, opts, err := checkDomain(dir, layers, actions, externals, &rep)
	if err == nil && d.Close != nil {
		defer func() { _ = d.Close() }() // e.g. the browser domain's Chromium, should a sample have started it
	}
	if err == nil {
		var srv *manglecp.Server
		// NewServer checks the samples as a start does, CheckSamples
		// evaluates every one as a reload does (a failing one is a
		// *manglecp.SampleError, reported by problems).
		if srv, err = manglecp.NewServer(d, opts); err == nil {
			if serr := srv.CheckSamples(ctx); serr != nil {
				rep.Errors = append(rep.Errors, sampleProblem(serr, dir, rep.CheckedAs)...)
			}
			m := srv.Manifest()
			rep.Predicates = len(m.FactsProfile.Predicates)
			for _, in := range m.Intents {
				rep.Intents = append(rep.Intents, in.Name)
			}
		}
	}
	if err != nil {
		rep.Errors = sampleProblem(err, dir, rep.CheckedAs)
	}
	if err == nil {
		rep.Info = append(rep.Info, engineStrata(d, layers)...)
	}
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
		for _, p := range rep.Info {
			fmt.Fprintln(stdout, "info: "+p.String())
		}
		if rep.OK {
			fmt.Fprintf(stdout, "ok: %d rules, %d intents (%s), %d predicates\n", rep.Rules, len(rep.Intents), strings.Join(rep.Intents, ", "), rep.Predicates)
		} else {
			fmt.Fprintln(stdout, plural.S(len(rep.Errors), "error"))
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

func ruleLayer(dir, name string) kernel.Layer {
	return kernel.Layer{Name: name, FS: os.DirFS(filepath.Join(dir, name)), Prefix: dir + "/" + name}
}

// builtinDomains are the domains this binary registers actions for, in the
// order check tries them (browser, the default of serve, first).
var builtinDomains = []struct {
	name string
	open func() (manglecp.Domain, error)
}{
	{"browser", func() (manglecp.Domain, error) { return browser.Domain(browser.Config{}), nil }},
	// The workspace domain needs a root to open; check never runs its
	// actions, and its external predicates only for sample requests.
	{"workspace", func() (manglecp.Domain, error) {
		ws, err := workspace.Open(workspace.Config{Roots: []string{os.TempDir()}})
		if err != nil {
			return manglecp.Domain{}, err
		}
		return ws.Domain(), nil
	}},
}

// checkDomain returns the domain check loads DIR as, and records in rep
// which one it is and the actions the rules name: a custom domain
// registering the --actions names when given; otherwise, without
// --external, the first built-in domain registering every action the rules
// name (as `serve --rules DIR` would serve it); otherwise a custom domain
// registering exactly what the rules name, with those actions listed as
// information. A custom domain has the --external predicates.
func checkDomain(dir string, layers []kernel.Layer, given actionList, externals externalList, rep *checkReport) (manglecp.Domain, *manglecp.Options, error) {
	if st, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return manglecp.Domain{}, nil, fmt.Errorf("%s does not exist", dir)
	} else if err != nil {
		return manglecp.Domain{}, nil, err
	} else if !st.IsDir() {
		return manglecp.Domain{}, nil, fmt.Errorf("%s is not a directory", dir)
	}
	refs, err := kernel.Actions(layers...)
	if err != nil {
		return manglecp.Domain{}, nil, err
	}
	for _, r := range refs {
		rep.Actions = append(rep.Actions, checkAction{Name: r.Name, Tool: r.Tool, File: r.File, Line: r.Line})
	}
	custom := func(names []string) (manglecp.Domain, *manglecp.Options, error) {
		rep.CheckedAs = "custom"
		// A custom domain's sample requests are DIR/*.json (the
		// scaffold's triage.json): check runs them as the server would.
		d := manglecp.Domain{ID: "custom", Rules: os.DirFS(dir), RulesName: dir, Samples: os.DirFS(dir), Actions: map[string]manglecp.ActionSpec{},
			External: map[string]manglecp.External{}}
		for name, arity := range externals {
			d.External[name] = manglecp.External{Arity: arity, Compute: func(context.Context, *manglecp.ExternalInput) ([][]any, error) { return nil, nil }}
		}
		for _, n := range names {
			d.Actions[n] = manglecp.ActionSpec{Run: func(context.Context, *manglecp.Call) (*manglecp.Outcome, error) {
				return nil, errors.New("manglecp check runs no actions")
			}}
		}
		return d, checkOptions(), nil
	}
	if given.set {
		return custom(given.names)
	}

	var partial []string
	if len(refs) > 0 && len(externals) == 0 { // --external: the rules are the program's computing those
		for _, b := range builtinDomains {
			d, err := b.open()
			if err != nil {
				continue
			}
			var known int
			for _, r := range refs {
				if _, ok := d.Actions[r.Name]; ok {
					known++
				}
			}
			if known < len(refs) && d.Close != nil {
				_ = d.Close()
			}
			if known == len(refs) {
				rep.CheckedAs = b.name
				rep.Info = append(rep.Info, checkProblem{Message: fmt.Sprintf("checked as the %s domain's rules (its actions, external predicates and sample requests): it registers every action they name", b.name)})
				d.Rules, d.RulesName = os.DirFS(dir), dir
				return d, checkOptions(), nil
			}
			if known > 0 {
				partial = append(partial, b.name)
			}
		}
	}
	names := refNames(refs)
	switch {
	case len(refs) == 0:
		rep.Info = append(rep.Info, checkProblem{Message: "the rules name no actions (no tool_action facts)"})
	default:
		rep.Info = append(rep.Info, checkProblem{Message: fmt.Sprintf(
			"checked as a custom domain's rules; check cannot know your Go program's actions, so these are the ones the rules need (check them with --actions NAME,...): %s", strings.Join(names, ", "))})
		for _, r := range refs {
			rep.Info = append(rep.Info, checkProblem{File: r.File, Line: r.Line, Message: fmt.Sprintf("action %q (tool %q)", r.Name, r.Tool)})
		}
	}
	for _, b := range partial {
		rep.Info = append(rep.Info, checkProblem{Message: fmt.Sprintf("some of these actions are the %s domain's but not all: if these are its rules, a tool_action above names an action it does not register", b)})
	}
	return custom(names)
}

// checkOptions are the server options of a check: it invokes nothing, so
// it needs no confirmation key (and creates no key file), and its
// problems are the report, not log lines.
func checkOptions() *manglecp.Options {
	return &manglecp.Options{ConfirmationKey: []byte("manglecp check confirms nothing"), Logger: slog.New(slog.DiscardHandler)}
}

func refNames(refs []kernel.ActionRef) []string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.Name
	}
	return names
}

// sampleProblem is problems, with a custom domain's sample named by its
// path (its samples are DIR/*.json).
func sampleProblem(err error, dir, checkedAs string) []checkProblem {
	out := problems(err)
	var se *manglecp.SampleError
	if errors.As(err, &se) && checkedAs == "custom" {
		out[0].File = filepath.Join(dir, se.Sample)
	}
	return out
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
	var se *manglecp.SampleError
	if errors.As(err, &se) {
		msg := strings.TrimPrefix(se.Error(), "manglecp: ")
		_, msg, _ = strings.Cut(msg, ": ") // the file and line are fields
		return []checkProblem{{File: se.Sample, Line: se.Line, Message: msg}}
	}
	return []checkProblem{{Message: strings.TrimPrefix(err.Error(), "manglecp: ")}}
}

// engineStrata notes, at the rule that is the reason, the strata of DIR's rules
// that the kernel hands to the Mangle engine instead of evaluating them
// itself, and why (docs/write-a-domain.md section 6).
func engineStrata(d manglecp.Domain, layers []kernel.Layer) []checkProblem {
	var externals []kernel.External
	for name, e := range d.External {
		externals = append(externals, kernel.External{Name: name, Arity: e.Arity})
	}
	prog, err := kernel.LoadWithExternals(externals, layers...)
	if err != nil {
		return nil // reported as errors already
	}
	clauses, _ := kernel.SourceClauses(layers...)
	var out []checkProblem
	for _, st := range prog.EngineStrata() {
		p := checkProblem{Message: fmt.Sprintf("the Mangle engine evaluates %s, 5-10 times slower per fact than the kernel: for %s, %s",
			strings.Join(st.Predicates, ", "), st.Predicate, st.Reason)}
		// At the rule that is the reason, else the predicate's first rule.
		for _, c := range clauses {
			if fmt.Sprintf("%s/%d", c.Clause.Head.Predicate.Symbol, c.Clause.Head.Predicate.Arity) != st.Predicate || len(c.Clause.Premises) == 0 {
				continue
			}
			if p.File == "" || c.Clause.String() == st.Rule {
				p.File, p.Line = c.File, c.Line
			}
			if c.Clause.String() == st.Rule {
				break
			}
		}
		out = append(out, p)
	}
	return out
}
