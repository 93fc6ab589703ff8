package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
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
func dial(ctx context.Context, env Env, target string, cf clientFlags, progress func(protocol.Progress)) (*client.Session, error) {
	token := *cf.token
	if token == "" {
		token = env.Getenv("MANGLECP_AUTH_TOKEN")
	}
	return client.Dial(ctx, target, &client.Options{Token: token, Progress: progress})
}

// fail reports err and returns the exit code: a server's error answer is
// printed as its envelope in JSON mode, and in words otherwise; a target
// that cannot be reached is one line naming it and the cause.
func fail(err error, asJSON bool, stdout, stderr io.Writer) int {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Payload != nil {
		if asJSON {
			raw, _ := protocol.ErrorEnvelope(ce.RequestID, ce.Payload).Encode()
			fmt.Fprintln(stdout, string(raw))
		} else {
			printError(stderr, ce.Payload)
		}
		return exitProtocol
	}
	msg := transportMessage(err)
	if asJSON {
		raw, _ := protocol.ErrorEnvelope("", protocol.Errorf("x-transport_error", "%s", msg)).Encode()
		fmt.Fprintln(stdout, string(raw))
	} else {
		fmt.Fprintf(stderr, "manglecp: %s\n", msg)
	}
	return exitTransport
}

// printError prints a registry error in words: code and message, then
// its details, one per line.
func printError(w io.Writer, e *protocol.Error) {
	fmt.Fprintf(w, "error %s: %s\n", e.Code, e.Message)
	d := e.Details
	if d == nil {
		return
	}
	for _, v := range d.Violations {
		where := "request"
		if v.FactIndex >= 0 {
			where = fmt.Sprintf("fact %d", v.FactIndex)
		}
		if v.Predicate != "" {
			where += " (" + v.Predicate + ")"
		}
		fmt.Fprintf(w, "  %s: %s\n", where, v.Message)
	}
	for _, se := range d.SchemaErrors {
		path := se.Path
		if path == "" {
			path = "args"
		}
		fmt.Fprintf(w, "  %s: %s\n", path, se.Message)
	}
	if b := d.Budget; b != nil {
		fmt.Fprintf(w, "  budget: %d of %d %s\n", b.Consumed, b.Limit, b.Unit)
	}
}

// transportMessage says in one line why a server could not be reached:
// the target and the innermost cause, without the client's own prefixes.
func transportMessage(err error) string {
	var te *client.TransportError
	if !errors.As(err, &te) {
		if errors.Is(err, context.DeadlineExceeded) {
			return "no answer in time"
		}
		return strings.TrimPrefix(err.Error(), "manglecp client: ")
	}
	where := te.URL
	if where == "" {
		where = "the server"
	}
	if te.Status != 0 {
		return fmt.Sprintf("%s answered HTTP %d, not a MangleCP message: is the URL right?", where, te.Status)
	}
	cause := te.Err
	for cause != nil && errors.Unwrap(cause) != nil {
		cause = errors.Unwrap(cause)
	}
	why := "unknown error"
	if cause != nil {
		why = strings.TrimPrefix(cause.Error(), "manglecp client: ")
	}
	if te.Op == "dial" || te.Op == "manifest" {
		return fmt.Sprintf("cannot reach %s: %s", where, why)
	}
	return fmt.Sprintf("%s %s failed: %s", te.Op, where, why)
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
func manifestCmd(ctx context.Context, env Env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	h := cmdHelp{name: "manifest", synopsis: "manglecp manifest TARGET [--json] [--token T]",
		description: "Prints a server's manifest: status, domain, auth, intents with the facts they need,\nthe facts profile and the limits. --json prints the manifest object itself.",
		args:        targetArg}
	fl := newFlagSet("manifest")
	cf := addClientFlags(fl)
	target, code, ok := parseTarget(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	s, err := dial(ctx, env, target, cf, nil)
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
	return exitOK
}

// readFacts reads a JSON array of facts, or an object whose only field is
// a "facts" array, from a file or "-" (stdin). Anything else is an error
// in words, reported as a usage error.
func readFacts(path string, stdin io.Reader) ([]protocol.Fact, error) {
	var raw []byte
	var err error
	name := path
	if path == "-" {
		raw, err = io.ReadAll(stdin)
		name = "standard input"
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("--facts: cannot read %s: %v", path, pe.Err)
		}
		return nil, fmt.Errorf("--facts: %v", err)
	}
	trimmed := bytes.TrimSpace(raw)
	want := `want a JSON array of facts, e.g. [{"pred":"current_url","args":["https://..."]}], or {"facts": [...]}`
	switch {
	case len(trimmed) == 0:
		return nil, fmt.Errorf("--facts: %s is empty: %s", name, want)
	case trimmed[0] == '[':
		var facts []protocol.Fact
		if err := json.Unmarshal(trimmed, &facts); err != nil {
			return nil, fmt.Errorf("--facts: %s is not a JSON array of facts (%s): %s", name, jsonProblem(err), want)
		}
		return facts, nil
	case trimmed[0] == '{':
		var wrapped struct {
			Facts *[]protocol.Fact `json:"facts"`
		}
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&wrapped); err != nil || wrapped.Facts == nil {
			return nil, fmt.Errorf("--facts: %s is an object without a \"facts\" array: %s", name, want)
		}
		return *wrapped.Facts, nil
	}
	return nil, fmt.Errorf("--facts: %s is not JSON: %s", name, want)
}

// jsonProblem says briefly what is wrong with a JSON document.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s where %s belongs, at byte %d", te.Value, te.Type, te.Offset)
	}
	return "invalid"
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
		return nil, fmt.Errorf("--eval-time %s is not a time: write RFC 3339, e.g. 2026-02-19T14:30:05Z", quote(v))
	}
	return protocol.NewTime(t), nil
}

// evalCmd evaluates an intent.
func evalCmd(ctx context.Context, env Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := cmdHelp{name: "eval", synopsis: "manglecp eval TARGET --intent NAME [--facts FILE|-] [flags]",
		description: "Evaluates an intent with facts and prints the macro-tools the server's rules selected,\nwith their macro_ids, arguments, safety and validity (--json: the intent_response payload).\nFacts are a JSON array of {\"pred\", \"args\"} objects; they are checked against the\nmanifest's facts profile before anything is sent.",
		args:        targetArg}
	fl := newFlagSet("eval")
	cf := addClientFlags(fl)
	intent := fl.String("intent", "", "the intent name (required; see 'manglecp manifest TARGET')")
	factsFile := fl.String("facts", "", "facts: a JSON file, or - for stdin")
	params := fl.String("params", "", "intent params as a JSON object")
	evalTime := fl.String("eval-time", "", "evaluation time, RFC 3339 or now (default: the server's clock)")
	proof := fl.Bool("proof", false, "ask for proof hints")
	disclosure := fl.String("disclosure", "", "full, condensed, minimal or adaptive (the server's default)")
	target, code, ok := parseTarget(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if *intent == "" {
		return usageError(stderr, h, "--intent is required")
	}
	req := &protocol.IntentRequest{Intent: protocol.Intent{Name: *intent}, Facts: []protocol.Fact{}}
	if *params != "" {
		if err := json.Unmarshal([]byte(*params), &req.Intent.Params); err != nil || req.Intent.Params == nil {
			return usageError(stderr, h, "--params must be a JSON object, e.g. {\"key\": \"value\"}")
		}
	}
	if *factsFile != "" {
		facts, err := readFacts(*factsFile, stdin)
		if err != nil {
			return usageError(stderr, h, "%v", err)
		}
		req.Facts = facts
	}
	var err error
	if req.EvalTime, err = parseEvalTime(*evalTime); err != nil {
		return usageError(stderr, h, "%v", err)
	}
	switch *disclosure {
	case "", protocol.DisclosureFull, protocol.DisclosureCondensed, protocol.DisclosureMinimal, protocol.DisclosureAdaptive:
	default:
		return usageError(stderr, h, "--disclosure %s: use full, condensed, minimal or adaptive", quote(*disclosure))
	}
	if *proof || *disclosure != "" {
		req.Options = &protocol.Options{IncludeProofHints: *proof, DisclosurePreference: *disclosure}
	}
	spin := startSpinner(stderr, "evaluating "+*intent)
	s, err := dial(ctx, env, target, cf, nil)
	if err != nil {
		spin.end()
		return fail(err, *cf.json, stdout, stderr)
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
			spin.end()
			hint := ""
			if c := protocol.Closest(*intent, names); c != "" {
				hint = fmt.Sprintf("; did you mean %q?", c)
			}
			return usageError(stderr, h, "the server has no intent %s%s (its intents: %s)", quote(*intent), hint, strings.Join(names, ", "))
		}
	}
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
func invokeCmd(ctx context.Context, env Env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := cmdHelp{name: "invoke", synopsis: "manglecp invoke TARGET --macro ID [--args JSON] [--confirm] [flags]",
		description: "Invokes a macro-tool that an evaluation returned and prints its result, state delta and\nsuggested next intents (--json: the invoke_response payload). A tool that needs the user's\nconfirmation is confirmed with --confirm, or, on a terminal, by answering the question\nthe command asks; the token is signed with the server's confirmation key (--confirm-key,\nMANGLECP_CONFIRMATION_KEY, or the key file a local 'manglecp serve' created: " + confirmationKeyHint(env) + ").",
		args:        targetArg}
	fl := newFlagSet("invoke")
	cf := addClientFlags(fl)
	macro := fl.String("macro", "", "the macro_id (required)")
	argsJSON := fl.String("args", "{}", "the arguments as a JSON object")
	evalTime := fl.String("eval-time", "", "evaluation time, RFC 3339 or now")
	confirm := fl.Bool("confirm", false, "confirm a tool that needs it without asking")
	confirmKey := fl.String("confirm-key", "", "the server's confirmation key (default: MANGLECP_CONFIRMATION_KEY, then the local key file)")
	target, code, ok := parseTarget(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if *macro == "" {
		return usageError(stderr, h, "--macro is required (a macro_id from 'manglecp eval')")
	}
	req := &protocol.InvokeRequest{MacroID: *macro}
	if err := json.Unmarshal([]byte(*argsJSON), &req.Args); err != nil || req.Args == nil {
		return usageError(stderr, h, "--args must be a JSON object, e.g. {\"request_id\": \"r42\"}")
	}
	var err error
	if req.EvalTime, err = parseEvalTime(*evalTime); err != nil {
		return usageError(stderr, h, "%v", err)
	}
	key := func() ([]byte, error) {
		if *confirmKey != "" {
			return []byte(*confirmKey), nil
		}
		if k := env.Getenv("MANGLECP_CONFIRMATION_KEY"); k != "" {
			return []byte(k), nil
		}
		return readConfirmationKey(env)
	}
	var callOpts []client.CallOption
	if *confirm {
		k, err := key()
		if err != nil {
			return usageError(stderr, h, "--confirm needs the server's confirmation key: %v", err)
		}
		callOpts = append(callOpts, client.WithConfirmation(k, 2*time.Minute))
	}
	spin := startSpinner(stderr, "invoking "+*macro)
	callOpts = append(callOpts, client.WithProgress(spin.note))
	s, err := dial(ctx, env, target, cf, nil)
	if err != nil {
		spin.end()
		return fail(err, *cf.json, stdout, stderr)
	}
	defer s.Close()
	out, err := s.Invoke(ctx, req, callOpts...)
	spin.end()
	if !*confirm && !*cf.json && errors.Is(err, &protocol.Error{Code: protocol.CodeConfirmationRequired}) && isTerminal(stdin) && isTerminal(stderr) {
		yes, perr := askConfirmation(stdin, stderr, *macro, req.Args)
		if perr != nil || !yes {
			fmt.Fprintln(stderr, "manglecp invoke: not confirmed; nothing was run")
			return exitProtocol
		}
		k, kerr := key()
		if kerr != nil {
			fmt.Fprintf(stderr, "manglecp invoke: cannot sign the confirmation: %v\n", kerr)
			return exitUsage
		}
		callOpts = append(callOpts, client.WithConfirmation(k, 2*time.Minute))
		spin = startSpinner(stderr, "invoking "+*macro)
		out, err = s.Invoke(ctx, req, callOpts...)
		spin.end()
	}
	if !*confirm && errors.Is(err, &protocol.Error{Code: protocol.CodeConfirmationRequired}) {
		// Off a terminal (or with --json) nobody was asked: the server's
		// "send confirmation_token" is for protocol clients; here the way
		// is a flag.
		tool, _, _ := strings.Cut(*macro, "-")
		hint := fmt.Sprintf("%s needs the user's confirmation: run the command again with --confirm (the token is signed with the server's confirmation key: --confirm-key, MANGLECP_CONFIRMATION_KEY, or the key file a local 'manglecp serve' created: %s)", tool, confirmationKeyHint(env))
		if *cf.json {
			_ = fail(err, true, stdout, stderr)
			fmt.Fprintf(stderr, "manglecp invoke: %s\n", hint)
		} else {
			fmt.Fprintf(stderr, "error %s: %s\n", protocol.CodeConfirmationRequired, hint)
		}
		return exitProtocol
	}
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
	return exitOK
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
