package inspector

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// scriptContext is what an exported script needs besides the history.
type scriptContext struct {
	Target   string
	Manifest *protocol.Manifest
	Now      time.Time
}

const (
	defaultBase   = "http://127.0.0.1:8080"
	manifestPath  = "/.well-known/manglecp/manifest.json"
	defaultEval   = "/manglecp/evaluate"
	defaultInvoke = "/manglecp/invoke"
	// tokenMarker stands for the confirmation token in a request body until
	// the script writes it as a shell variable.
	tokenMarker = "@@CONFIRMATION_TOKEN@@"
)

// header writes the comment block both scripts start with.
func (sc scriptContext) header(b *strings.Builder, how string, n int) {
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(b, "# A MangleCP session exported by manglecp inspect at %s.\n", sc.Now.UTC().Format(time.RFC3339))
	if m := sc.Manifest; m != nil {
		fmt.Fprintf(b, "# Server: %s %s, domain %s, protocol %s.\n", oneLine(m.ServerName), oneLine(m.ServerVersion), oneLine(m.Domain.ID), oneLine(m.Protocol.Manglecp))
	}
	fmt.Fprintf(b, "# Replays %d request(s) %s, in order.\n", n, how)
	b.WriteString("# Evaluations pin eval_time to the time the server used, so identical\n")
	b.WriteString("# requests give identical macro_ids and the invocations find their tools.\n")
	if sc.Target == "" {
		b.WriteString("# The inspected server ran inside manglecp inspect (the embedded default\n")
		b.WriteString("# domain); replay against `manglecp serve --addr 127.0.0.1:8080`.\n")
	}
}

// base splits the target into the script's default base URL and says
// whether the target was HTTP.
func (sc scriptContext) base() (string, *url.URL) {
	u, err := url.Parse(sc.Target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return defaultBase, nil
	}
	return u.Scheme + "://" + u.Host, u
}

// endpoint is the shell word of an endpoint's URL in the curl script:
// "$BASE" followed by the quoted path and query on the target's host (or
// on any host when the target is not HTTP), or the quoted absolute URL
// elsewhere. The endpoint comes from the server's manifest: it is resolved
// as the client resolves it, percent-encoded where a URL may not hold a
// byte as is, and quoted, so nothing in it reaches the shell as code. An
// endpoint that is not a URL reference gives the default path and a note
// for the script's comment.
func (sc scriptContext) endpoint(path, fallback string, target *url.URL) (word, note string) {
	if path == "" {
		path = fallback
	}
	ref := target
	if ref == nil {
		ref, _ = url.Parse(defaultBase)
	}
	u, err := ref.Parse(path)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		note = fmt.Sprintf("the manifest's endpoint %q is not an HTTP URL reference; using %s", path, fallback)
		u, _ = ref.Parse(fallback)
	}
	uri := escapeURI(u.EscapedPath())
	if uri == "" {
		uri = "/"
	}
	if u.RawQuery != "" {
		uri += "?" + escapeURI(u.RawQuery)
	}
	if target != nil && (u.Host != target.Host || u.Scheme != target.Scheme) {
		return shellQuote(u.Scheme + "://" + escapeURI(u.Host) + uri), note
	}
	return `"$BASE"` + shellQuote(uri), note
}

// escapeURI percent-encodes the bytes a URI may not hold as they are
// (RFC 3986 section 2): controls, space, non-ASCII and "<>\"^`{|}", so
// that curl sends the request line the client sent, and a server decodes
// the same path and query.
func escapeURI(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// curlScript writes the history as curl commands against the HTTP binding.
// Every value in it is a single-quoted shell word (shellQuote): endpoints,
// envelopes and the default base URL, whatever the server or the user put
// in them. The only expansions are the script's own variables.
func curlScript(sc scriptContext, entries []*entry) string {
	var b strings.Builder
	sc.header(&b, "with curl over HTTP", len(entries))
	base, target := sc.base()
	evalPath, invokePath := "", ""
	if m := sc.Manifest; m != nil && m.Endpoints != nil {
		evalPath, invokePath = m.Endpoints.IntentEval, m.Endpoints.MacroInvoke
	}
	evalURL, evalNote := sc.endpoint(evalPath, defaultEval, target)
	invokeURL, invokeNote := sc.endpoint(invokePath, defaultInvoke, target)
	for _, n := range []string{evalNote, invokeNote} {
		if n != "" {
			fmt.Fprintf(&b, "# Note: %s.\n", oneLine(n))
		}
	}
	b.WriteString("#\n# BASE is the server's HTTP address; set MANGLECP_AUTH_TOKEN when it requires\n")
	b.WriteString("# authentication, and CONFIRMATION_TOKEN for invocations that need confirmation.\n")
	fmt.Fprintf(&b, "DEFAULT_BASE=%s\n", shellQuote(base))
	b.WriteString("BASE=\"${BASE:-$DEFAULT_BASE}\"\n")
	b.WriteString("post() { # post URL ENVELOPE\n")
	b.WriteString("\tprintf '%s\\n' \"$2\" | curl -sS -H 'Content-Type: application/json' ${MANGLECP_AUTH_TOKEN:+-H \"Authorization: Bearer $MANGLECP_AUTH_TOKEN\"} --data-binary @- \"$1\"\n")
	b.WriteString("\techo\n}\n")
	for i, e := range entries {
		fmt.Fprintf(&b, "\n# %d. %s\n", i+1, describe(e))
		id := fmt.Sprintf("replay-%d", i+1)
		switch e.Kind {
		case "manifest":
			fmt.Fprintf(&b, "curl -sS ${MANGLECP_AUTH_TOKEN:+-H \"Authorization: Bearer $MANGLECP_AUTH_TOKEN\"} \"$BASE\"%s\necho\n", shellQuote(manifestPath))
		case "evaluate":
			env := envelopeJSON(protocol.TypeIntentRequest, id, replayIntent(e))
			fmt.Fprintf(&b, "post %s \\\n\t%s\n", evalURL, shellQuote(env))
		case "invoke":
			req := *e.Invoke
			if req.Args == nil {
				req.Args = map[string]any{}
			}
			if !e.Confirmed {
				env := envelopeJSON(protocol.TypeInvokeRequest, id, &req)
				fmt.Fprintf(&b, "post %s \\\n\t%s\n", invokeURL, shellQuote(env))
				continue
			}
			// The token is single-use and short-lived: the script takes a
			// fresh one from the environment, the only part of the envelope
			// that is not a single-quoted word.
			b.WriteString("# Confirmed by the user: needs a fresh CONFIRMATION_TOKEN for this macro_id\n")
			b.WriteString("# (`manglecp invoke --confirm` signs one with the server's confirmation key).\n")
			before, after := splitAtToken(id, &req)
			fmt.Fprintf(&b, "post %s \\\n\t%s\"${CONFIRMATION_TOKEN}\"%s\n", invokeURL, shellQuote(before), shellQuote(after))
		}
	}
	return b.String()
}

// splitAtToken encodes an invocation envelope and splits it where its
// confirmation token goes. The marker standing for the token is made
// longer until it occurs exactly once, so no value of the request can
// move the split.
func splitAtToken(id string, req *protocol.InvokeRequest) (before, after string) {
	marker := tokenMarker
	for {
		r := *req
		r.ConfirmationToken = marker
		env := envelopeJSON(protocol.TypeInvokeRequest, id, &r)
		if strings.Count(env, marker) == 1 {
			before, after, _ = strings.Cut(env, marker)
			return before, after
		}
		marker += "@"
	}
}

// cliScript writes the history as manglecp commands, for any transport.
// As in curlScript, every value is a single-quoted shell word.
func cliScript(sc scriptContext, entries []*entry) string {
	var b strings.Builder
	sc.header(&b, "with the manglecp command", len(entries))
	target := sc.Target
	if target == "" {
		target = defaultBase
	}
	b.WriteString("#\n# TARGET is the server: a URL or \"stdio:COMMAND ARGS...\" (a stdio server starts\n")
	b.WriteString("# afresh for each command, with an empty macro cache, so replay invocations\n")
	b.WriteString("# against a URL). MANGLECP_AUTH_TOKEN is the credential, if one is needed;\n")
	b.WriteString("# invocations with --confirm need MANGLECP_CONFIRMATION_KEY.\n")
	fmt.Fprintf(&b, "DEFAULT_TARGET=%s\n", shellQuote(target))
	b.WriteString("TARGET=\"${TARGET:-$DEFAULT_TARGET}\"\n")
	b.WriteString("MANGLECP=\"${MANGLECP:-manglecp}\"\n")
	for i, e := range entries {
		fmt.Fprintf(&b, "\n# %d. %s\n", i+1, describe(e))
		switch e.Kind {
		case "manifest":
			b.WriteString("\"$MANGLECP\" manifest \"$TARGET\" --json\n")
		case "evaluate":
			req := replayIntent(e)
			args := []string{"\"$MANGLECP\" eval \"$TARGET\"", "--intent " + shellQuote(req.Intent.Name)}
			if len(req.Intent.Params) > 0 {
				args = append(args, "--params "+shellQuote(compactJSON(req.Intent.Params)))
			}
			if req.EvalTime != nil {
				args = append(args, "--eval-time "+shellQuote(req.EvalTime.UTC().Format(time.RFC3339Nano)))
			}
			var unsupported []string
			if o := req.Options; o != nil {
				if o.DisclosurePreference != "" {
					args = append(args, "--disclosure "+shellQuote(o.DisclosurePreference))
				}
				if o.IncludeProofHints {
					args = append(args, "--proof")
				}
				if o.IncludeRuleCoverage {
					unsupported = append(unsupported, "options.x-include_rule_coverage")
				}
			}
			if req.Constraints != nil {
				unsupported = append(unsupported, "constraints "+compactJSON(req.Constraints))
			}
			if len(unsupported) > 0 {
				fmt.Fprintf(&b, "# not expressible with manglecp eval (use the curl export): %s\n", oneLine(strings.Join(unsupported, "; ")))
			}
			args = append(args, "--json", "--facts -")
			facts := req.Facts
			if facts == nil {
				facts = []protocol.Fact{}
			}
			fmt.Fprintf(&b, "printf '%%s\\n' %s |\n\t%s\n", shellQuote(compactJSON(facts)), strings.Join(args, " "))
		case "invoke":
			req := e.Invoke
			argsJSON := "{}"
			if req.Args != nil {
				argsJSON = compactJSON(req.Args)
			}
			line := fmt.Sprintf("\"$MANGLECP\" invoke \"$TARGET\" --macro %s --args %s", shellQuote(req.MacroID), shellQuote(argsJSON))
			if req.EvalTime != nil {
				line += " --eval-time " + shellQuote(req.EvalTime.UTC().Format(time.RFC3339Nano))
			}
			if e.Confirmed {
				line += " --confirm"
			}
			b.WriteString(line + " --json\n")
		}
	}
	return b.String()
}

// replayIntent is an evaluation's request with eval_time pinned to the
// time the server used, when the request left it to the server.
func replayIntent(e *entry) *protocol.IntentRequest {
	req := *e.Intent
	if req.EvalTime == nil && e.EvalTimeUsed != nil {
		t := *e.EvalTimeUsed
		req.EvalTime = &t
	}
	return &req
}

// describe is an entry's one-line comment: what it was and how it ended.
func describe(e *entry) string {
	what := e.Kind
	switch {
	case e.Intent != nil:
		what = "evaluate " + e.Intent.Intent.Name
	case e.Invoke != nil:
		what = "invoke " + e.Invoke.MacroID
	}
	outcome := "ok"
	if !e.OK {
		outcome = "error " + string(e.Code)
		if e.Status != 0 {
			outcome += fmt.Sprintf(" (HTTP %d)", e.Status)
		}
	}
	return oneLine(fmt.Sprintf("%s -> %s: %s", what, outcome, e.Summary))
}

// envelopeJSON encodes a request envelope on one line.
func envelopeJSON(typ protocol.MessageType, id string, payload any) string {
	raw, err := json.Marshal(payload)
	if err != nil {
		raw = []byte("{}")
	}
	env, err := (&protocol.Envelope{Type: typ, ID: &id, Version: protocol.Version, Payload: raw}).Encode()
	if err != nil {
		return "{}"
	}
	return string(env)
}

// compactJSON encodes v on one line without HTML escaping.
func compactJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "null"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// oneLine keeps text from a server on one comment line.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return protocol.ClipN(s, 200)
}
