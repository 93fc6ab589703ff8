package code

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/internal/lsp"
	"github.com/manglecp/manglecp/protocol"
)

// A multi-file change: previewed once as one unified diff, applied once
// after one confirmation, all files or none.

// fileChange is one file of a change: its content replaced, or the file
// moved (from set) and possibly edited too.
type fileChange struct {
	to     loc
	from   *loc   // the file's place before a move
	before []byte // the content read for the preview (nil: none)
	after  []byte
	perm   fs.FileMode
}

// plan is a previewed change. A change of file contents only (a rename,
// organised imports) is the workspace domain's edit plan (ws), which
// previews and applies it; a move is the code domain's own (files, dirs):
// the workspace plan does not move files.
type plan struct {
	kind    string // rename, move, imports
	summary string
	files   []*fileChange
	dirs    []loc // directories a move leaves behind, removed when empty
	ws      *workspace.Plan
}

// maxConfirmDiff bounds the diff shown for the user's confirmation
// (apply_code_edit's diff argument, note included): the preview's answer
// holds it all. apply_code_edit with its fixed diff must stay within the
// token budget manglecp mcp sends (900 tokens, about 3,600 characters of
// definition), or the server condenses it and the bridge cannot ask the
// user in the call that previewed.
const maxConfirmDiff = 2048

// maxPending bounds the changes previewed and not yet applied.
const maxPending = 32

// pendingEdit is a previewed change the server keeps under a short handle:
// the client sees only the handle and the diff.
type pendingEdit struct {
	handle   string
	plan     *plan
	diff     string // the whole diff
	confirm  string // the diff shown for confirmation
	identity string
	until    time.Time
}

type pendingEdits struct {
	mu    sync.Mutex
	edits map[string]*pendingEdit
	order []string
}

func (p *pendingEdits) put(e *pendingEdit) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.edits == nil {
		p.edits = map[string]*pendingEdit{}
	}
	p.edits[e.handle] = e
	p.order = append(p.order, e.handle)
	for len(p.order) > maxPending {
		delete(p.edits, p.order[0])
		p.order = p.order[1:]
	}
}

func (p *pendingEdits) get(handle string) *pendingEdit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.edits[handle]
}

func (p *pendingEdits) remove(handle string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.edits, handle)
	for i, h := range p.order {
		if h == handle {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
}

func newHandle() string {
	b := make([]byte, 10)
	rand.Read(b)
	return "c" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// show is the client's form of a change's paths.
func (c *Code) diffOf(p *plan) string {
	if p.ws != nil {
		return p.ws.Diff
	}
	var b strings.Builder
	for _, f := range p.files {
		to := c.show(f.to)
		from := to
		if f.from != nil {
			from = c.show(*f.from)
		}
		if f.from != nil && string(f.before) == string(f.after) {
			fmt.Fprintf(&b, "diff --git a/%s b/%s\nrename from %s\nrename to %s\n", from, to, from, to)
			continue
		}
		if f.from != nil {
			fmt.Fprintf(&b, "diff --git a/%s b/%s\nrename from %s\nrename to %s\n", from, to, from, to)
		}
		b.WriteString(udiff.Unified("a/"+from, "b/"+to, string(f.before), string(f.after)))
	}
	return b.String()
}

// confirmDiff cuts a diff for the confirmation question at a line within
// maxConfirmDiff bytes.
func confirmDiff(diff string) string {
	if len(diff) <= maxConfirmDiff {
		return diff
	}
	cut := strings.LastIndexByte(diff[:maxConfirmDiff-64], '\n') + 1
	rest := strings.Count(diff[cut:], "\n")
	return diff[:cut] + fmt.Sprintf("... (%d more lines; the preview's diff holds them all)\n", rest)
}

// preview stores p under a new handle and answers with its diff once; the
// continuation fact code_previewed(handle, diff) lets the rules offer
// apply_code_edit with that diff.
func (c *Code) preview(ctx context.Context, p *plan, out *manglecp.Outcome, extra map[string]any) (*manglecp.Outcome, error) {
	if len(p.files) == 0 {
		return nil, fail(CodeNothingToChange, "nothing to apply", map[string]any{}, "the change changes nothing")
	}
	diff := c.diffOf(p)
	e := &pendingEdit{handle: newHandle(), plan: p, diff: diff, confirm: confirmDiff(diff), until: c.now().Add(c.cfg.EditTTL)}
	e.identity, _ = manglecp.CallerIdentity(ctx)
	c.pending.put(e)
	// The diff names every file (--- a/path, rename from/to): no list
	// repeats them.
	out.Result = map[string]any{"diff": diff}
	for k, v := range extra {
		out.Result[k] = v
	}
	out.ContinuationFacts = append(out.ContinuationFacts, protocol.NewFact("code_previewed", e.handle, e.confirm))
	out.Summary = fmt.Sprintf("%s: %d file(s) in one diff; nothing was written yet. Apply it with apply_code_edit.", p.summary, len(p.files))
	return out, nil
}

// openCodeEdits computes open_code_edit for the code_previewed facts of a
// request: those whose handle this server issued with that diff and which
// have not expired.
func (a *actions) openCodeEdits(_ context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	var out [][]any
	n := 0
	for _, f := range factsOf(in.Facts, "code_previewed") {
		if n++; n > 16 || len(f.Args) != 2 {
			continue
		}
		h, _ := f.Args[0].(string)
		d, _ := f.Args[1].(string)
		e := a.c.pending.get(h)
		if e == nil || e.confirm != d || !a.c.now().Before(e.until) {
			continue
		}
		out = append(out, []any{h, d, e.until.UnixNano()})
	}
	return out, nil
}

// applyCodeEdit writes a previewed change: every file unchanged since the
// preview, every destination still free, or nothing is written.
func (a *actions) applyCodeEdit(ctx context.Context, call *manglecp.Call) (*manglecp.Outcome, error) {
	c := a.c
	diffArg, _ := call.Args["diff"].(string)
	var e *pendingEdit
	for _, f := range factsOf(call.Facts, "code_previewed") {
		if len(f.Args) != 2 {
			continue
		}
		h, _ := f.Args[0].(string)
		d, _ := f.Args[1].(string)
		if d != diffArg {
			continue
		}
		if pe := c.pending.get(h); pe != nil && pe.confirm == d {
			e = pe
			break
		}
	}
	if e == nil {
		return nil, fail(workspace.CodeEditInvalid, "preview the change again and apply the diff it returns", map[string]any{},
			"no change this server previewed has this diff")
	}
	if id, _ := manglecp.CallerIdentity(ctx); id != e.identity {
		return nil, fail(workspace.CodeEditInvalid, "preview the change again", map[string]any{}, "the change was previewed for another identity")
	}
	if !c.now().Before(e.until) {
		c.pending.remove(e.handle)
		until := e.until.UTC().Format(time.RFC3339)
		return nil, fail(workspace.CodeEditExpired, "preview the change again", map[string]any{"expired_at": until}, "the previewed change expired at %s", until)
	}
	out := &manglecp.Outcome{}
	p := e.plan
	if p.ws != nil {
		// The workspace domain's plan checks every file, then writes.
		if err := out.Step("write", func() (string, error) {
			written, err := c.ws.Apply(ctx, p.ws)
			if err == nil {
				c.pending.remove(e.handle)
			}
			return fmt.Sprintf("%d files", len(written)), err
		}); err != nil {
			return nil, err
		}
	} else {
		if err := out.Step("check", func() (string, error) { return c.checkPlan(p) }); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// From here on the change is written whole or undone.
		c.pending.remove(e.handle)
		if err := out.Step("write", func() (string, error) { return c.writePlan(p) }); err != nil {
			return nil, err
		}
	}
	var changed []loc
	for _, f := range p.files {
		changed = append(changed, f.to)
	}
	// The preview's diff named the files; the answer adds what is new:
	// the diagnostics after the change.
	result := map[string]any{}
	diags, note := c.diagnosticsAfter(ctx, p, changed)
	if len(diags) > 0 {
		result["diagnostics"] = diags
	}
	if note != "" {
		result["diagnostics_note"] = note
	}
	out.Result = result
	for _, f := range p.files {
		out.ContinuationFacts = append(out.ContinuationFacts, protocol.NewFact("mentioned", c.show(f.to)))
	}
	out.Retract = []protocol.Fact{protocol.NewFact("code_previewed", e.handle, nil)}
	errs := 0
	for _, d := range diags {
		if strings.Contains(d, ": error: ") {
			errs++
		}
	}
	out.Summary = fmt.Sprintf("Applied the change to %d file(s); %d error diagnostic(s) after it.", len(p.files), errs)
	return out, nil
}

// checkPlan checks that the files are still those the preview read and
// that the destinations of moves are free.
func (c *Code) checkPlan(p *plan) (string, error) {
	for _, f := range p.files {
		src := f.to
		if f.from != nil {
			src = *f.from
			if f.to.exists() {
				shown := c.show(f.to)
				return "destination exists", fail(workspace.CodeDestinationExists, "preview the move again to another destination", map[string]any{"path": shown}, "%s exists", quote(shown))
			}
		}
		if f.before == nil {
			continue
		}
		cur, err := c.readText(src, c.cfg.MaxFileBytes)
		if err != nil {
			return "read failed", err
		}
		if digestOf(cur) != digestOf(f.before) {
			shown := c.show(src)
			return "changed", fail(workspace.CodeFileChanged, "preview the change again on the files' current content",
				map[string]any{"path": shown, "expected_digest": digestOf(f.before), "actual_digest": digestOf(cur)},
				"%s changed since the preview", quote(shown))
		}
	}
	return "unchanged", nil
}

// writePlan writes every file of p; on a failure it restores the files it
// wrote and removes the ones it created.
func (c *Code) writePlan(p *plan) (string, error) {
	type undo struct {
		l       loc
		content []byte // nil: remove l
		perm    fs.FileMode
	}
	var undos []undo
	rollback := func() {
		for i := len(undos) - 1; i >= 0; i-- {
			u := undos[i]
			if u.content == nil {
				_ = u.l.root.fs.Remove(u.l.rel)
			} else {
				_ = c.writeAtomic(u.l, u.content, u.perm)
			}
		}
	}
	for _, f := range p.files {
		perm := f.perm
		if perm == 0 {
			perm = 0o644
		}
		if f.from != nil {
			if err := f.to.root.fs.MkdirAll(path.Dir(f.to.rel), 0o755); err != nil {
				rollback()
				return "mkdir failed", c.fsError(c.show(f.to), err)
			}
			if err := c.writeAtomic(f.to, f.after, perm); err != nil {
				rollback()
				return "write failed", err
			}
			undos = append(undos, undo{l: f.to})
			continue
		}
		if err := c.writeAtomic(f.to, f.after, perm); err != nil {
			rollback()
			return "write failed", err
		}
		undos = append(undos, undo{l: f.to, content: f.before, perm: perm})
	}
	// The sources of moves go last, once every new file is in place.
	for _, f := range p.files {
		if f.from != nil {
			_ = f.from.root.fs.Remove(f.from.rel)
		}
	}
	for i := len(p.dirs) - 1; i >= 0; i-- {
		_ = p.dirs[i].root.fs.Remove(p.dirs[i].rel) // only when empty
	}
	return fmt.Sprintf("%d files", len(p.files)), nil
}

// applyTextEdits applies LSP text edits (UTF-16 positions) to content.
func applyTextEdits(content []byte, edits []lsp.TextEdit) ([]byte, error) {
	type span struct {
		start, end int
		text       string
	}
	lines := lineStarts(content)
	spans := make([]span, 0, len(edits))
	for _, e := range edits {
		s, ok1 := offsetOf(content, lines, e.Range.Start)
		t, ok2 := offsetOf(content, lines, e.Range.End)
		if !ok1 || !ok2 || t < s {
			return nil, fmt.Errorf("edit range %v outside the file", e.Range)
		}
		spans = append(spans, span{s, t, e.NewText})
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b []byte
	last := 0
	for _, s := range spans {
		if s.start < last {
			return nil, fmt.Errorf("overlapping edits")
		}
		b = append(b, content[last:s.start]...)
		b = append(b, s.text...)
		last = s.end
	}
	return append(b, content[last:]...), nil
}

func lineStarts(content []byte) []int {
	starts := []int{0}
	for i, ch := range content {
		if ch == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// offsetOf is the byte offset of an LSP position (line, UTF-16 column).
func offsetOf(content []byte, lines []int, p lsp.Position) (int, bool) {
	if p.Line < 0 || p.Line > len(lines) || p.Character < 0 {
		return 0, false
	}
	if p.Line == len(lines) { // the position just past the end
		return len(content), p.Character == 0
	}
	i := lines[p.Line]
	units := 0
	for i < len(content) && content[i] != '\n' && units < p.Character {
		r, size := utf8.DecodeRune(content[i:])
		units += len(utf16.Encode([]rune{r}))
		i += size
	}
	return i, true
}

// lineText is the text of a zero-based line, cut to 200 bytes.
func lineText(content []byte, lines []int, line int) string {
	if line < 0 || line >= len(lines) {
		return ""
	}
	end := len(content)
	if line+1 < len(lines) {
		end = lines[line+1] - 1
	}
	s := strings.TrimRight(string(content[lines[line]:end]), "\r")
	s = strings.TrimSpace(s)
	return protocol.ClipN(s, 200)
}

// planFromWorkspaceEdit turns a server's WorkspaceEdit into a plan over
// files of r, read through its os.Root. An edit of a file outside the
// root refuses the whole change.
func (c *Code) planFromWorkspaceEdit(ctx context.Context, r *croot, we *lsp.WorkspaceEdit, kind, summary string) (*plan, error) {
	byURI := map[string][]lsp.TextEdit{}
	var order []string
	add := func(uri string, edits []lsp.TextEdit) {
		if _, ok := byURI[uri]; !ok {
			order = append(order, uri)
		}
		byURI[uri] = append(byURI[uri], edits...)
	}
	type move struct{ from, to string }
	var moves []move
	for _, dc := range we.DocumentChanges {
		switch {
		case dc.TextDocument != nil:
			add(dc.TextDocument.URI, dc.Edits)
		case dc.Kind == "rename":
			moves = append(moves, move{dc.OldURI, dc.NewURI})
		case dc.Kind != "":
			return nil, fail(CodeNotMovable, "the language server's change creates or deletes files, which this domain does not apply", map[string]any{"kind": dc.Kind},
				"the change holds a %s of a file", dc.Kind)
		}
	}
	uris := make([]string, 0, len(we.Changes))
	for u := range we.Changes {
		uris = append(uris, u)
	}
	sort.Strings(uris)
	for _, u := range uris {
		add(u, we.Changes[u])
	}
	outside := 0
	p := &plan{kind: kind, summary: summary}
	if len(moves) == 0 {
		var edits []workspace.Edit
		for _, u := range order {
			l, ok := r.fromURI(u)
			if !ok {
				outside++
				continue
			}
			e := workspace.Edit{Path: c.show(l)}
			for _, te := range byURI[u] {
				e.Spans = append(e.Spans, workspace.Span{
					Start: workspace.Position{Line: te.Range.Start.Line, Character: te.Range.Start.Character},
					End:   workspace.Position{Line: te.Range.End.Line, Character: te.Range.End.Character},
					New:   te.NewText})
			}
			edits = append(edits, e)
			p.files = append(p.files, &fileChange{to: l})
		}
		if outside > 0 {
			return nil, fail(CodeEditOutsideRoot, "rename a symbol defined inside the root", map[string]any{"count": outside},
				"the change would edit %d file(s) outside the root; nothing was changed", outside)
		}
		if len(edits) == 0 {
			return p, nil
		}
		wp, err := c.ws.Preview(ctx, edits)
		if err != nil {
			return nil, err
		}
		p.ws = wp
		p.files = p.files[:0]
		for _, f := range wp.Files {
			l, err := c.resolve(f.Path)
			if err != nil {
				return nil, err
			}
			p.files = append(p.files, &fileChange{to: l})
		}
		return p, nil
	}
	for _, u := range order {
		l, ok := r.fromURI(u)
		if !ok {
			outside++
			continue
		}
		before, err := c.readText(l, c.cfg.MaxFileBytes)
		if err != nil {
			return nil, err
		}
		after, err := applyTextEdits(before, byURI[u])
		if err != nil {
			return nil, fail(CodeServerFailed, "try again", map[string]any{"path": c.show(l)}, "the language server's edit of %s does not fit the file: %v", quote(c.show(l)), err)
		}
		if string(after) == string(before) {
			continue
		}
		st, _ := l.root.fs.Stat(l.rel)
		perm := fs.FileMode(0o644)
		if st != nil {
			perm = st.Mode().Perm()
		}
		p.files = append(p.files, &fileChange{to: l, before: before, after: after, perm: perm})
	}
	for _, m := range moves {
		from, ok1 := r.fromURI(m.from)
		to, ok2 := r.fromURI(m.to)
		if !ok1 || !ok2 {
			outside++
			continue
		}
		// A file both edited and moved: the move carries the edit.
		var fc *fileChange
		for _, f := range p.files {
			if f.to == from {
				fc = f
			}
		}
		if fc == nil {
			before, err := c.readText(from, c.cfg.MaxFileBytes)
			if err != nil {
				return nil, err
			}
			fc = &fileChange{before: before, after: before}
			p.files = append(p.files, fc)
		}
		fc.to, fc.from = to, &from
	}
	if outside > 0 {
		return nil, fail(CodeEditOutsideRoot, "rename a symbol defined inside the root", map[string]any{"count": outside},
			"the change would edit %d file(s) outside the root; nothing was changed", outside)
	}
	if len(p.files) > c.cfg.MaxEditFiles {
		return nil, fail(CodeTooManyFiles, "make a smaller change", map[string]any{"limit": c.cfg.MaxEditFiles, "count": len(p.files)},
			"the change touches %d files; the limit is %d", len(p.files), c.cfg.MaxEditFiles)
	}
	return p, nil
}
