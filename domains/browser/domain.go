// Package browser is the default MangleCP domain: the specs' running
// browser-diagnostics example. Clients describe a page (its URL, console
// events, network requests and responses, interactive elements) and get
// macro-tools for the intents observe, diagnose_error and automate.
//
// Its rules (embedded, under rules/policy and rules/domain) decide which
// tools fit; its actions compute real analyses over the facts a macro-tool
// was synthesized from, and one action writes a report file, which the
// policy rules put behind user confirmation.
package browser

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/manglecp/manglecp"
)

//go:embed rules
var rules embed.FS

// ID is the domain id advertised in the manifest.
const ID = "browser_diagnostics"

// Config configures the domain's actions.
type Config struct {
	// ReportDir is where write_diagnosis_report writes its reports.
	// Default: <os.TempDir()>/manglecp-reports. Created on first write.
	ReportDir string
}

// Rules returns the embedded rule files (policy/ and domain/).
func Rules() fs.FS {
	sub, _ := fs.Sub(rules, "rules")
	return sub
}

// Domain returns the browser-diagnostics domain with its embedded rules.
// Replace Domain.Rules (e.g. with os.DirFS) to serve edited rules.
func Domain(cfg Config) manglecp.Domain {
	if cfg.ReportDir == "" {
		cfg.ReportDir = filepath.Join(os.TempDir(), "manglecp-reports")
	}
	a := &actions{reportDir: cfg.ReportDir}
	return manglecp.Domain{
		ID:          ID,
		Description: "Browser diagnostics: observe a page's console and network, trace failed requests to the console errors they cause, and plan validated automation steps.",
		Categories:  []string{"browser_automation", "testing"},
		Rules:       Rules(),
		Samples:     Samples(),
		RulesName:   "browser",
		Actions: map[string]manglecp.ActionSpec{
			"observe_summary": {Run: a.observeSummary},
			"console_errors":  {Run: a.consoleErrors},
			"causal_chain":    {Run: a.causalChain},
			"write_report":    {Run: a.writeReport},
			"automation_plan": {Run: a.automationPlan},
		},
		External: map[string]manglecp.External{
			"report_exists": {
				Arity:         1,
				Description:   "report_exists(RequestID): a diagnosis report for this failed request is already in the server's report directory. Reads the file system, so it is not deterministic.",
				Deterministic: false,
				Compute:       a.reportExists,
			},
		},
	}
}
