package browser

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/plural"
	"github.com/manglecp/manglecp/protocol"
)

// BrowserSource is the source_id of facts the server's browser observed.
const BrowserSource = "chromium"

// browse runs the tools that drive the server's own browser.
type browse struct {
	b *chrome.Browser
	// uploads and scripts are the operator's options (browser_option).
	uploads, scripts bool
}

// options computes browser_option(Name): the optional capabilities the
// operator enabled.
func (w *browse) options(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	var out [][]any
	if w.uploads {
		out = append(out, []any{"uploads"})
	}
	if w.scripts {
		out = append(out, []any{"scripts"})
	}
	return out, nil
}

// browserAvailable computes browser_available(Engine): one tuple when the
// browser can run now. Rules offer the browser tools only then.
func (w *browse) browserAvailable(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	if ok, _ := w.b.Available(); ok {
		return [][]any{{BrowserSource}}, nil
	}
	return nil, nil
}

// urlParts computes url_parts(Url, Scheme, Host) for the request's
// current_url facts: rules cannot parse URLs.
func (w *browse) urlParts(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	var out [][]any
	for _, f := range in.Facts {
		if f.Pred != "current_url" {
			continue
		}
		raw := text(f.Args[0])
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" {
			continue
		}
		out = append(out, []any{raw, strings.ToLower(u.Scheme), normalHost(u.Hostname())})
	}
	return out, nil
}

// allowedHosts computes browser_allowed_host(Host) for the hosts of the
// request's current_url facts that the server's allowed_hosts list admits.
func (w *browse) allowedHosts(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	seen := map[string]bool{}
	var out [][]any
	for _, f := range in.Facts {
		if f.Pred != "current_url" {
			continue
		}
		u, err := url.Parse(text(f.Args[0]))
		if err != nil {
			continue
		}
		h := normalHost(u.Hostname())
		if h != "" && !seen[h] && w.b.URLAllowed(u) {
			seen[h] = true
			out = append(out, []any{h})
		}
	}
	return out, nil
}

func normalHost(h string) string {
	h = strings.ToLower(h)
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// run performs a task and turns the failures a client can act on into a
// result (ok false, problem) instead of an execution failure.
func (w *browse) run(ctx context.Context, out *manglecp.Outcome, t chrome.Task) (*chrome.Observation, string, error) {
	return w.do(out, func() (*chrome.Observation, error) { return w.b.Run(chrome.WithIdentity(ctx, owner(ctx)), t) })
}

// do runs one browser call (a run, or a call on a live session) as run
// does. A session that is gone is the recoverable registry error
// x-browser_session_gone; one of another identity auth_insufficient.
func (w *browse) do(out *manglecp.Outcome, call func() (*chrome.Observation, error)) (*chrome.Observation, string, error) {
	var obs *chrome.Observation
	err := out.Step("browser", func() (string, error) {
		var err error
		obs, err = call()
		if err != nil {
			return "the browser run failed", err
		}
		return fmt.Sprintf("loaded in session %s", obs.Session), nil
	})
	// The browser's errors the client can act on (chrome.KindOf): those
	// about the session or the browser's load are protocol errors, the
	// others the problem of an answer with ok false. Anything else is
	// internal.
	var ce *chrome.Error
	if errors.As(err, &ce) {
		switch ce.Kind {
		case chrome.DialogOpen:
			return nil, "", protocol.Errorf(CodeBrowserDialogOpen, "%s", ce.Error())
		case chrome.SessionGone:
			return nil, "", protocol.Errorf(CodeBrowserSessionGone, "%s", ce.Error())
		case chrome.NotOwner:
			return nil, "", protocol.Errorf(protocol.CodeAuthInsufficient, "%s", ce.Error())
		case chrome.Busy:
			return nil, "", protocol.Errorf(CodeBrowserBusy, "%s", ce.Error()).WithRetryAfter(max(1, ce.RetryAfter.Milliseconds()))
		case chrome.Restarting:
			return nil, "", protocol.Errorf(CodeBrowserRestarting, "%s", ce.Error()).WithRetryAfter(max(1, ce.RetryAfter.Milliseconds()))
		}
		return nil, ce.Error(), nil
	}
	var fe *chrome.FieldErrors
	var ee *chrome.ElementError
	switch {
	case err == nil && obs.LoadError != "":
		return obs, "the page did not load: " + obs.LoadError, nil
	case err == nil:
		return obs, "", nil
	case errors.As(err, &fe):
		return nil, fe.Error(), nil
	case errors.As(err, &ee) && ee.Kind == chrome.ElementNotFound:
		return nil, ee.Error() + "; the page's elements are the page_element facts of the last call", nil
	case errors.As(err, &ee):
		return nil, ee.Error(), nil
	}
	return nil, "", err
}

// observationFacts are the facts a run saw, with the browser as their
// source. They are session facts: the client sends them back with its
// next intent.
func observationFacts(obs *chrome.Observation, now time.Time) []protocol.Fact {
	src := &protocol.Provenance{SourceType: protocol.SourceExternal, SourceID: BrowserSource, AssertedAt: now.UTC().Format(time.RFC3339Nano)}
	at := func(ms int64) *protocol.Temporal { return &protocol.Temporal{At: stamp(ms)} }
	var facts []protocol.Fact
	add := func(f protocol.Fact, t *protocol.Temporal) {
		f.Source, f.Category, f.T = src, protocol.CategorySession, t
		facts = append(facts, f)
	}
	for _, c := range obs.Console {
		add(protocol.NewFact("console_event", obs.Session, c.Level, c.Message, c.Time), at(c.Time))
	}
	for _, r := range obs.Requests {
		add(protocol.NewFact("net_request", obs.Session, r.ID, r.Method, r.URL, r.Time), at(r.Time))
		if r.Status > 0 {
			add(protocol.NewFact("net_response", obs.Session, r.ID, r.Status, r.ResponseTime), at(r.ResponseTime))
		}
	}
	for _, e := range obs.Elements {
		add(protocol.NewFact("interactive_element", e.ID, e.Kind, e.Label), nil)
	}
	return facts
}

// pageResult is the short account of a page shared by the tools' results.
func pageResult(obs *chrome.Observation) (map[string]any, string) {
	errs, warns := 0, 0
	firstErrors := []any{}
	for _, c := range obs.Console {
		switch c.Level {
		case "error":
			errs++
			if len(firstErrors) < 3 {
				firstErrors = append(firstErrors, c.Message)
			}
		case "warning":
			warns++
		}
	}
	failed := []any{}
	var failedText []string
	for _, r := range obs.Requests {
		if r.Status >= 400 || r.Failed != "" {
			if len(failed) < 10 {
				e := map[string]any{"request_id": r.ID, "method": r.Method, "url": r.URL, "status": r.Status}
				if r.Failed != "" {
					e["error"] = r.Failed
				}
				failed = append(failed, e)
			}
			what := fmt.Sprint(r.Status)
			if r.Failed != "" {
				what = r.Failed
			}
			failedText = append(failedText, fmt.Sprintf("%s %s %s", r.Method, pathOf(r.URL), what))
		}
	}
	consoleTotal, requestsTotal, elementsTotal := max(obs.ConsoleTotal, len(obs.Console)), max(obs.RequestsTotal, len(obs.Requests)), max(obs.ElementsTotal, len(obs.Elements))
	res := map[string]any{
		"url": obs.URL, "title": obs.Title, "status": obs.Status, "session_id": obs.Session,
		"console":  map[string]any{"total": consoleTotal, "kept": len(obs.Console), "errors": errs, "warnings": warns, "first_errors": firstErrors},
		"network":  map[string]any{"requests": requestsTotal, "kept": len(obs.Requests), "failed": failed},
		"elements": elementsTotal,
	}
	if len(obs.Blocked) > 0 {
		res["blocked"] = obs.Blocked
		res["blocked_total"] = max(obs.BlockedTotal, len(obs.Blocked))
	}
	if obs.PopupsClosed > 0 {
		res["popups_closed"] = obs.PopupsClosed
	}
	if obs.Incomplete != "" {
		res["incomplete"] = obs.Incomplete
	}
	// A capped answer says what it kept of how many: the facts hold the
	// first ones.
	var cut []string
	if len(obs.Console) < consoleTotal {
		at := ""
		if obs.ConsoleFlooded {
			at = "at least "
		}
		cut = append(cut, fmt.Sprintf("first %d of %s%d console messages", len(obs.Console), at, consoleTotal))
	}
	if len(obs.Requests) < requestsTotal {
		cut = append(cut, fmt.Sprintf("first %d of %d requests", len(obs.Requests), requestsTotal))
	}
	if obs.Truncated && len(obs.Elements) < elementsTotal {
		cut = append(cut, fmt.Sprintf("first %d of at least %d interactive elements", len(obs.Elements), elementsTotal))
	}
	if obs.Truncated {
		res["truncated"] = true
		if len(cut) > 0 {
			res["kept"] = strings.Join(cut, "; ")
		}
	}
	sum := fmt.Sprintf("%s (HTTP %d, %q): %s", obs.URL, obs.Status, obs.Title, plural.S(len(obs.Requests), "request"))
	if len(failedText) > 0 {
		sum += fmt.Sprintf(" (%d failed: %s)", len(failedText), strings.Join(first(failedText, 3), ", "))
	}
	sum += fmt.Sprintf(", %s, %s.", plural.S(errs, "console error"), plural.S(len(obs.Elements), "interactive element"))
	if len(cut) > 0 {
		sum += " Kept the " + strings.Join(cut, "; ") + "."
	}
	if obs.Incomplete != "" {
		sum += " Incomplete: " + obs.Incomplete + "."
	}
	return res, sum
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func pathOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Path != "" {
		return u.Path
	}
	return raw
}

// problem is the outcome of a run the client can fix.
func problem(out *manglecp.Outcome, tool, msg string) (*manglecp.Outcome, error) {
	out.Result = map[string]any{"ok": false, "problem": msg}
	out.Summary = fmt.Sprintf("%s did not run: %s.", tool, msg)
	return out, nil
}

// owner is the identity live sessions belong to: the caller's name, or
// "" for anonymous callers (authentication off: one identity).
func owner(ctx context.Context) string {
	name, anonymous := manglecp.CallerIdentity(ctx)
	if anonymous {
		return ""
	}
	return "id:" + name
}

// sessionFact is the fact naming a live session and its current page.
// Like the observation's facts, it comes from the browser and is a
// session fact.
func sessionFact(id, url string) protocol.Fact {
	f := protocol.NewFact("browser_session", id, url)
	f.Source = &protocol.Provenance{SourceType: protocol.SourceExternal, SourceID: BrowserSource, AssertedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	f.Category = protocol.CategorySession
	return f
}

// sessionOf is the live session a click or fill acts on: the first
// browser_session fact of the macro-tool's facts.
func sessionOf(facts []protocol.Fact) string {
	for _, f := range facts {
		if f.Pred == "browser_session" {
			if id := text(f.Args[0]); id != "" {
				return id
			}
		}
	}
	return ""
}

// open loads the page in a new live session and asserts what the browser
// saw: the console and network facts, the page as facts (live.go), and
// browser_session(Session, Url). A page the session did not keep (it did
// not load completely, or flooded its console) is reported as a one-shot
// observation.
func (w *browse) open(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	out := &manglecp.Outcome{}
	url := arg(c.Args, "url")
	obs, msg, err := w.do(out, func() (*chrome.Observation, error) { return w.b.OpenSession(ctx, owner(ctx), url) })
	if err != nil {
		return nil, err
	}
	if obs == nil || obs.LoadError != "" {
		return problem(out, "open_page", msg)
	}
	if !obs.Live {
		res, sum := pageResult(obs)
		res["ok"] = true
		out.Result = res
		out.Summary = "Opened " + sum
		out.Retract = append(pageRetractions(), protocol.NewFact("browser_session", nil, nil), protocol.NewFact("current_url", nil))
		out.Assert = append([]protocol.Fact{currentURL(obs.URL, time.Now())}, observationFacts(obs, time.Now())...)
		out.ContinuationFacts = []protocol.Fact{protocol.NewFact("current_url", obs.URL)}
		return out, ctx.Err()
	}
	// The client's state keeps one session (the delta retracts the
	// others): the caller's earlier session is ended now rather than when
	// it would be idle.
	if old := sessionOf(c.Facts); old != "" && old != obs.Session {
		_ = w.session(ctx, old).End(ctx)
	}
	w.settleLive(ctx, out, obs, w.session(ctx, obs.Session), "Opened")
	out.Retract = append(out.Retract, protocol.NewFact("browser_session", nil, nil))
	return out, ctx.Err()
}

// act clicks or fills an element: on the live page of the session a
// browser_session fact names (live.go), else on a freshly loaded page of
// current_url.
func (w *browse) act(kind string) manglecp.Action {
	return func(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
		a := &chrome.Act{Kind: kind, ElementID: arg(c.Args, "element_id"), Value: arg(c.Args, "value")}
		if sessionOf(c.Facts) != "" {
			verb := map[string]string{"click": "Clicked", "fill": "Filled"}[kind]
			return w.live(ctx, c, verb+" "+protocol.Quote(a.ElementID), func(s *chrome.Session) (*chrome.Observation, error) {
				return s.Act(ctx, a)
			})
		}
		out := &manglecp.Outcome{}
		url, ok := w.pageOf(c.Facts)
		if !ok {
			return problem(out, c.Tool, "no current_url the server's browser may open")
		}
		obs, msg, err := w.run(ctx, out, chrome.Task{URL: url, Act: a})
		if err != nil {
			return nil, err
		}
		if obs == nil || obs.LoadError != "" {
			return problem(out, c.Tool, msg)
		}
		res, sum := pageResult(obs)
		r := obs.Action
		res["ok"] = true
		res["action"] = map[string]any{"kind": kind, "element_id": r.ElementID, "changed": r.Changed,
			"url_before": r.URLBefore, "new_requests": r.Requests, "new_console_messages": r.Console}
		res["text"] = obs.Text
		out.Result = res
		verb := map[string]string{"click": "Clicked", "fill": "Filled"}[kind]
		change := "the page did not change"
		if r.Changed {
			change = "the page changed"
		}
		out.Summary = fmt.Sprintf("%s %s: %s; now %s", verb, r.ElementID, change, sum)
		out.Retract = []protocol.Fact{protocol.NewFact("interactive_element", nil, nil, nil)}
		out.Assert = observationFacts(obs, time.Now())
		out.ContinuationFacts = []protocol.Fact{protocol.NewFact("current_url", obs.URL)}
		return out, ctx.Err()
	}
}

// pageOf is the page a click or fill acts on: the first current_url of
// the macro-tool's facts (in order) that the browser may open. The rules
// offered the tool because one exists.
func (w *browse) pageOf(facts []protocol.Fact) (string, bool) {
	for _, f := range facts {
		if f.Pred != "current_url" {
			continue
		}
		if u := text(f.Args[0]); u != "" {
			if _, err := w.b.CheckURL(u); err == nil {
				return u, true
			}
		}
	}
	return "", false
}

// screenshot returns a PNG of the page's viewport.
func (w *browse) screenshot(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	out := &manglecp.Outcome{}
	obs, msg, err := w.run(ctx, out, chrome.Task{URL: arg(c.Args, "url"), Screenshot: true})
	if err != nil {
		return nil, err
	}
	if obs == nil || obs.LoadError != "" {
		return problem(out, "screenshot_page", msg)
	}
	out.Result = map[string]any{"ok": true, "url": obs.URL, "title": obs.Title, "media_type": "image/png",
		"encoding": "base64", "bytes": len(obs.PNG), "data": base64.StdEncoding.EncodeToString(obs.PNG)}
	out.Summary = fmt.Sprintf("Captured a 1280x800 PNG (%d bytes) of %s.", len(obs.PNG), obs.URL)
	return out, ctx.Err()
}
