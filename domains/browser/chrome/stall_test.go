package chrome

import (
	"context"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/browser/internal/testapp"
)

// TestStallRereadKeepsCrossSiteFrames: issue 36. When a session call's
// inspection got no answer (a page busy with a heavy layout) and the
// stall check found the page answering again, the page was read again
// without its cross-site frames (readAXPage): the refs of a frame of
// another site, which the normal read shows, vanished from that one
// answer. The re-read now goes through readPageOf like the normal read.
//
// The call's work here only reports the unanswered inspection (what
// drive does when inspect times out), so the check and the re-read run
// on the real page every time, with no page kept busy for seconds.
func TestStallRereadKeepsCrossSiteFrames(t *testing.T) {
	t.Parallel()
	ts := testapp.Serve(t, testapp.Dir("../gallery"))
	b := SharedBrowser(t)
	ctx := context.Background()
	obs, err := b.OpenSession(ctx, "ada", ts.URL+"/frames.html")
	if err != nil {
		t.Fatal(err)
	}
	const frameRef = "Recipient (frame Payment)" // the cross-site frame's field
	hasRef := func(p *Page) bool {
		if p == nil {
			return false
		}
		for _, e := range p.Elements {
			if e.Ref == frameRef {
				return true
			}
		}
		return false
	}
	if !hasRef(obs.Page) {
		t.Fatalf("the normal read has no %q", frameRef)
	}
	s, err := b.take(ctx, "ada", obs.Session)
	if err != nil {
		t.Fatal(err)
	}
	obs, err = b.call(ctx, s, func(op context.Context, lt *liveTab, obs *Observation) error {
		obs.Incomplete = unansweredNote
		return nil
	})
	b.after(s, err)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Incomplete != "" || obs.Page == nil {
		t.Fatalf("after the check the page was not read again: incomplete %q, page %v", obs.Incomplete, obs.Page != nil)
	}
	if !hasRef(obs.Page) {
		var refs []string
		for _, e := range obs.Page.Elements {
			refs = append(refs, e.Ref)
		}
		t.Errorf("the page read after the check has no %q: %s", frameRef, strings.Join(refs, ", "))
	}
}
