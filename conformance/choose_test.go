package conformance_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/conformance"
)

// TestFixtureChosenByTheManifestDomain: without a fixture, the suite uses
// the built-in fixture for the manifest's domain, so the browser server's
// fixture checks run instead of skipping (issue 29: 11 checks skipped
// without --fixture browser); a workspace server whose root lacks the
// fixture's notes.txt gets none (its checks SKIP, nothing FAILs).
func TestFixtureChosenByTheManifestDomain(t *testing.T) {
	checks := allBut("errors.message_too_large", "transport")
	base := serveHTTP(t, newServer(t, nil), nil, nil)
	chosen := run(t, base, &conformance.Options{Checks: checks})
	without := run(t, base, &conformance.Options{NoFixture: true, Checks: checks})
	if !strings.HasPrefix(chosen.Fixture, "browser (built in, chosen by the manifest's domain browser_diagnostics)") {
		t.Errorf("fixture %q", chosen.Fixture)
	}
	if !chosen.OK() {
		t.Errorf("failures with the chosen fixture:\n%s", chosen.Format())
	}
	for _, id := range []string{"security.confirmation", "invocation.macro_expired"} {
		if c := chosen.Check(id); c.Status != conformance.Pass {
			t.Errorf("%s with the chosen fixture: %+v", id, c)
		}
	}
	if chosen.Summary.Skip >= without.Summary.Skip {
		t.Errorf("%d checks skip with the chosen fixture, %d without", chosen.Summary.Skip, without.Summary.Skip)
	}
	t.Logf("skipped: %d without a fixture, %d with the one chosen", without.Summary.Skip, chosen.Summary.Skip)

	for _, tc := range []struct {
		name     string
		notes    bool
		wantName string
	}{
		{"workspace root without notes.txt", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := workspaceRoot(t)
			if !tc.notes {
				_ = os.Remove(filepath.Join(dir, "notes.txt"))
			}
			srv := workspaceServer(t, dir)
			rep := run(t, serveHTTP(t, srv, nil, nil), &conformance.Options{Checks: []string{"manifest", "evaluation", "invocation", "security"}})
			if (tc.wantName == "" && rep.Fixture != "") || !strings.HasPrefix(rep.Fixture, tc.wantName) {
				t.Errorf("fixture %q, want %q", rep.Fixture, tc.wantName)
			}
			if !rep.OK() {
				t.Errorf("failures:\n%s", rep.Format())
			}
		})
	}
}
