package workspace

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/words"
	"github.com/manglecp/manglecp/protocol"
)

// Edits that take one step: preview_edit with all, preview_edits (a list
// of {path, old, new, all}) and replace (a whole-word replace across a
// glob) preview one plan (plan.go) shown once as one unified diff. The
// server keeps the plan under a short handle, which the previewed fact
// carries as its edit: previewed(FirstPath, Handle, "", "", Diff). The
// handle is bound to the identity that previewed, expires after EditTTL
// and is applied at most once; apply_edit applies the plan after one
// consent, each file only if it still has the content the preview read.

// maxHeldPlans bounds the plans the server keeps waiting for apply_edit.
const maxHeldPlans = 64

// planHandlePrefix starts every plan handle ("p" and 12 base32 letters),
// which no signed edit id (e1.…) does.
const planHandlePrefix = "p"

// heldPlan is a previewed plan kept for apply_edit.
type heldPlan struct {
	plan     *Plan
	identity string
	first    string // the previewed fact's path
	confirm  string // the diff shown for confirmation
	until    time.Time
}

// planStore holds the previewed plans by handle.
type planStore struct {
	mu sync.Mutex
	m  map[string]*heldPlan
}

// hold keeps h and returns its handle. When maxHeldPlans are held, the
// expired ones go first, then the one that expires soonest.
func (s *planStore) hold(h *heldPlan, now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*heldPlan{}
	}
	for k, v := range s.m {
		if !now.Before(v.until) {
			delete(s.m, k)
		}
	}
	for len(s.m) >= maxHeldPlans {
		var soonest string
		for k, v := range s.m {
			if soonest == "" || v.until.Before(s.m[soonest].until) {
				soonest = k
			}
		}
		delete(s.m, soonest)
	}
	handle := planHandlePrefix + strings.ToLower(rand.Text()[:12])
	s.m[handle] = h
	return handle
}

// get returns the plan held under handle (nil if none), expired or not.
func (s *planStore) get(handle string) *heldPlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[handle]
}

// take removes and returns the plan held under handle if it is still h:
// a plan is applied at most once.
func (s *planStore) take(handle string, h *heldPlan) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[handle] != h {
		return false
	}
	delete(s.m, handle)
	return true
}

// isPlanHandle reports whether an edit id is a plan handle.
func isPlanHandle(id string) bool {
	return len(id) == len(planHandlePrefix)+12 && strings.HasPrefix(id, planHandlePrefix) && !strings.Contains(id, ".")
}

// heldFor returns the unexpired plan a previewed fact names: its handle,
// path and diff as the preview returned them.
func (w *Workspace) heldFor(p preview) (*heldPlan, bool) {
	if !isPlanHandle(p.id) {
		return nil, false
	}
	h := w.plans.get(p.id)
	if h == nil || h.first != p.path || h.confirm != p.diff {
		return nil, false
	}
	return h, true
}

// previewEdits is preview_edits: several edits of one or more files.
func (a *actions) previewEdits(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	raw, _ := c.Args["edits"].([]any)
	if len(raw) == 0 {
		return nil, fail(CodeEditConflict, `pass edits as [{"path": ..., "old": ..., "new": ...}]`, nil, "edits is empty")
	}
	if len(raw) > a.w.cfg.MaxEditFiles*4 {
		return nil, fail(CodeFileTooLarge, "send fewer edits at once", map[string]any{"size": len(raw), "limit": a.w.cfg.MaxEditFiles * 4},
			"%d edits; the limit is %d", len(raw), a.w.cfg.MaxEditFiles*4)
	}
	edits := make([]Edit, 0, len(raw))
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, fail(CodeEditConflict, `each edit is {"path": ..., "old": ..., "new": ...}`, map[string]any{"index": i}, "edit %d is not an object", i)
		}
		all, _ := m["all"].(bool)
		edits = append(edits, Edit{Path: argString(m, "path"), Old: argString(m, "old"), New: argString(m, "new"), All: all})
	}
	return a.previewPlan(ctx, edits)
}

// replaceAcross is replace: old replaced by new, whole words unless word
// is false, in every text file below path matching glob that holds it.
func (a *actions) replaceAcross(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	old, repl := argString(c.Args, "old"), argString(c.Args, "new")
	word := true
	if v, ok := c.Args["word"].(bool); ok {
		word = v
	}
	if old == "" {
		return nil, fail(CodeAnchorNotFound, "name the text to replace", nil, "the text to replace is empty")
	}
	dir := argOr(c.Args, "path", ".")
	start, err := a.w.resolve(dir)
	if err != nil {
		return nil, err
	}
	pattern := argOr(c.Args, "glob", "**")
	g, err := compileGlob(pattern)
	if err != nil {
		return nil, err
	}
	var edits []Edit
	var tooMany bool
	_, _, err = a.w.walk(ctx, start, func(l loc, rel string, d fs.DirEntry) error {
		if d.IsDir() || !d.Type().IsRegular() || !g.match(rel) {
			return nil
		}
		st, err := d.Info()
		if err != nil || st.Size() > a.w.cfg.MaxReadBytes {
			return nil
		}
		b, _, err := a.w.readText(l, a.w.cfg.MaxReadBytes)
		if err != nil || len(words.Find(string(b), old, word)) == 0 {
			return nil // not text, unreadable, or without the text: not edited
		}
		if len(edits) == a.w.cfg.MaxEditFiles {
			tooMany = true
			return fs.SkipAll
		}
		edits = append(edits, Edit{Path: a.w.show(l), Old: old, New: repl, All: true, Word: word})
		return nil
	})
	if err != nil {
		return nil, err
	}
	shown := a.w.show(start)
	if tooMany {
		return nil, fail(CodeFileTooLarge, "narrow glob or path", map[string]any{"path": shown, "limit": a.w.cfg.MaxEditFiles},
			"more than %d files below %s hold the text", a.w.cfg.MaxEditFiles, quote(shown))
	}
	if len(edits) == 0 {
		what := "the text"
		if word {
			what = "the text as a whole word"
		}
		return nil, fail(CodeAnchorNotFound, "check the text, or widen glob or path", map[string]any{"path": shown},
			"no file matching %s below %s holds %s", quote(pattern), quote(shown), what)
	}
	return a.previewPlan(ctx, edits)
}

// previewPlan previews edits as one plan, keeps it under a handle for
// apply_edit, and answers the one diff.
func (a *actions) previewPlan(ctx context.Context, edits []Edit) (*manglecp.Outcome, error) {
	out := &manglecp.Outcome{}
	var plan *Plan
	if err := out.Step("plan", func() (string, error) {
		var err error
		if plan, err = a.w.Preview(ctx, edits); err != nil {
			return "failed", err
		}
		return plan.String(), nil
	}); err != nil {
		return nil, err
	}
	if len(plan.Files) == 0 {
		return nil, fail(CodeEditConflict, "new must differ from old", nil, "the edits change nothing")
	}
	identity, _ := manglecp.CallerIdentity(ctx)
	now := a.w.now()
	h := &heldPlan{plan: plan, identity: identity, first: plan.Files[0].Path, confirm: confirmDiff(plan.Diff),
		until: now.Add(a.w.cfg.EditTTL).Truncate(time.Second)}
	handle := a.w.plans.hold(h, now)
	out.Result = map[string]any{"diff": plan.Diff}
	previewed := protocol.NewFact("previewed", h.first, handle, "", "", h.confirm)
	previewed.T = &protocol.Temporal{At: now.UTC().Format(time.RFC3339Nano)}
	out.ContinuationFacts = append(mentionedFacts(plan.Paths(), maxSignedEdits), previewed)
	out.Summary = fmt.Sprintf("Previewed %s; nothing written yet.", plan)
	return out, ctx.Err()
}

// applyHeld writes a held plan for apply_edit: for the identity that
// previewed it, unexpired, once.
func (a *actions) applyHeld(ctx context.Context, handle string, h *heldPlan) (*manglecp.Outcome, error) {
	if identity, _ := manglecp.CallerIdentity(ctx); identity != h.identity {
		return nil, fail(CodeEditInvalid, "preview the edit again with preview_edit and apply the diff it returns",
			map[string]any{"edit": handle}, "the edit cannot be applied: it was previewed for another identity")
	}
	if !a.w.now().Before(h.until) {
		until := h.until.UTC().Format(time.RFC3339)
		return nil, fail(CodeEditExpired, "preview the edit again", map[string]any{"edit": handle, "expired_at": until},
			"the previewed edit expired at %s", until)
	}
	out := &manglecp.Outcome{}
	var written []string
	if err := out.Step("write", func() (string, error) {
		var err error
		written, err = a.w.Apply(ctx, h.plan)
		return fmt.Sprintf("%d files", len(written)), err
	}); err != nil {
		if len(written) > 0 {
			a.w.plans.take(handle, h)
		}
		return nil, err
	}
	a.w.plans.take(handle, h)
	out.Result = map[string]any{"paths": written}
	out.Retract = []protocol.Fact{protocol.NewFact("previewed", h.first, nil, nil, nil, nil)}
	out.ContinuationFacts = mentionedFacts(written, maxSignedEdits)
	if len(written) == 1 {
		out.Summary = fmt.Sprintf("Applied the previewed edit to %s.", written[0])
	} else {
		out.Summary = fmt.Sprintf("Applied the previewed edit to %d files.", len(written))
	}
	return out, nil
}
