package cli

import (
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
	"github.com/manglecp/manglecp/protocol"
)

// Exit codes of the client commands (manifest, eval, invoke, conformance):
//
//	0  success
//	1  the server answered with an error (JSON mode prints its envelope)
//	2  usage error (bad flags or arguments)
//	3  the server could not be reached or did not speak MangleCP
const (
	exitOK        = 0
	exitProtocol  = 1
	exitUsage     = 2
	exitTransport = 3
)

// clientFlags are the flags every client command has.
type clientFlags struct {
	json  *bool
	token *string
}

func addClientFlags(fl *flag.FlagSet) clientFlags {
	return clientFlags{
		json:  fl.Bool("json", false, "print machine-readable JSON (errors as MangleCP error envelopes)"),
		token: fl.String("token", "", "credential (bearer or API key); also MANGLECP_AUTH_TOKEN"),
	}
}

// dial connects to TARGET (a URL or stdio:COMMAND ...).
func dial(ctx context.Context, target string, cf clientFlags, progress func(protocol.Progress)) (*client.Session, error) {
	token := *cf.token
	if token == "" {
		token = os.Getenv("MANGLECP_AUTH_TOKEN")
	}
	return client.Dial(ctx, target, &client.Options{Token: token, Progress: progress})
}

// parseTarget splits "TARGET [flags]" where flags may also come first.
func parseTarget(fl *flag.FlagSet, args []string, stderr io.Writer, usage string) (string, bool) {
	if err := fl.Parse(args); err != nil {
		return "", false
	}
	rest := fl.Args()
	// A quoted stdio target ("stdio:manglecp serve --stdio") is one argument
	// and may be followed by flags; an unquoted one takes the rest of the
	// line, so its flags must come before it.
	quotedStdio := len(rest) >= 1 && strings.HasPrefix(rest[0], "stdio:") && strings.Contains(rest[0], " ")
	if len(rest) >= 1 && (!strings.HasPrefix(rest[0], "stdio:") || quotedStdio) {
		// Flags after the target: parse them too.
		if err := fl.Parse(rest[1:]); err != nil {
			return "", false
		}
		if fl.NArg() != 0 {
			fmt.Fprintf(stderr, "usage: %s\n", usage)
			return "", false
		}
		return rest[0], true
	}
	if len(rest) >= 1 { // stdio:COMMAND ARGS... takes the rest of the line
		return strings.Join(rest, " "), true
	}
	fmt.Fprintf(stderr, "usage: %s\n", usage)
	return "", false
}

// fail reports err and returns the exit code: a server's error answer is
// printed as its envelope in JSON mode.
func fail(err error, asJSON bool, stdout, stderr io.Writer) int {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Payload != nil {
		if asJSON {
			raw, _ := protocol.ErrorEnvelope(ce.RequestID, ce.Payload).Encode()
			fmt.Fprintln(stdout, string(raw))
		} else {
			fmt.Fprintf(stderr, "error %s: %s\n", ce.Payload.Code, ce.Payload.Message)
			if d := ce.Payload.Details; d != nil {
				for _, v := range d.Violations {
					fmt.Fprintf(stderr, "  fact %d (%s): %s\n", v.FactIndex, v.Predicate, v.Message)
				}
				for _, e := range d.SchemaErrors {
					fmt.Fprintf(stderr, "  %s: %s (%s)\n", e.Path, e.Message, e.Keyword)
				}
				if b := d.Budget; b != nil {
					fmt.Fprintf(stderr, "  budget: %d of %d %s\n", b.Consumed, b.Limit, b.Unit)
				}
			}
		}
		return exitProtocol
	}
	if asJSON {
		raw, _ := protocol.ErrorEnvelope("", protocol.Errorf("x-transport_error", "%s", err.Error())).Encode()
		fmt.Fprintln(stdout, string(raw))
	} else {
		fmt.Fprintf(stderr, "manglecp: %v\n", err)
	}
	return exitTransport
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// spinner shows that a long operation runs, when stderr is a terminal.
type spinner struct {
	w    io.Writer
	on   bool
	stop chan struct{}
	done chan struct{}
}

func startSpinner(w io.Writer, what string) *spinner {
	s := &spinner{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			s.on = true
		}
	}
	if !s.on {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		frames := `|/-\`
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.stop:
				fmt.Fprint(s.w, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(s.w, "\r%c %s", frames[i%len(frames)], what)
			}
		}
	}()
	return s
}

func (s *spinner) note(p protocol.Progress) {
	if s.on {
		fmt.Fprintf(s.w, "\r\033[K  %s %s\n", p.Status, p.Detail)
	}
}

func (s *spinner) end() {
	if s.on {
		close(s.stop)
	}
	<-s.done
}

// manifestCmd prints a server's manifest.
func manifestCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("manifest", flag.ContinueOnError)
	fl.SetOutput(stderr)
	cf := addClientFlags(fl)
	target, ok := parseTarget(fl, args, stderr, "manglecp manifest TARGET [--json] [--token T]")
	if !ok {
		return exitUsage
	}
	s, err := dial(ctx, target, cf, nil)
	if err != nil {
		return fail(err, *cf.json, stdout, stderr)
	}
	defer s.Close()
	m := s.Manifest()
	if *cf.json {
		printJSON(stdout, m)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s %s: protocol %s, conformance level %d, status %s\n", m.ServerName, m.ServerVersion, m.Protocol.Manglecp, m.Protocol.ConformanceLevel, m.Status)
	fmt.Fprintf(stdout, "domain %s: %s\n", m.Domain.ID, m.Domain.Description)
	fmt.Fprintf(stdout, "auth required: %v %v\n\nintents:\n", m.Auth.Required, m.Auth.Schemes)
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
	return exitOK
}

// readFacts reads a JSON array of facts, or an object with a "facts"
// array, from a file or "-" (stdin).
func readFacts(path string, stdin io.Reader) ([]protocol.Fact, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(stdin)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	var facts []protocol.Fact
	if err := json.Unmarshal(raw, &facts); err == nil {
		return facts, nil
	}
	var wrapped struct {
		Facts []protocol.Fact `json:"facts"`
	}
	if err := json.Unmarshal(raw, &wrapped); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of facts or {\"facts\": [...]}: %v", path, err)
	}
	return wrapped.Facts, nil
}

// parseEvalTime reads --eval-time (RFC 3339, or "now" for the server's
// clock); "" means none. It reports a
// bad value on stderr and returns ok false.
func parseEvalTime(v, cmd string, stderr io.Writer) (*protocol.Time, bool) {
	if v == "" {
		return nil, true
	}
	if v == "now" {
		return &protocol.Time{Now: true}, true // the server's clock
	}
	t, err := protocol.ParseRFC3339(v) // RFC 3339 section 5.6: lowercase t/z, leap seconds
	if err != nil {
		fmt.Fprintf(stderr, "manglecp %s: --eval-time: %v\n", cmd, err)
		return nil, false
	}
	return protocol.NewTime(t), true
}

// evalCmd evaluates an intent.
func evalCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("eval", flag.ContinueOnError)
	fl.SetOutput(stderr)
	cf := addClientFlags(fl)
	intent := fl.String("intent", "", "the intent name (required)")
	factsFile := fl.String("facts", "", "facts: a JSON file, or - for stdin")
	params := fl.String("params", "", "intent params as a JSON object")
	evalTime := fl.String("eval-time", "", "evaluation time, RFC 3339 or now")
	proof := fl.Bool("proof", false, "ask for proof hints")
	disclosure := fl.String("disclosure", "", "full, condensed, minimal or adaptive (the server's default)")
	target, ok := parseTarget(fl, args, stderr, "manglecp eval TARGET --intent NAME [--facts FILE|-] [--eval-time T] [--proof] [--json]")
	if !ok {
		return exitUsage
	}
	if *intent == "" {
		fmt.Fprintln(stderr, "manglecp eval: --intent is required")
		return exitUsage
	}
	req := &protocol.IntentRequest{Intent: protocol.Intent{Name: *intent}, Facts: []protocol.Fact{}}
	if *params != "" {
		if err := json.Unmarshal([]byte(*params), &req.Intent.Params); err != nil {
			fmt.Fprintf(stderr, "manglecp eval: --params: %v\n", err)
			return exitUsage
		}
	}
	if *factsFile != "" {
		facts, err := readFacts(*factsFile, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "manglecp eval: %v\n", err)
			return exitUsage
		}
		req.Facts = facts
	}
	if req.EvalTime, ok = parseEvalTime(*evalTime, "eval", stderr); !ok {
		return exitUsage
	}
	if *proof || *disclosure != "" {
		req.Options = &protocol.Options{IncludeProofHints: *proof, DisclosurePreference: *disclosure}
	}
	spin := startSpinner(stderr, "evaluating "+*intent)
	s, err := dial(ctx, target, cf, nil)
	if err != nil {
		spin.end()
		return fail(err, *cf.json, stdout, stderr)
	}
	defer s.Close()
	resp, err := s.Evaluate(ctx, req)
	spin.end()
	if err != nil {
		return fail(err, *cf.json, stdout, stderr)
	}
	if *cf.json {
		printJSON(stdout, resp)
		return exitOK
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
	return exitOK
}

// invokeCmd invokes a macro-tool.
func invokeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("invoke", flag.ContinueOnError)
	fl.SetOutput(stderr)
	cf := addClientFlags(fl)
	macro := fl.String("macro", "", "the macro_id (required)")
	argsJSON := fl.String("args", "{}", "the arguments as a JSON object")
	evalTime := fl.String("eval-time", "", "evaluation time, RFC 3339 or now")
	confirm := fl.Bool("confirm", false, "confirm a tool that needs it: sign a confirmation token with --confirm-key or MANGLECP_CONFIRMATION_KEY")
	confirmKey := fl.String("confirm-key", "", "the server's confirmation key")
	target, ok := parseTarget(fl, args, stderr, "manglecp invoke TARGET --macro ID --args JSON [--confirm] [--json]")
	if !ok {
		return exitUsage
	}
	if *macro == "" {
		fmt.Fprintln(stderr, "manglecp invoke: --macro is required")
		return exitUsage
	}
	req := &protocol.InvokeRequest{MacroID: *macro}
	if err := json.Unmarshal([]byte(*argsJSON), &req.Args); err != nil || req.Args == nil {
		fmt.Fprintf(stderr, "manglecp invoke: --args must be a JSON object: %v\n", err)
		return exitUsage
	}
	if req.EvalTime, ok = parseEvalTime(*evalTime, "invoke", stderr); !ok {
		return exitUsage
	}
	var callOpts []client.CallOption
	if *confirm {
		key := *confirmKey
		if key == "" {
			key = os.Getenv("MANGLECP_CONFIRMATION_KEY")
		}
		if key == "" {
			fmt.Fprintln(stderr, "manglecp invoke: --confirm needs --confirm-key or MANGLECP_CONFIRMATION_KEY")
			return exitUsage
		}
		callOpts = append(callOpts, client.WithConfirmation([]byte(key), 2*time.Minute))
	}
	spin := startSpinner(stderr, "invoking "+*macro)
	callOpts = append(callOpts, client.WithProgress(spin.note))
	s, err := dial(ctx, target, cf, nil)
	if err != nil {
		spin.end()
		return fail(err, *cf.json, stdout, stderr)
	}
	defer s.Close()
	out, err := s.Invoke(ctx, req, callOpts...)
	spin.end()
	if err != nil {
		return fail(err, *cf.json, stdout, stderr)
	}
	if *cf.json {
		printJSON(stdout, out)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s (%d ms)\n\nresult:\n", out.Observability.Summary, out.Observability.DurationMS)
	printJSON(stdout, out.Result)
	for _, f := range out.StateDelta.Retract {
		fmt.Fprintf(stdout, "retract %s%v\n", f.Pred, f.Args)
	}
	for _, f := range out.StateDelta.Assert {
		fmt.Fprintf(stdout, "assert  %s%v (%s)\n", f.Pred, f.Args, f.Category)
	}
	if out.Next != nil {
		for _, si := range out.Next.SuggestedIntents {
			fmt.Fprintf(stdout, "next: %s: %s\n", si.Name, si.Description)
		}
	}
	return exitOK
}
