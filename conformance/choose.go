package conformance

import (
	"fmt"
	"time"
)

// chooseFixture picks the built-in fixture for the manifest's domain.id
// when the run has none: its evaluate request, replayed in the present,
// must answer and select every tool the fixture invokes (a fixture that
// needs server state, such as the workspace fixture's notes.txt, is left
// out for a server without it). The request answered becomes the run's
// main request. It returns how the report names the fixture ("" when none
// was chosen).
func (r *runner) chooseFixture(start time.Time) string {
	for _, name := range BuiltinFixtures() {
		f, err := BuiltinFixture(name)
		if err != nil || f.Domain == "" || f.Domain != r.m.Domain.ID || f.Evaluate == nil {
			continue
		}
		f = f.inPresent(start)
		q := fixtureReq(f.Evaluate)
		m, _ := r.tryMain(q)
		if m == nil {
			continue
		}
		fits := true
		for _, inv := range []*FixtureInvoke{f.Invoke, f.Confirmation} {
			if inv != nil && findTool(m.tools(), inv.Tool) == nil {
				fits = false
			}
		}
		if !fits {
			continue
		}
		m.desc, m.fixture = fmt.Sprintf("the fixture's %s request", q.Name), true
		r.fixture, r.main, r.mainDone = f, m, true
		return fmt.Sprintf("%s (built in, chosen by the manifest's domain %s)", name, f.Domain)
	}
	return ""
}
