// Package remote holds the commands that talk to a running MangleCP
// server as its client: manifest, eval, invoke and conformance.
package remote

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/protocol"
)

// clientFlags are the flags every client command has.
type clientFlags struct {
	json  *bool
	token *string
}

// parseClient parses a client command's arguments: the flags of fl and
// the client flags (--json, --token), which it adds, and exactly one
// TARGET (cmdline.ParseTarget).
func parseClient(h cmdline.Help, fl *flag.FlagSet, args []string, stdout, stderr io.Writer) (string, clientFlags, int, bool) {
	cf := clientFlags{
		json:  fl.Bool("json", false, "print machine-readable JSON (errors as MangleCP error envelopes)"),
		token: fl.String("token", "", "credential (bearer or API key); also MANGLECP_AUTH_TOKEN"),
	}
	target, code, ok := cmdline.ParseTarget(h, fl, args, stdout, stderr)
	return target, cf, code, ok
}

// connect dials TARGET (a URL or stdio:COMMAND ...) with --token, else
// MANGLECP_AUTH_TOKEN. When it cannot, it ends spin (if any), prints why
// and returns a nil session with the exit code.
func (cf clientFlags) connect(ctx context.Context, env cmdline.Env, target string, spin *cmdline.Spinner, stdout, stderr io.Writer) (*client.Session, int) {
	s, err := client.Dial(ctx, target, &client.Options{Token: cmp.Or(*cf.token, env.Getenv("MANGLECP_AUTH_TOKEN"))})
	if err != nil {
		if spin != nil {
			spin.End()
		}
		return nil, cmdline.Fail(err, *cf.json, stdout, stderr)
	}
	return s, cmdline.ExitOK
}

// Manifest is `manglecp manifest`: it prints a server's manifest.
func Manifest(ctx context.Context, env cmdline.Env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "manifest", Synopsis: "manglecp manifest TARGET [--json] [--token T]",
		Description: "Prints a server's manifest: status, domain, auth, intents with the facts they need,\nthe facts profile and the limits. --json prints the manifest object itself.",
		Args:        cmdline.TargetArg}
	fl := cmdline.NewFlagSet("manifest")
	target, cf, code, ok := parseClient(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	s, code := cf.connect(ctx, env, target, nil, stdout, stderr)
	if s == nil {
		return code
	}
	defer s.Close()
	m := s.Manifest()
	if *cf.json {
		cmdline.PrintJSON(stdout, m)
		return cmdline.ExitOK
	}
	fmt.Fprintf(stdout, "%s %s: protocol %s, conformance level %d, status %s\n", m.ServerName, m.ServerVersion, m.Protocol.Manglecp, m.Protocol.ConformanceLevel, m.Status)
	fmt.Fprintf(stdout, "domain %s: %s\n", m.Domain.ID, m.Domain.Description)
	if m.Auth.Required {
		fmt.Fprintf(stdout, "auth: required (%s)\n\nintents:\n", strings.Join(m.Auth.Schemes, ", "))
	} else {
		fmt.Fprint(stdout, "auth: off\n\nintents:\n")
	}
	for _, in := range m.Intents {
		fmt.Fprintf(stdout, "  %-16s %s\n", in.Name, in.Description)
		if len(in.RequiredFacts) > 0 {
			fmt.Fprintf(stdout, "  %-16s requires %s\n", "", strings.Join(in.RequiredFacts, ", "))
		}
		if len(in.OptionalFacts) > 0 {
			fmt.Fprintf(stdout, "  %-16s optional %s\n", "", strings.Join(in.OptionalFacts, ", "))
		}
	}
	fmt.Fprintln(stdout, "\npredicates:")
	for _, p := range m.FactsProfile.Predicates {
		args := make([]string, len(p.ArgNames))
		for i, n := range p.ArgNames {
			args[i] = n
			if i < len(p.ArgTypes) {
				args[i] += " " + p.ArgTypes[i]
			}
		}
		temporal := ""
		if p.Temporal {
			temporal = " (temporal)"
		}
		fmt.Fprintf(stdout, "  %s(%s) %s%s\n", p.Predicate, strings.Join(args, ", "), p.Direction, temporal)
	}
	l := m.Limits
	fmt.Fprintf(stdout, "\nlimits: %d bytes/message, %d facts/request, %d derived facts, %d ms\n", l.MaxMessageBytes, l.MaxFactsPerRequest, l.MaxDerivedFacts, l.MaxComputeMS)
	return cmdline.ExitOK
}

// parseEvalTime reads --eval-time (RFC 3339 as its section 5.6 writes
// it: either letter case, leap seconds; or "now", the server's clock);
// "" means none. A bad value is reported in words.
func parseEvalTime(v string) (*protocol.Time, error) {
	if v == "" {
		return nil, nil
	}
	if v == "now" {
		return &protocol.Time{Now: true}, nil // the server's clock
	}
	t, err := protocol.ParseRFC3339(v) // RFC 3339 section 5.6: lowercase t/z, leap seconds
	if err != nil {
		return nil, fmt.Errorf("--eval-time %s is not a time: write RFC 3339, e.g. 2026-02-19T14:30:05Z", cmdline.Quote(v))
	}
	return protocol.NewTime(t), nil
}

// Eval is `manglecp eval`: it evaluates an intent.
func Eval(ctx context.Context, env cmdline.Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "eval", Synopsis: "manglecp eval TARGET --intent NAME [--facts FILE|-] [flags]",
		Description: "Evaluates an intent with facts and prints the macro-tools the server's rules selected,\nwith their macro_ids, arguments, safety and validity (--json: the intent_response payload).\nFacts are a JSON array of {\"pred\", \"args\"} objects; they are checked against the\nmanifest's facts profile before anything is sent.",
		Args:        cmdline.TargetArg}
	fl := cmdline.NewFlagSet("eval")
	intent := fl.String("intent", "", "the intent name (required; see 'manglecp manifest TARGET')")
	factsFile := fl.String("facts", "", "facts: a JSON file, or - for stdin")
	params := fl.String("params", "", "intent params as a JSON object")
	evalTime := fl.String("eval-time", "", "evaluation time, RFC 3339 or now (default: the server's clock)")
	proof := fl.Bool("proof", false, "ask for proof hints")
	disclosure := fl.String("disclosure", "", "full, condensed, minimal or adaptive (the server's default)")
	target, cf, code, ok := parseClient(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if *intent == "" {
		return cmdline.UsageError(stderr, h, "--intent is required")
	}
	req := &protocol.IntentRequest{Intent: protocol.Intent{Name: *intent}, Facts: []protocol.Fact{}}
	if *params != "" {
		if err := json.Unmarshal([]byte(*params), &req.Intent.Params); err != nil || req.Intent.Params == nil {
			return cmdline.UsageError(stderr, h, "--params must be a JSON object, e.g. {\"key\": \"value\"}")
		}
	}
	if *factsFile != "" {
		facts, err := cmdline.ReadFacts(*factsFile, stdin)
		if err != nil {
			return cmdline.UsageError(stderr, h, "%v", err)
		}
		req.Facts = facts
	}
	var err error
	if req.EvalTime, err = parseEvalTime(*evalTime); err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	switch *disclosure {
	case "", protocol.DisclosureFull, protocol.DisclosureCondensed, protocol.DisclosureMinimal, protocol.DisclosureAdaptive:
	default:
		return cmdline.UsageError(stderr, h, "--disclosure %s: use full, condensed, minimal or adaptive", cmdline.Quote(*disclosure))
	}
	if *proof || *disclosure != "" {
		req.Options = &protocol.Options{IncludeProofHints: *proof, DisclosurePreference: *disclosure}
	}
	spin := cmdline.StartSpinner(stderr, "evaluating "+*intent)
	s, code := cf.connect(ctx, env, target, spin, stdout, stderr)
	if s == nil {
		return code
	}
	defer s.Close()
	if m := s.Manifest(); m != nil && len(m.Intents) > 0 {
		var names []string
		known := false
		for _, in := range m.Intents {
			names = append(names, in.Name)
			known = known || in.Name == *intent
		}
		if !known {
			spin.End()
			hint := ""
			if c := protocol.Closest(*intent, names); c != "" {
				hint = fmt.Sprintf("; did you mean %q?", c)
			}
			return cmdline.UsageError(stderr, h, "the server has no intent %s%s (its intents: %s)", cmdline.Quote(*intent), hint, strings.Join(names, ", "))
		}
	}
	resp, err := s.Evaluate(ctx, req)
	spin.End()
	if err != nil {
		return cmdline.Fail(err, *cf.json, stdout, stderr)
	}
	if *cf.json {
		cmdline.PrintJSON(stdout, resp)
		return cmdline.ExitOK
	}
	fmt.Fprintf(stdout, "%d macro-tools for %s (eval_time %s, %d ms)\n", len(resp.MacroTools), *intent, resp.EvalTimeUsed.Format(time.RFC3339), resp.EvalDurationMS)
	for _, m := range resp.MacroTools {
		fmt.Fprintf(stdout, "\n%s  [%s]\n  macro_id %s\n", m.Name, m.DisclosureLevel, m.MacroID)
		if m.Metadata != nil {
			fmt.Fprintf(stdout, "  score %d (%s)\n", m.Metadata.Score, m.Metadata.SelectionPhase)
		}
		if m.Description != "" {
			fmt.Fprintf(stdout, "  %s\n", m.Description)
		}
		if props, ok := m.InputSchema["properties"].(map[string]any); ok {
			names := make([]string, 0, len(props))
			for n := range props {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				p, _ := props[n].(map[string]any)
				line := fmt.Sprintf("  arg %s: %v", n, p["type"])
				if e, ok := p["enum"]; ok {
					line += fmt.Sprintf(" one of %v", e)
				}
				fmt.Fprintln(stdout, line)
			}
		}
		if m.Safety != nil {
			fmt.Fprintf(stdout, "  side effects %v, confirmation %v\n", m.Safety.SideEffects, m.Safety.RequiresUserConfirmation)
		}
		if m.Validity != nil && m.Validity.ExpiresAt != nil {
			fmt.Fprintf(stdout, "  expires %s\n", m.Validity.ExpiresAt.Format(time.RFC3339))
		}
	}
	for _, w := range resp.Warnings {
		fmt.Fprintf(stdout, "\nwarning %s: %s\n", w.Code, w.Message)
	}
	if ph := resp.ProofHints; ph != nil {
		fmt.Fprintln(stdout, "\nproof hints:")
		for _, d := range ph.Derivations {
			fmt.Fprintf(stdout, "  %s by %s (score %d): %s; %d supporting facts\n", d.MacroID, d.SelectedBy, d.Score, strings.Join(d.RuleChain, " <- "), len(d.SupportingFacts))
		}
		for _, e := range ph.Excluded {
			fmt.Fprintf(stdout, "  excluded %s in %s: %s\n", e.Candidate, e.ExcludedBy, e.Reason)
		}
	}
	return cmdline.ExitOK
}

// Invoke is `manglecp invoke`: it invokes a macro-tool.
func Invoke(ctx context.Context, env cmdline.Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "invoke", Synopsis: "manglecp invoke TARGET --macro ID [--args JSON] [--confirm] [flags]",
		Description: "Invokes a macro-tool that an evaluation returned and prints its result, state delta and\nsuggested next intents (--json: the invoke_response payload). A tool that needs the user's\nconfirmation is confirmed with --confirm, or, on a terminal, by answering the question\nthe command asks; the token is signed with the server's confirmation key (--confirm-key,\nMANGLECP_CONFIRMATION_KEY, or the key file a local 'manglecp serve' created: " + cmdline.Keys(env).Hint() + ").",
		Args:        cmdline.TargetArg}
	fl := cmdline.NewFlagSet("invoke")
	macro := fl.String("macro", "", "the macro_id (required)")
	argsJSON := fl.String("args", "{}", "the arguments as a JSON object")
	evalTime := fl.String("eval-time", "", "evaluation time, RFC 3339 or now")
	confirm := fl.Bool("confirm", false, "confirm a tool that needs it without asking")
	confirmKey := fl.String("confirm-key", "", "the server's confirmation key (default: MANGLECP_CONFIRMATION_KEY, then the local key file)")
	target, cf, code, ok := parseClient(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if *macro == "" {
		return cmdline.UsageError(stderr, h, "--macro is required (a macro_id from 'manglecp eval')")
	}
	req := &protocol.InvokeRequest{MacroID: *macro}
	if err := json.Unmarshal([]byte(*argsJSON), &req.Args); err != nil || req.Args == nil {
		return cmdline.UsageError(stderr, h, "--args must be a JSON object, e.g. {\"request_id\": \"r42\"}")
	}
	var err error
	if req.EvalTime, err = parseEvalTime(*evalTime); err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	key := func() ([]byte, error) {
		if *confirmKey != "" {
			return []byte(*confirmKey), nil
		}
		if k := env.Getenv("MANGLECP_CONFIRMATION_KEY"); k != "" {
			return []byte(k), nil
		}
		return cmdline.Keys(env).Read()
	}
	var callOpts []client.CallOption
	if *confirm {
		k, err := key()
		if err != nil {
			return cmdline.UsageError(stderr, h, "--confirm needs the server's confirmation key: %v", err)
		}
		callOpts = append(callOpts, client.WithConfirmation(k, 2*time.Minute))
	}
	spin := cmdline.StartSpinner(stderr, "invoking "+*macro)
	callOpts = append(callOpts, client.WithProgress(spin.Note))
	s, code := cf.connect(ctx, env, target, spin, stdout, stderr)
	if s == nil {
		return code
	}
	defer s.Close()
	out, err := s.Invoke(ctx, req, callOpts...)
	spin.End()
	if !*confirm && !*cf.json && errors.Is(err, &protocol.Error{Code: protocol.CodeConfirmationRequired}) && isTerminal(stdin) && isTerminal(stderr) {
		yes, perr := askConfirmation(stdin, stderr, *macro, req.Args)
		if perr != nil || !yes {
			fmt.Fprintln(stderr, "manglecp invoke: not confirmed; nothing was run")
			return cmdline.ExitProtocol
		}
		k, kerr := key()
		if kerr != nil {
			fmt.Fprintf(stderr, "manglecp invoke: cannot sign the confirmation: %v\n", kerr)
			return cmdline.ExitUsage
		}
		callOpts = append(callOpts, client.WithConfirmation(k, 2*time.Minute))
		spin = cmdline.StartSpinner(stderr, "invoking "+*macro)
		out, err = s.Invoke(ctx, req, callOpts...)
		spin.End()
	}
	if !*confirm && errors.Is(err, &protocol.Error{Code: protocol.CodeConfirmationRequired}) {
		// Off a terminal (or with --json) nobody was asked: the server's
		// "send confirmation_token" is for protocol clients; here the way
		// is a flag.
		tool, _, _ := strings.Cut(*macro, "-")
		hint := fmt.Sprintf("%s needs the user's confirmation: run the command again with --confirm (the token is signed with the server's confirmation key: --confirm-key, MANGLECP_CONFIRMATION_KEY, or the key file a local 'manglecp serve' created: %s)", tool, cmdline.Keys(env).Hint())
		if *cf.json {
			_ = cmdline.Fail(err, true, stdout, stderr)
			fmt.Fprintf(stderr, "manglecp invoke: %s\n", hint)
		} else {
			fmt.Fprintf(stderr, "error %s: %s\n", protocol.CodeConfirmationRequired, hint)
		}
		return cmdline.ExitProtocol
	}
	if err != nil {
		return cmdline.Fail(err, *cf.json, stdout, stderr)
	}
	if *cf.json {
		cmdline.PrintJSON(stdout, out)
		return cmdline.ExitOK
	}
	fmt.Fprintf(stdout, "%s (%d ms)\n\nresult:\n", out.Observability.Summary, out.Observability.DurationMS)
	cmdline.PrintJSON(stdout, out.Result)
	for _, f := range out.StateDelta.Retract {
		fmt.Fprintf(stdout, "retract %s\n", formatFact(f))
	}
	for _, f := range out.StateDelta.Assert {
		fmt.Fprintf(stdout, "assert  %s (%s)\n", formatFact(f), f.Category)
	}
	if out.Next != nil {
		for _, si := range out.Next.SuggestedIntents {
			fmt.Fprintf(stdout, "next: %s: %s\n", si.Name, si.Description)
		}
	}
	return cmdline.ExitOK
}

// formatFact writes a fact as people read Datalog: pred("a", 1, _), with
// JSON values and _ for a wildcard (null).
func formatFact(f protocol.Fact) string {
	var b strings.Builder
	b.WriteString(f.Pred)
	b.WriteByte('(')
	if f.NamedArgs != nil {
		keys := make([]string, 0, len(f.NamedArgs))
		for k := range f.NamedArgs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k + ": " + formatValue(f.NamedArgs[k]))
		}
	}
	for i, a := range f.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(formatValue(a))
	}
	b.WriteByte(')')
	return b.String()
}

func formatValue(v any) string {
	if v == nil {
		return "_"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

// isTerminal reports whether v is a terminal (a character device).
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// askConfirmation shows what an invocation will do and asks the user;
// only an explicit "y" or "yes" confirms.
func askConfirmation(in io.Reader, out io.Writer, macroID string, args map[string]any) (bool, error) {
	tool, _, _ := strings.Cut(macroID, "-")
	raw, _ := json.Marshal(args)
	fmt.Fprintf(out, "%s needs your confirmation before it runs.\n  macro_id %s\n  args     %s\nRun it? [y/N] ", tool, macroID, raw)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
