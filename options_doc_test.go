package manglecp

import (
	"flag"
	"testing"

	"github.com/manglecp/manglecp/internal/settings"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the server settings table of docs/deploy.md")

// TestOptionsDocumented: docs/deploy.md lists every setting of Options
// with its config file key and default, as settings.Table writes them
// (go test -run TestOptionsDocumented -update-docs rewrites the table).
// The defaults that depend on the machine (evaluation slots) show 0, as
// their help says.
func TestOptionsDocumented(t *testing.T) {
	d := (&Options{}).withDefaults()
	d.ServerVersion, d.MaxConcurrentEvaluations, d.MaxEvaluationsPerCaller = "", 0, 0
	d.AnonymousPermissions = nil
	if err := settings.CheckDoc("docs/deploy.md", "server", settings.Table(&d, ""), *updateDocs); err != nil {
		t.Error(err)
	}
}
