package browser

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/plural"
	"github.com/manglecp/manglecp/protocol"
)

type actions struct {
	reports *reports
}

// observeSummary summarizes the page: console events by level and the
// network requests with their outcomes.
func (a *actions) observeSummary(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	p := readPage(c.Facts)
	focus := arg(c.Args, "focus")
	out := &manglecp.Outcome{Result: map[string]any{"url": p.url(), "focus": focus}}
	if focus == "all" || focus == "console" {
		_ = out.Step("read_console", func() (string, error) {
			byLevel := map[string]any{}
			counts := map[string]int{}
			var latest map[string]any
			for _, e := range p.console {
				counts[e.level]++
				if e.level == "error" {
					latest = map[string]any{"message": e.message, "timestamp": stamp(e.ts), "session_id": e.session}
				}
			}
			for l, n := range counts {
				byLevel[l] = n
			}
			console := map[string]any{"total": len(p.console), "by_level": byLevel}
			if latest != nil {
				console["latest_error"] = latest
			}
			out.Result["console"] = console
			return plural.S(len(p.console), "console event") + ", " + plural.S(counts["error"], "error"), nil
		})
	} else {
		out.Skip("read_console", "focus is "+focus)
	}
	if focus == "all" || focus == "network" {
		_ = out.Step("read_network", func() (string, error) {
			failed := []any{}
			for _, r := range p.failed() {
				entry := map[string]any{"request_id": r.id, "status": r.status}
				if req, ok := p.requests[r.id]; ok {
					entry["method"], entry["url"] = req.method, req.url
				}
				failed = append(failed, entry)
			}
			out.Result["network"] = map[string]any{"requests": len(p.requests), "responses": len(p.responses), "failed": failed}
			return fmt.Sprintf("%s, %d failed", plural.S(len(p.requests), "request"), len(failed)), nil
		})
	} else {
		out.Skip("read_network", "focus is "+focus)
	}
	out.Summary = fmt.Sprintf("Observed %s: %s and %s (%d failed).",
		orUnknown(p.url()), plural.S(len(p.console), "console event"), plural.S(len(p.requests), "network request"), len(p.failed()))
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("current_url", p.url())}
	return out, ctx.Err()
}

func orUnknown(s string) string {
	if s == "" {
		return "the page"
	}
	return s
}

// consoleErrors groups console errors by message.
func (a *actions) consoleErrors(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	p := readPage(c.Facts)
	session := arg(c.Args, "session_id")
	type group struct {
		message     string
		count       int
		first, last int64
		sessions    map[string]bool
	}
	groups := map[string]*group{}
	var order []string
	out := &manglecp.Outcome{}
	_ = out.Step("group_errors", func() (string, error) {
		for _, e := range p.console {
			if e.level != "error" || (session != "" && e.session != session) {
				continue
			}
			g, ok := groups[e.message]
			if !ok {
				g = &group{message: e.message, first: e.ts, sessions: map[string]bool{}}
				groups[e.message] = g
				order = append(order, e.message)
			}
			g.count++
			g.last = e.ts
			g.sessions[e.session] = true
		}
		return fmt.Sprintf("%d distinct error messages", len(order)), nil
	})
	list := []any{}
	total := 0
	for _, m := range order {
		g := groups[m]
		total += g.count
		var sessions []string
		for s := range g.sessions {
			sessions = append(sessions, s)
		}
		sort.Strings(sessions)
		list = append(list, map[string]any{"message": g.message, "count": g.count,
			"first_seen": stamp(g.first), "last_seen": stamp(g.last), "sessions": sessions})
	}
	out.Result = map[string]any{"errors": list, "total": total}
	if session != "" {
		out.Result["session_id"] = session
	}
	out.Summary = fmt.Sprintf("Found %s with %s.", plural.S(total, "console error"), plural.S(len(order), "distinct message"))
	return out, ctx.Err()
}

// chain is a traced causal chain.
type chain struct {
	requestID string
	steps     []map[string]any
	rootCause string
	errors    int
	gapMS     int64
}

// trace builds the causal chain from a failed request to the console errors
// of the same session at or after its response.
func trace(p *page, requestID string, includeNetwork bool) (*chain, error) {
	resp, ok := p.responses[requestID]
	if !ok {
		return nil, fmt.Errorf("request %q has no response in the facts", requestID)
	}
	req, hasReq := p.requests[requestID]
	ch := &chain{requestID: requestID, gapMS: -1}
	add := func(event string, ts int64) {
		ch.steps = append(ch.steps, map[string]any{"step": len(ch.steps) + 1, "event": event, "timestamp": stamp(ts)})
	}
	what := "request " + requestID
	if hasReq {
		what = req.method + " " + req.url
		if includeNetwork {
			add(fmt.Sprintf("%s sent", what), req.ts)
		}
	}
	if includeNetwork {
		add(fmt.Sprintf("%s returned %d", what, resp.status), resp.ts)
	}
	for _, e := range p.console {
		if e.level != "error" || e.session != resp.session || e.ts < resp.ts {
			continue
		}
		if ch.gapMS < 0 {
			ch.gapMS = e.ts - resp.ts
		}
		ch.errors++
		add(e.message, e.ts)
	}
	ch.rootCause = fmt.Sprintf("%s returned HTTP %d", what, resp.status)
	if ch.errors == 0 {
		ch.rootCause += "; no console error followed it in session " + resp.session
	}
	return ch, nil
}

// confidence grows as the first error follows the failure more closely.
func (ch *chain) confidence() float64 {
	switch {
	case ch.errors == 0:
		return 0.1
	case ch.gapMS <= 1000:
		return 0.9
	case ch.gapMS <= 10000:
		return 0.7
	}
	return 0.4
}

// causalChain traces a failed request to the console errors it caused.
func (a *actions) causalChain(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	p := readPage(c.Facts)
	requestID := arg(c.Args, "request_id")
	include, _ := c.Args["include_network"].(bool)
	out := &manglecp.Outcome{}
	var ch *chain
	if err := out.Step("correlate_network", func() (string, error) {
		var err error
		ch, err = trace(p, requestID, include)
		if err != nil {
			return err.Error(), err
		}
		return fmt.Sprintf("matched %s to %s", plural.S(ch.errors, "console error"), requestID), nil
	}); err != nil {
		return nil, err
	}
	_ = out.Step("derive_root_cause", func() (string, error) { return ch.rootCause, nil })
	out.Result = map[string]any{
		"request_id":       requestID,
		"causal_chain":     ch.steps,
		"root_cause":       ch.rootCause,
		"errors_explained": ch.errors,
		"confidence":       ch.confidence(),
	}
	diagnosed := protocol.NewFact("diagnosed_error", requestID, ch.rootCause)
	out.Assert = []protocol.Fact{diagnosed}
	out.Retract = []protocol.Fact{protocol.NewFact("diagnosed_error", requestID, nil)}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("current_url", p.url())}
	out.Summary = fmt.Sprintf("Traced %s to %s. Root cause: %s.", requestID, plural.S(ch.errors, "console error"), ch.rootCause)
	return out, ctx.Err()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// writeReport writes a Markdown report of a causal chain into the report
// directory.
func (a *actions) writeReport(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	p := readPage(c.Facts)
	requestID := arg(c.Args, "request_id")
	title := arg(c.Args, "title")
	out := &manglecp.Outcome{}
	c.Progress("started", "tracing the causal chain of "+requestID, 0)
	var ch *chain
	if err := out.Step("trace_chain", func() (string, error) {
		var err error
		ch, err = trace(p, requestID, true)
		if err != nil {
			return err.Error(), err
		}
		return plural.S(len(ch.steps), "step"), nil
	}); err != nil {
		return nil, err
	}
	c.Progress("running", "rendering the report", 40)
	var doc strings.Builder
	_ = out.Step("render_markdown", func() (string, error) {
		fmt.Fprintf(&doc, "# %s\n\n", title)
		fmt.Fprintf(&doc, "- Page: %s\n- Request: %s\n- Root cause: %s\n- Confidence: %.1f\n\n## Causal chain\n\n",
			orUnknown(p.url()), requestID, ch.rootCause, ch.confidence())
		for _, s := range ch.steps {
			fmt.Fprintf(&doc, "%d. %s (%s)\n", s["step"], s["event"], s["timestamp"])
		}
		return fmt.Sprintf("%d bytes", doc.Len()), nil
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.Progress("finalizing", "writing the report file", 80)
	var name string
	if err := out.Step("write_file", func() (string, error) {
		var err error
		name, err = a.reports.write(requestID, shortID(c.MacroID)+".md", []byte(doc.String()))
		if err != nil {
			return "cannot write the report", err
		}
		return "wrote " + name, nil
	}); err != nil {
		return nil, err
	}
	out.Result = map[string]any{"report": name, "bytes": doc.Len(), "request_id": requestID, "root_cause": ch.rootCause}
	out.Assert = []protocol.Fact{protocol.NewFact("report_written", name, requestID)}
	out.Summary = fmt.Sprintf("Wrote the diagnosis report %s for %s.", name, requestID)
	return out, nil
}

// reportExists computes the external predicate report_exists for the
// failed requests of the facts: one Stat per failed request, never a scan
// of the directory.
func (a *actions) reportExists(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	ids := failedIDs(in.Facts)
	if len(ids) == 0 {
		return nil, nil
	}
	// A directory the server refuses (a symlink, another owner) holds no
	// report it trusts; writing there fails and is logged.
	found, _ := a.reports.exist(ids)
	out := make([][]any, 0, len(found))
	for _, id := range found {
		out = append(out, []any{id})
	}
	return out, ctx.Err()
}

func shortID(macroID string) string {
	if i := strings.LastIndexByte(macroID, '-'); i >= 0 && len(macroID)-i > 8 {
		return macroID[i+1 : i+9]
	}
	return unsafeName.ReplaceAllString(macroID, "_")
}

// actionKinds says which element kinds support which action.
var actionKinds = map[string][]string{
	"click": {"button", "link", "checkbox", "radio"},
	"fill":  {"input", "textarea", "search", "email", "password"},
	"read":  nil, // any element
}

// automationPlan validates one automation step and lays out its plan.
func (a *actions) automationPlan(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	p := readPage(c.Facts)
	target, action, value := arg(c.Args, "target_element"), arg(c.Args, "action"), arg(c.Args, "value")
	out := &manglecp.Outcome{}
	var el *element
	problems := []string{}
	_ = out.Step("locate_element", func() (string, error) {
		for i := range p.elements {
			if p.elements[i].id == target {
				el = &p.elements[i]
			}
		}
		if el == nil {
			problems = append(problems, fmt.Sprintf("element %q is not on the page", target))
			return "not found", nil
		}
		return fmt.Sprintf("%s %q", el.kind, el.label), nil
	})
	_ = out.Step("validate_action", func() (string, error) {
		if el != nil {
			if kinds := actionKinds[action]; kinds != nil && !contains(kinds, el.kind) {
				problems = append(problems, fmt.Sprintf("cannot %s a %s element; %s works on %s", action, el.kind, action, strings.Join(kinds, ", ")))
			}
		}
		switch {
		case action == "fill" && value == "":
			problems = append(problems, "fill needs a value")
		case action != "fill" && value != "":
			problems = append(problems, action+" takes no value")
		}
		return plural.S(len(problems), "problem"), nil
	})
	plan := []any{}
	if len(problems) == 0 {
		plan = append(plan,
			map[string]any{"step": 1, "op": "assert_url", "url": p.url()},
			map[string]any{"step": 2, "op": "locate", "target": target, "kind": el.kind, "label": el.label},
		)
		op := map[string]any{"step": 3, "op": action, "target": target}
		if action == "fill" {
			op["value"] = value
		}
		plan = append(plan, op, map[string]any{"step": 4, "op": "verify", "target": target, "expect": expectation(action, value)})
	}
	out.Result = map[string]any{"valid": len(problems) == 0, "problems": problems, "plan": plan, "goals": p.goals}
	if len(problems) == 0 {
		out.Summary = fmt.Sprintf("Planned a validated %s on %s in %s.", action, target, plural.S(len(plan), "step"))
	} else {
		out.Summary = fmt.Sprintf("The %s on %s is not valid: %s.", action, target, strings.Join(problems, "; "))
	}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("current_url", p.url())}
	return out, ctx.Err()
}

func expectation(action, value string) string {
	switch action {
	case "fill":
		return fmt.Sprintf("value equals %q", value)
	case "click":
		return "page reacted (navigation, state change or new console output)"
	}
	return "text captured"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
