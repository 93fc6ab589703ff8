package mcpbridge

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// upgradePredicate asks the server for one macro-tool at full disclosure
// (Spec 05 section 5.3); every domain accepts it.
const upgradePredicate = "disclosure_upgrade"

// disclose returns e's definition at full disclosure: e's own when the
// server disclosed its safety block and input schema; otherwise the
// bridge asks the server again for the evaluation that selected it (same
// intent, facts and eval time), with disclosure_upgrade(macro_id), and
// takes the tool with the same macro_id (Spec 05 section 5.3). A tool the
// server condensed under the token budget thus still gets the question
// its side effects deserve and the arguments its schema fixes. nil when
// the server does not say (or its facts profile lacks
// disclosure_upgrade). The answer is kept for the entry.
func (ss *mcpSession) disclose(ctx context.Context, e *macroEntry) *protocol.MacroTool {
	if e.tool.Safety != nil && e.tool.InputSchema != nil {
		return &e.tool
	}
	ss.mu.Lock()
	full := e.full
	ss.mu.Unlock()
	if full != nil {
		return full
	}
	s, err := ss.b.session(ctx)
	if err != nil || s.Manifest() == nil || s.Manifest().FactsProfile.Predicate(upgradePredicate) == nil {
		return nil
	}
	extra := append(append([]protocol.Fact(nil), e.extra...), protocol.NewFact(upgradePredicate, e.tool.MacroID))
	r := ss.workingState(s).Request(protocol.Intent{Name: e.intent, Params: e.params}, extra...)
	if !e.evalTime.IsZero() {
		// The macro_id is bound to the evaluation time of its selection.
		r.EvalTime = &e.evalTime
	}
	resp, err := s.Evaluate(ctx, r)
	if err != nil {
		ss.b.opts.Logger.WarnContext(ctx, "disclosing a tool", "tool", e.name, "error", err.Error())
		return nil
	}
	for _, t := range resp.MacroTools {
		if t.MacroID == e.tool.MacroID && t.Safety != nil {
			t := t
			ss.mu.Lock()
			e.full = &t
			ss.mu.Unlock()
			return &t
		}
	}
	return nil
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
// waiting, is for a tool that follows a call (chainStep).
func (l *confirmLedger) following(nonce string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pending[nonce]
	return ok && p.chain != nil
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
