package mcpbridge

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// Consent: a macro-tool that requires confirmation runs only after the
// user accepted through MCP elicitation (a multi round-trip tool call):
// the first call returns an input request and remembers a one-time nonce
// bound to the macro_id and arguments (the ledger); the call that carries
// the user's answer gets a signed confirmation token only if the user
// accepted. The bridge never confirms on its own.

// consentState is where a macro-tool call stands with the user's consent.
type consentState int

const (
	// consentNotNeeded: the tool does not require confirmation (as far as
	// its definition says) and the call carries no answer.
	consentNotNeeded consentState = iota
	// consentToAsk: the tool requires confirmation: the user is asked.
	consentToAsk
	// consentAnswered: the call carries the user's answer to a question
	// (whatever the tool's definition says).
	consentAnswered
)

// consentOf is where a call with params p of the tool def stands.
func consentOf(def *protocol.MacroTool, p *mcp.CallToolParamsRaw) consentState {
	switch {
	case carriesAnswer(p):
		return consentAnswered
	case def.Safety != nil && def.Safety.RequiresUserConfirmation:
		return consentToAsk
	}
	return consentNotNeeded
}

// carriesAnswer reports whether a call is the host's call again with the
// user's answer to a question (MCP's multi round-trip tool call).
func carriesAnswer(p *mcp.CallToolParamsRaw) bool {
	return p.InputResponses != nil || p.RequestState != ""
}

// userAnswer is the user's answer a call carries: the action, and whether
// it accepted.
func userAnswer(p *mcp.CallToolParamsRaw) (action string, accepted bool) {
	r, _ := p.InputResponses["confirm"].(*mcp.ElicitResult)
	if r == nil {
		return "no answer", false
	}
	return r.Action, r.Action == "accept"
}

// consent is the consent stage of invoke: nothing when the tool needs no
// confirmation; the question when the user is to be asked; with the
// user's answer, the confirmation token (c.token) when the answer matches
// a question asked for this call and accepts it, an error otherwise.
func (ss *mcpSession) consent(ctx context.Context, c *macroCall) *mcp.CallToolResult {
	switch consentOf(c.def, c.req.Params) {
	case consentNotNeeded:
		return nil
	case consentToAsk:
		return ss.askConsent(ctx, c)
	}
	if perr := ss.noKey(c.entry); perr != nil {
		return errorResult(perr)
	}
	e, p := c.entry, c.req.Params
	pend, ok := ss.b.confirms.take(p.RequestState, ss.b.now())
	if !ok || pend.macroID != e.tool.MacroID || pend.args != digest(canonicalArgs(c.args)) {
		return errorResult(protocol.Errorf(CodeConfirmationDeclined, "the confirmation answer does not match a question this bridge asked for this call; %s was not run", e.name))
	}
	if action, accepted := userAnswer(p); !accepted {
		return errorResult(protocol.Errorf(CodeConfirmationDeclined, "the user did not accept running %s (%s); it was not run", e.name, bounded(action, 32)))
	}
	c.token = client.ConfirmationToken(ss.b.opts.ConfirmationKey, e.tool.MacroID, ss.b.opts.ConfirmationTTL)
	return nil
}

// askConsent is the question whether c may run, or the error that says
// why the user cannot be asked.
func (ss *mcpSession) askConsent(ctx context.Context, c *macroCall) *mcp.CallToolResult {
	if perr := ss.noKey(c.entry); perr != nil {
		return errorResult(perr)
	}
	if !elicitationSupported(c.req.Session) {
		return errorResult(protocol.Errorf(CodeConfirmationUnavailable, "%s requires the user's confirmation and this host does not support MCP elicitation, so it cannot be asked; it was not run", c.entry.name))
	}
	return ss.askUser(ctx, c.entry, c.args, nil)
}

// noKey is the error of a tool that requires confirmation when the bridge
// holds no confirmation key, else nil.
func (ss *mcpSession) noKey(e *macroEntry) *protocol.Error {
	if len(ss.b.opts.ConfirmationKey) > 0 {
		return nil
	}
	return protocol.Errorf(CodeConfirmationUnavailable, "%s requires the user's confirmation and this bridge holds no confirmation key for the server (start it with --confirm-key); it was not run", e.name)
}

// askUser returns the input request that asks the user whether e may run
// with args, and remembers the question under a one-time nonce (with the
// tool that follows a call, if it is one).
func (ss *mcpSession) askUser(ctx context.Context, e *macroEntry, args map[string]any, follow *followUp) *mcp.CallToolResult {
	argsKey := canonicalArgs(args)
	nonce := rand.Text()
	ss.b.confirms.add(ss.host, nonce, pendingConfirm{macroID: e.tool.MacroID, args: digest(argsKey), expires: ss.b.now().Add(10 * time.Minute), follow: follow}, ss.b.now())
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
			Message:         confirmMessage(e, ss.disclose(ctx, e), argsKey),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		}},
		RequestState: nonce,
	}
}

func elicitationSupported(sess *mcp.ServerSession) bool {
	if sess == nil {
		return false
	}
	p := sess.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	el := p.Capabilities.Elicitation
	return el.Form != nil || el.URL == nil
}

// canonicalArgs is the JSON of args with sorted keys.
func canonicalArgs(args map[string]any) string {
	raw, err := json.Marshal(args)
	if err != nil {
		return "?"
	}
	return string(raw)
}

// effectWords say in words the side-effect categories a user cannot read
// as they are: "upstream" (the gateway's category of an upstream MCP tool
// not declared read-only) is no effect a user knows.
var effectWords = map[string]string{
	"upstream": "whatever this tool of an upstream MCP server does (it is not declared read-only)",
}

// confirmMessage is what the user is asked: always the tool, what it
// does, its side effects (or that the server did not disclose them) and
// the arguments it will run with, whatever the disclosure level the model
// saw.
func confirmMessage(e *macroEntry, full *protocol.MacroTool, args string) string {
	safety, description := e.tool.Safety, e.tool.Description
	if full != nil {
		safety = full.Safety
		if full.Description != "" {
			description = full.Description
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Allow %q to run?", e.name)
	if description != "" {
		fmt.Fprintf(&b, " %s", bounded(oneLine(description), 300))
	}
	switch {
	case safety == nil:
		b.WriteString(" Side effects: not disclosed by the server; assume it changes things.")
	default:
		effects := "none"
		if len(safety.SideEffects) > 0 {
			words := make([]string, len(safety.SideEffects))
			for i, e := range safety.SideEffects {
				words[i] = cmp.Or(effectWords[e], e)
			}
			effects = strings.Join(words, ", ")
		}
		fmt.Fprintf(&b, " Side effects: %s.", bounded(effects, 200))
		if !safety.Reversible {
			b.WriteString(" It cannot be undone.")
		}
	}
	// Up to 2 KiB, so that an edit's diff (the workspace's apply_edit takes
	// the previewed diff, itself cut within 1 KiB) is shown whole.
	fmt.Fprintf(&b, " Arguments: %s", bounded(args, maxConsentArgs))
	return b.String()
}

// maxConsentArgs bounds the arguments a consent question quotes, in bytes.
const maxConsentArgs = 2048

// maxPending bounds the confirmations the MCP sessions of one bridge may
// have asked and not yet seen answered (each holds a macro_id and a
// digest: under 200 bytes).
const maxPending = 1024

// maxPendingPerHost bounds those of one host (its peer address over
// HTTP, IPv6 by /64; the one host over stdio).
const maxPendingPerHost = 64

// pendingConfirm is a confirmation asked through elicitation, bound to
// one macro_id and one set of arguments (their digest).
type pendingConfirm struct {
	macroID string
	args    string
	expires time.Time
	follow  *followUp // the question was asked for a tool that follows the call at once (steps.go)
	host    string    // whose budget it counts against
}

// confirmLedger holds the questions asked of every MCP session of a
// bridge until they are answered (once) or expire. It is the bridge's,
// not a session's: over stateless HTTP (MCP 2026-07-28) the answer comes
// in a new request, which a new bridge session serves. Each host has its
// own budget: a host past maxPendingPerHost forgets its own oldest
// question, and when the ledger is full the oldest question of the host
// holding the most goes; a host asking never finds the ledger closed, and
// one host's flood costs only its own questions. The zero value is ready
// to use.
type confirmLedger struct {
	mu      sync.Mutex
	pending map[string]pendingConfirm
	byHost  map[string][]string // each host's nonces, oldest first (answered ones are skipped lazily)
	count   map[string]int      // each host's pending questions
}

// add remembers a question of host under its one-time nonce, making room
// as the type says.
func (l *confirmLedger) add(host, nonce string, p pendingConfirm, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[string]pendingConfirm{}
		l.byHost = map[string][]string{}
		l.count = map[string]int{}
	}
	for k, v := range l.pending {
		if !now.Before(v.expires) {
			l.forget(k)
		}
	}
	switch {
	case l.count[host] >= maxPendingPerHost:
		l.evictOldest(host)
	case len(l.pending) >= maxPending:
		hog := host
		for h, n := range l.count {
			if n > l.count[hog] || (n == l.count[hog] && h < hog) {
				hog = h
			}
		}
		l.evictOldest(hog)
	}
	p.host = host
	l.pending[nonce] = p
	l.byHost[host] = append(l.byHost[host], nonce)
	l.count[host]++
}

// evictOldest forgets host's oldest pending question.
func (l *confirmLedger) evictOldest(host string) {
	q := l.byHost[host]
	for len(q) > 0 {
		nonce := q[0]
		q = q[1:]
		if _, ok := l.pending[nonce]; ok {
			l.byHost[host] = q
			l.forget(nonce)
			return
		}
	}
	l.byHost[host] = q
}

// forget removes a pending question (its nonce stays in byHost until
// skipped or compacted).
func (l *confirmLedger) forget(nonce string) {
	p, ok := l.pending[nonce]
	if !ok {
		return
	}
	delete(l.pending, nonce)
	if l.count[p.host]--; l.count[p.host] <= 0 {
		delete(l.count, p.host)
		delete(l.byHost, p.host)
		return
	}
	if q := l.byHost[p.host]; len(q) > 2*l.count[p.host]+16 {
		kept := q[:0]
		for _, n := range q {
			if _, ok := l.pending[n]; ok {
				kept = append(kept, n)
			}
		}
		l.byHost[p.host] = kept
	}
}

// following reports whether the question asked with nonce, still
// waiting, is for a tool that follows a call (followUp).
func (l *confirmLedger) following(nonce string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pending[nonce]
	return ok && p.follow != nil
}

// take returns and forgets the question asked with nonce.
func (l *confirmLedger) take(nonce string, now time.Time) (pendingConfirm, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pending[nonce]
	l.forget(nonce)
	if !ok || !now.Before(p.expires) {
		return pendingConfirm{}, false
	}
	return p, true
}

// digest is the SHA-256 of the canonical arguments a question is bound
// to, so a pending question holds 32 bytes whatever the arguments.
func digest(args string) string {
	sum := sha256.Sum256([]byte(args))
	return string(sum[:])
}
