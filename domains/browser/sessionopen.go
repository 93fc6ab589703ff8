package browser

import (
	"context"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser/chrome"
)

// sessionsOpen computes the external predicate browser_session_open: the
// sessions of the browser_session facts that the server's browser has
// open now. It reads the browser's state, so it is not deterministic.
func sessionsOpen(b *chrome.Browser) func(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	return func(ctx context.Context, in *manglecp.ExternalInput) ([][]any, error) {
		var out [][]any
		seen := map[string]bool{}
		for _, f := range in.Facts {
			if f.Pred != "browser_session" || len(f.Args) == 0 {
				continue
			}
			id, ok := f.Args[0].(string)
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			if b.SessionOpen(id) {
				out = append(out, []any{id})
			}
		}
		return out, ctx.Err()
	}
}
