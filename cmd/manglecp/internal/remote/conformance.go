package remote

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/conformance"
)

const conformanceUsage = "manglecp conformance TARGET [--level 1|2|3] [--json] [--fixture FILE|browser|workspace] [--token T] [--only IDS] [--timeout D]"

// Conformance is `manglecp conformance`: it runs the conformance suite (package conformance) against
// TARGET and prints the report: one line per check for people, or the JSON
// report with --json. Exit codes: 0 no check failed, 1 a check failed,
// 2 usage, 3 the target could not be reached.
func Conformance(ctx context.Context, env cmdline.Env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "conformance", Synopsis: conformanceUsage,
		Description: "Runs the MangleCP conformance suite (Spec 10 section 6.1's categories, the determinism\nand gas tests) against a server and prints one line per check with PASS, FAIL or SKIP.\nExit 1 when a check fails.",
		Args:        cmdline.TargetArg}
	fl := cmdline.NewFlagSet("conformance")
	level := fl.Int("level", 0, "conformance level to check, 1, 2 or 3 (default: the server's declared level)")
	fixture := fl.String("fixture", "", "fixture for domain-specific checks: a JSON file, or a built-in name ("+strings.Join(conformance.BuiltinFixtures(), ", ")+")")
	only := fl.String("only", "", "comma-separated check IDs or categories to run (default: all)")
	timeout := fl.Duration("timeout", 30*time.Second, "time limit of each request")
	target, cf, code, ok := parseClient(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if *level < 0 || *level > 3 {
		fmt.Fprintf(stderr, "manglecp conformance: --level %d: use 1, 2 or 3\n", *level)
		return cmdline.ExitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "manglecp conformance: --timeout must be positive")
		return cmdline.ExitUsage
	}
	opts := &conformance.Options{Level: *level, Token: *cf.token, RequestTimeout: *timeout}
	if opts.Token == "" {
		opts.Token = env.Getenv("MANGLECP_AUTH_TOKEN")
	}
	if *fixture != "" {
		f, err := conformance.LoadFixture(*fixture)
		if err != nil {
			fmt.Fprintf(stderr, "manglecp conformance: --fixture: %v\n", err)
			return cmdline.ExitUsage
		}
		opts.Fixture = f
	}
	if *only != "" {
		known := map[string]bool{}
		for _, c := range conformance.Catalogue() {
			known[c.ID], known[c.Category] = true, true
		}
		for _, id := range strings.Split(*only, ",") {
			id = strings.TrimSpace(id)
			if !known[id] {
				fmt.Fprintf(stderr, "manglecp conformance: --only: no check or category %q\n", id)
				return cmdline.ExitUsage
			}
			opts.Checks = append(opts.Checks, id)
		}
	}
	sp := cmdline.StartSpinner(stderr, "running the conformance suite")
	rep, err := conformance.Run(ctx, target, opts)
	sp.End()
	if err != nil {
		return cmdline.Fail(err, *cf.json, stdout, stderr)
	}
	if *cf.json {
		cmdline.PrintJSON(stdout, rep)
	} else {
		fmt.Fprint(stdout, rep.Format())
	}
	if !rep.OK() {
		return cmdline.ExitProtocol
	}
	return cmdline.ExitOK
}
