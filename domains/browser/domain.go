// Package browser is the default MangleCP domain: the specs' running
// browser-diagnostics example. Clients describe a page (its URL, console
// events, network requests and responses, interactive elements) and get
// macro-tools for the intents observe, diagnose_error and automate.
//
// When the server has a Chromium (see package chrome), the domain also
// drives it: open_page loads the page in an isolated browser context and
// asserts what the browser saw as facts (console_event, net_request,
// net_response, interactive_element, with the browser as their source),
// click_element and fill_field act on observed elements, and
// screenshot_page returns a PNG. Whether a browser is available, and which
// URLs it may open, reach the rules as external predicates
// (browser_available, url_parts, browser_allowed_host), so the rules
// decide which tools to offer.
//
// Its rules (embedded, under rules/policy and rules/domain) decide which
// tools fit; its actions compute real analyses over the facts a macro-tool
// was synthesized from, and one action writes a report file, which the
// policy rules put behind user confirmation.
package browser

import (
	"embed"
	"errors"
	"io/fs"
	"net/http"
	"sync"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/protocol"
)

// The domain's error codes (Domain.Codes). Both are recoverable and carry
// retry_after_ms.
const (
	// CodeBrowserBusy: every page slot of the server's browser is in use
	// and the queue is full (or the wait for a slot ran out).
	CodeBrowserBusy protocol.Code = "x-browser_busy"
	// CodeBrowserRestarting: the browser stopped answering (or its
	// process ended) during the call and is being restarted.
	CodeBrowserRestarting protocol.Code = "x-browser_restarting"
	// CodeBrowserSessionGone: the browser session a fact names is not
	// open on this server (ended, idle too long, or opened on another
	// replica). Recoverable: open the page again.
	CodeBrowserSessionGone protocol.Code = "x-browser_session_gone"
)

// Codes are the browser domain's error codes.
func Codes() []protocol.CodeInfo {
	return []protocol.CodeInfo{
		{Code: CodeBrowserBusy, HTTPStatus: http.StatusTooManyRequests, Recoverable: true,
			Description: "The server's browser has all its pages in use and its queue full (browser max_pages, max_queued); retry after retry_after_ms"},
		{Code: CodeBrowserRestarting, HTTPStatus: http.StatusServiceUnavailable, Recoverable: true,
			Description: "The server's browser stopped answering and is being restarted; retry after retry_after_ms"},
		{Code: CodeBrowserSessionGone, HTTPStatus: http.StatusGone, Recoverable: true,
			Description: "The browser session named by browser_session is not open on this server (it ended, was idle too long, or lives on another replica); open the page again"},
		dialogCode,
		requestIDCode,
	}
}

// health links the browser's health reports to the server's
// (Domain.Health): the manifest's x-browser extension follows the
// browser, and the server is degraded while the browser is restarted.
type health struct {
	b      *chrome.Browser
	mu     sync.Mutex
	report manglecp.HealthReport
}

// attach is Domain.Health.
func (h *health) attach(report manglecp.HealthReport) {
	h.mu.Lock()
	h.report = report
	h.mu.Unlock()
	h.changed(h.b.Health())
}

// changed is chrome.Config.OnHealth.
func (h *health) changed(st chrome.Health) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.report == nil {
		return
	}
	degraded := ""
	if !st.OK && st.Restarts > 0 {
		degraded = st.Reason // a browser that worked and stopped; not one turned off
	}
	h.report("x-browser", browserStatus(st), degraded)
}

// browserStatus is the x-browser extension.
func browserStatus(st chrome.Health) map[string]any {
	m := map[string]any{"available": st.OK}
	if st.Restarts > 0 {
		m["restarts"] = st.Restarts
	}
	if !st.OK {
		m["reason"] = st.Reason
	}
	return m
}

//go:embed rules
var rules embed.FS

// ID is the domain id advertised in the manifest.
const ID = "browser_diagnostics"

// Config configures the domain: its report directory and its browser.
type Config struct {
	// ReportDir is where write_diagnosis_report writes its reports. It
	// must be a directory (not a symlink) owned by the server's user.
	// Default: a private directory (0700) under the user cache directory
	// (e.g. ~/.cache/manglecp/reports). Created on first write; [Domain]
	// logs a warning naming it when it could not be written.
	ReportDir string
	// Config holds the browser's settings: the Chromium binary (Path),
	// the allowed hosts, the bounds of its work and its live sessions,
	// the upload directory and the page-script option, and the Logger.
	// Zero values take chrome's defaults; see chrome.Config and
	// docs/browser.md (Configuration) for each and the worst case. The
	// domain sets OnHealth to report the browser's state (calling the
	// caller's own after it).
	chrome.Config
}

// Rules returns the embedded rule files (policy/ and domain/).
func Rules() fs.FS {
	sub, _ := fs.Sub(rules, "rules")
	return sub
}

// Domain returns the browser-diagnostics domain with its embedded rules.
// Replace Domain.Rules (e.g. with os.DirFS) to serve edited rules. The
// domain owns a browser (started on first use): call the server's Close,
// which calls Domain.Close, to stop it.
func Domain(cfg Config) manglecp.Domain {
	if cfg.ReportDir == "" {
		cfg.ReportDir = defaultReportDir()
	}
	warnReportDir(cfg.ReportDir, cfg.Logger)
	a := &actions{reports: &reports{dir: cfg.ReportDir, recheck: recheckReports}}
	h := &health{}
	bcfg := cfg.Config
	if own := bcfg.OnHealth; own != nil {
		bcfg.OnHealth = func(st chrome.Health) { h.changed(st); own(st) }
	} else {
		bcfg.OnHealth = h.changed
	}
	b := chrome.New(bcfg)
	w := &browse{b: b, uploads: cfg.UploadDir != "", scripts: cfg.AllowScripts}
	h.b = b
	return manglecp.Domain{
		ID:          ID,
		Description: "Browser diagnostics: observe a page's console and network (stated by the client or seen by the server's own headless Chromium), trace failed requests to the console errors they cause, and plan or perform validated automation steps.",
		Categories:  []string{"browser_automation", "testing"},
		Rules:       Rules(),
		Samples:     Samples(),
		RulesName:   "browser",
		Actions: map[string]manglecp.ActionSpec{
			"observe_summary":    {Run: a.observeSummary},
			"console_errors":     {Run: a.consoleErrors},
			"causal_chain":       {Run: a.causalChain},
			"write_report":       {Run: a.writeReport},
			"automation_plan":    {Run: a.automationPlan},
			"browser_open":       {Run: w.open},
			"browser_click":      {Run: w.act("click")},
			"browser_fill":       {Run: w.act("fill")},
			"browser_screenshot": {Run: w.screenshot},
			// Live sessions (live.go).
			"browser_fill_form":    {Run: w.fillForm},
			"browser_find":         {Run: w.find},
			"browser_navigate":     {Run: w.navigate},
			"browser_key":          {Run: w.pressKey},
			"browser_interact":     {Run: w.interact},
			"browser_hover":        {Run: w.hover},
			"browser_wait":         {Run: w.wait},
			"browser_dialog":       {Run: w.answerDialog},
			"browser_switch_tab":   {Run: w.switchTab},
			"browser_close_tab":    {Run: w.closeTab},
			"browser_upload":       {Run: w.upload},
			"browser_snapshot_png": {Run: w.snapshotPNG},
			"browser_script":       {Run: w.script},
			"browser_close":        {Run: w.closeSession},
		},
		External: map[string]manglecp.External{
			"report_exists": {
				Arity:         1,
				Description:   "report_exists(RequestID): a diagnosis report for this failed request is already in the server's report directory. Reads the file system, so it is not deterministic.",
				Deterministic: false,
				Compute:       a.reportExists,
			},
			"browser_session_open": {
				Arity:         1,
				Description:   "browser_session_open(Session): a live session named by a browser_session fact that the server's browser has open now (one that ended, or lives on another replica, is not, and its tools are not offered). Reads the browser's state, so it is not deterministic.",
				Deterministic: false,
				Compute:       sessionsOpen(b),
			},
			"page_quoted": {
				Arity:         2,
				Description:   quotedDescription,
				Deterministic: true,
				Compute:       pageQuoted,
			},
			"request_id_fits": {
				Arity:         1,
				Description:   "request_id_fits(RequestID): a failed request whose id is at most 4096 bytes, which diagnose_causal_chain and write_diagnosis_report take (longer ids, which the browser never makes, are not offered).",
				Deterministic: true,
				Compute:       requestIDsFit,
			},
			"browser_available": {
				Arity:         1,
				Description:   "browser_available(Engine): the server's own headless browser can run now (Engine \"chromium\"); the browser tools are offered only then. Why it is not: extensions[\"x-browser\"].reason.",
				Deterministic: false,
				Compute:       w.browserAvailable,
			},
			"url_parts": {
				Arity:         3,
				Description:   "url_parts(Url, Scheme, Host): each current_url parsed (scheme and host lower-cased).",
				Deterministic: true,
				Compute:       w.urlParts,
			},
			"browser_option": {
				Arity:         1,
				Description:   "browser_option(Name): an optional capability the operator enabled: \"uploads\" (an upload directory) or \"scripts\" (page scripts).",
				Deterministic: true,
				Compute:       w.options,
			},
			"browser_allowed_host": {
				Arity:         1,
				Description:   "browser_allowed_host(Host): a host of the current_url facts that the server's allowed_hosts list admits (default: loopback only).",
				Deterministic: true,
				Compute:       w.allowedHosts,
			},
		},
		Extensions: map[string]any{"x-browser": browserStatus(b.Health())},
		Health:     h.attach,
		Codes:      Codes(),
		Close:      func() error { return errors.Join(b.Close(), a.reports.close()) },
	}
}
