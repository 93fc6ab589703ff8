package gateway

import (
	"context"
	"crypto/rand"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/bmatcuk/doublestar/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/words"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/upstream"
)

// Bounds of the composed tools.
const (
	maxComposeFiles  = 200     // files a search or replace reads
	maxComposeFile   = 1 << 20 // bytes of one file read
	maxComposeBytes  = 8 << 20 // bytes one search or replace reads
	maxSearchLines   = 200     // matching lines a search answers
	maxSearchLine    = 240     // bytes of one line it shows
	maxSearchContext = 5       // lines of context it may show around one
	maxConfirmDiff   = 1 << 10 // bytes of the diff shown for confirmation (and carried by the apply tool's definition: within the bridge's token budget)
	maxHeldPlans     = 64      // previewed edits held at once
	planTTL          = 15 * time.Minute
	diffContext      = 2 // lines of context in a preview's diff
)

// runComposed runs a composed tool of upstream u.
func (g *Gateway) runComposed(ctx context.Context, u *upstream.Upstream, c *composed, call *manglecp.Call) (*manglecp.Outcome, error) {
	switch c.kind {
	case kindSearch:
		return g.searchText(ctx, u, c, call.Args)
	case kindReplace:
		return g.replace(ctx, u, c, call.Args)
	case kindApply:
		return g.applyEdits(ctx, u, c, call.Args)
	case kindMove:
		return g.move(ctx, u, c, call.Args)
	}
	return nil, fmt.Errorf("gateway: composed tool %s of unknown kind %s", c.name, c.kind)
}

// callRole calls an upstream tool for a composed tool: the arguments are
// checked against the tool's own schema first, and an error answer is an
// error (its text bounded and stripped, as any upstream failure).
func callRole(ctx context.Context, u *upstream.Upstream, e *entry, args map[string]any) (*mcp.CallToolResult, error) {
	if errs := validate(e.schema, args); len(errs) > 0 {
		return nil, invalidArguments(e, errs)
	}
	res, err := u.Call(ctx, owner(ctx), e.original, args)
	if err != nil {
		return nil, upstreamError(err)
	}
	if res.IsError {
		text, _, _ := shape(res, upstream.MaxMessage)
		return nil, fail(CodeToolFailed, "read the message, fix the arguments or the situation, and call again",
			map[string]any{"upstream": u.Name(), "tool": e.original},
			"%s failed: %s", upstreamName(e), upstream.Sanitize(text, upstream.MaxMessage))
	}
	return res, nil
}

// fileText is the text of a file as a read answered it: its structured
// content's "content" when it has one (the filesystem server's), else its
// text items joined; ok is false for an answer that holds anything else.
func fileText(res *mcp.CallToolResult) (string, bool) {
	if m, isMap := res.StructuredContent.(map[string]any); isMap {
		if s, isString := m["content"].(string); isString {
			return s, true
		}
	}
	var b strings.Builder
	for _, c := range res.Content {
		t, isText := c.(*mcp.TextContent)
		if !isText {
			return "", false
		}
		b.WriteString(t.Text)
	}
	return b.String(), true
}

// readFile reads one file through the upstream's read tool.
func readFile(ctx context.Context, u *upstream.Upstream, read *entry, p string) (string, error) {
	res, err := callRole(ctx, u, read, map[string]any{"path": p})
	if err != nil {
		return "", err
	}
	text, ok := fileText(res)
	if !ok {
		return "", fail(CodeToolFailed, "the file is not text; leave it out of the glob", map[string]any{"upstream": u.Name(), "tool": read.original},
			"%s answered something else than text for %s", upstreamName(read), quote(p))
	}
	return text, nil
}

// found is a file a search or replace read.
type found struct {
	path string // as the upstream names it
	rel  string // below the directory searched, as the model reads it
	text string
}

// findFiles lists the files below dir matching glob through the
// upstream's search and reads them; notes say what was left out (a path
// the search answered outside dir or not matching glob, a file too large,
// not text or not readable: a directory), so nothing is left out
// silently.
func findFiles(ctx context.Context, u *upstream.Upstream, c *composed, dir, glob string) ([]found, []string, error) {
	if !doublestar.ValidatePattern(glob) {
		return nil, nil, fail(CodeInvalidArguments, "pass a glob such as **/*.py", nil, "the glob %s is not valid", quote(glob))
	}
	dir = strings.TrimSuffix(dir, "/")
	res, err := callRole(ctx, u, c.roles[roleList.tool], map[string]any{"path": dir, "pattern": glob})
	if err != nil {
		return nil, nil, err
	}
	listing, _, _ := shape(res, maxComposeBytes)
	var paths []string
	outside := 0
	seen := map[string]bool{}
	for _, line := range lines(listing) {
		p := line
		if !strings.HasPrefix(p, "/") {
			if strings.Contains(p, " ") && !strings.Contains(p, "/") {
				continue // a sentence ("No matches found"), not a path
			}
			p = path.Join(dir, p)
		}
		p = path.Clean(p)
		rel, ok := strings.CutPrefix(p, dir+"/")
		if !ok || rel == "" || strings.HasPrefix(rel, "../") {
			outside++
			continue
		}
		if match, _ := doublestar.Match(glob, rel); !match || seen[p] {
			continue
		}
		seen[p] = true
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if len(paths) > maxComposeFiles {
		return nil, nil, fail(CodeAnswerTooLarge, "narrow the glob or the directory", map[string]any{"files": len(paths), "limit": maxComposeFiles},
			"%d files match; at most %d are read at once", len(paths), maxComposeFiles)
	}
	var notes []string
	if outside > 0 {
		notes = append(notes, fmt.Sprintf("%d paths the search answered lie outside %s", outside, quote(dir)))
	}
	var out []found
	var unread []string
	total := 0
	for _, p := range paths {
		text, err := readFile(ctx, u, c.roles[roleRead.tool], p)
		rel := strings.TrimPrefix(p, dir+"/")
		switch {
		case ctx.Err() != nil:
			return nil, nil, ctx.Err()
		case err != nil, len(text) > maxComposeFile, strings.IndexByte(text, 0) >= 0:
			unread = append(unread, rel)
			continue
		}
		if total += len(text); total > maxComposeBytes {
			return nil, nil, fail(CodeAnswerTooLarge, "narrow the glob or the directory", map[string]any{"limit_bytes": maxComposeBytes},
				"the files matching %s hold over %d bytes", quote(glob), maxComposeBytes)
		}
		out = append(out, found{path: p, rel: rel, text: text})
	}
	if len(unread) > 0 {
		shown := unread
		if len(shown) > 5 {
			shown = shown[:5]
		}
		notes = append(notes, fmt.Sprintf("%d not read (directories, not text, over %d bytes or refused): %s", len(unread), maxComposeFile, quoteAll(shown)))
	}
	return out, notes, nil
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}

func argString(args map[string]any, name, def string) string {
	if s, ok := args[name].(string); ok && s != "" {
		return s
	}
	return def
}

func argBool(args map[string]any, name string, def bool) bool {
	if b, ok := args[name].(bool); ok {
		return b
	}
	return def
}

func argInt(args map[string]any, name string, def int) int {
	switch v := args[name].(type) {
	case float64:
		return int(v)
	case int:
		return v
	case int64:
		return int(v)
	case interface{ Int64() (int64, error) }:
		if n, err := v.Int64(); err == nil {
			return int(n)
		}
	}
	return def
}

// searchText answers the lines of the files below path matching glob
// that contain pattern, with context lines around them: what reading
// every file would show of them.
func (g *Gateway) searchText(ctx context.Context, u *upstream.Upstream, c *composed, args map[string]any) (*manglecp.Outcome, error) {
	pattern := argString(args, "pattern", "")
	if pattern == "" {
		return nil, fail(CodeInvalidArguments, "pass the text to find as pattern", nil, "pattern is empty")
	}
	word := argBool(args, "word", false)
	ctxLines := min(max(argInt(args, "context", 1), 0), maxSearchContext)
	files, notes, err := findFiles(ctx, u, c, argString(args, "path", ""), argString(args, "glob", "**/*"))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	matches, inFiles := 0, 0
	for _, f := range files {
		ls := strings.Split(f.text, "\n")
		hit := map[int]bool{}
		for _, at := range words.Find(f.text, pattern, word) {
			hit[strings.Count(f.text[:at], "\n")] = true
		}
		if len(hit) == 0 {
			continue
		}
		inFiles++
		fmt.Fprintf(&b, "%s\n", f.rel)
		last := -1
		for i := range ls {
			near := false
			for d := -ctxLines; d <= ctxLines; d++ {
				near = near || hit[i+d]
			}
			if !near || matches >= maxSearchLines {
				continue
			}
			if last >= 0 && i > last+1 {
				b.WriteString("..\n")
			}
			sep := "-"
			if hit[i] {
				sep = ":"
				matches++
			}
			fmt.Fprintf(&b, "%d%s %s\n", i+1, sep, upstream.Truncate(strings.TrimRight(ls[i], "\r"), maxSearchLine))
			last = i
		}
	}
	summary := fmt.Sprintf("%d matching lines in %d of %d files.", matches, inFiles, len(files))
	if matches >= maxSearchLines {
		summary = fmt.Sprintf("The first %d matching lines, in %d of %d files; narrow the glob for the rest.", matches, inFiles, len(files))
	}
	out := &manglecp.Outcome{Summary: summary, Result: map[string]any{}}
	text, truncated, total := cut(b.String(), g.cfg.MaxResultBytes)
	if text != "" {
		out.Result["text"] = text
	}
	if truncated {
		out.Result["truncated"], out.Result["total_bytes"] = true, total
	}
	if len(notes) > 0 {
		out.Result["skipped"] = strings.Join(notes, "; ")
	}
	return out, nil
}

// cut bounds a text at max bytes, saying so.
func cut(s string, max int) (string, bool, int) {
	if len(s) <= max {
		return s, false, len(s)
	}
	return upstream.Truncate(s, max) + fmt.Sprintf("\n[cut: %d of %d bytes shown]", max, len(s)), true, len(s)
}

// An editPlan is a replace previewed and held until it is applied (once,
// by the identity that previewed it, before it expires): the files as
// they were read, as they will be, and edit_file's edits between them.
type editPlan struct {
	upstream, owner string
	confirm         string // the diff the user confirms
	expires         time.Time
	files           []planFile
}

type planFile struct {
	path, rel     string
	before, after string
	edits         []fileEdit
}

// plans holds the previewed edits by handle.
type plans struct {
	mu sync.Mutex
	m  map[string]*editPlan
}

// hold keeps p and returns its handle; the oldest is dropped when
// maxHeldPlans are held.
func (s *plans) hold(p *editPlan, now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*editPlan{}
	}
	for h, q := range s.m {
		if !now.Before(q.expires) {
			delete(s.m, h)
		}
	}
	for len(s.m) >= maxHeldPlans {
		oldest := ""
		for h, q := range s.m {
			if oldest == "" || q.expires.Before(s.m[oldest].expires) {
				oldest = h
			}
		}
		delete(s.m, oldest)
	}
	h := "p" + strings.ToLower(rand.Text()[:12])
	s.m[h] = p
	return h
}

// take removes and returns the newest unexpired plan of upstream up held
// for owner whose confirmed diff is confirm.
func (s *plans) take(up, owner, confirm string, now time.Time) *editPlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best string
	for h, p := range s.m {
		if p.upstream == up && p.owner == owner && p.confirm == confirm && now.Before(p.expires) &&
			(best == "" || p.expires.After(s.m[best].expires)) {
			best = h
		}
	}
	if best == "" {
		return nil
	}
	p := s.m[best]
	delete(s.m, best)
	return p
}

// replace previews replacing old with new in every file below path
// matching glob: one diff, nothing written. The plan is held; the
// previewed_edit fact it returns offers the upstream's apply_edits tool
// with that diff, which the user confirms once.
func (g *Gateway) replace(ctx context.Context, u *upstream.Upstream, c *composed, args map[string]any) (*manglecp.Outcome, error) {
	old, repl := argString(args, "old", ""), argString(args, "new", "")
	if old == "" || old == repl {
		return nil, fail(CodeInvalidArguments, "pass the text to replace as old and a different text as new", nil, "old is empty or equals new")
	}
	word := argBool(args, "word", true)
	glob := argString(args, "glob", "**/*")
	files, notes, err := findFiles(ctx, u, c, argString(args, "path", ""), glob)
	if err != nil {
		return nil, err
	}
	plan := &editPlan{upstream: u.Name(), owner: owner(ctx)}
	var diff strings.Builder
	count := 0
	for _, f := range files {
		at := words.Find(f.text, old, word)
		if len(at) == 0 {
			continue
		}
		spans := make([]span, len(at))
		for i, j := range at {
			spans[i] = span{from: j, to: j + len(old), text: repl}
		}
		after := applySpans(f.text, spans, 0, len(f.text))
		d, err := udiff.ToUnified("a/"+f.rel, "b/"+f.rel, f.text, udiff.Strings(f.text, after), diffContext)
		if err != nil {
			return nil, fmt.Errorf("gateway: diff of %s: %w", f.rel, err)
		}
		diff.WriteString(d)
		count += len(at)
		plan.files = append(plan.files, planFile{path: f.path, rel: f.rel, before: f.text, after: after, edits: editsFor(f.text, spans)})
	}
	out := &manglecp.Outcome{Result: map[string]any{}}
	if len(notes) > 0 {
		out.Result["skipped"] = strings.Join(notes, "; ")
	}
	if count == 0 {
		out.Summary = fmt.Sprintf("No file of the %d matching %s holds %s; nothing to change.", len(files), quote(glob), quote(old))
		return out, nil
	}
	now := time.Now()
	plan.confirm = confirmDiff(diff.String())
	plan.expires = now.Add(planTTL)
	g.plans.hold(plan, now)
	out.Summary = fmt.Sprintf("Previewed %d files, %d replacements; nothing written yet.", len(plan.files), count)
	out.Result["diff"] = diff.String()
	apply := toolName(u.Name(), kindApply)
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("previewed_edit", apply, plan.confirm)}
	return out, nil
}

// confirmDiff is the diff shown for confirmation, bounded.
func confirmDiff(diff string) string {
	if len(diff) <= maxConfirmDiff {
		return diff
	}
	at := strings.LastIndexByte(diff[:maxConfirmDiff-64], '\n') + 1
	return diff[:at] + fmt.Sprintf("... (%d more lines; the preview's diff holds them all)\n", strings.Count(diff[at:], "\n"))
}

// applyEdits applies a previewed replace: every file is read again and
// must be as previewed (else nothing is written); then each gets all its
// edits in one edit_file call and is read back, and must read as
// previewed. When one does not, the files already written are put back
// (an edit_file of their whole text), and the error says which files are
// as they were and which could not be put back: nothing is left half
// applied without saying so.
func (g *Gateway) applyEdits(ctx context.Context, u *upstream.Upstream, c *composed, args map[string]any) (*manglecp.Outcome, error) {
	confirm := argString(args, "diff", "")
	p := g.plans.take(u.Name(), owner(ctx), confirm, time.Now())
	if p == nil {
		return nil, fail(CodeEditUnknown, "preview the edit again (replace), then apply it", nil,
			"no previewed edit with this diff is held for you: it was applied, expired or never previewed")
	}
	read, edit := c.roles[roleRead.tool], c.roles[roleEdit.tool]
	for _, f := range p.files {
		now, err := readFile(ctx, u, read, f.path)
		if err != nil {
			return nil, err
		}
		if now != f.before {
			return nil, fail(CodeFileChanged, "preview the edit again", map[string]any{"path": f.rel},
				"%s changed since the preview; nothing was written", quote(f.rel))
		}
	}
	var written []planFile
	for _, f := range p.files {
		items := make([]any, len(f.edits))
		for i, e := range f.edits {
			items[i] = map[string]any{"oldText": e.old, "newText": e.new}
		}
		_, cerr := callRole(ctx, u, edit, map[string]any{"path": f.path, "edits": items})
		now, rerr := readFile(ctx, u, read, f.path)
		if cerr == nil && rerr == nil && sameText(now, f.after) {
			written = append(written, f)
			continue
		}
		return nil, g.undo(context.WithoutCancel(ctx), u, read, edit, written, f, now, cerr, rerr)
	}
	return &manglecp.Outcome{
		Summary: fmt.Sprintf("Applied the previewed edit to %d files, one edit_file each; each reads back as previewed.", len(written)),
		Result:  map[string]any{},
		Retract: []protocol.Fact{protocol.NewFact("previewed_edit", toolName(u.Name(), kindApply), nil)},
	}, nil
}

// undo puts back the files an apply wrote before failed (which did not
// read back as previewed: cerr from its edit, rerr from reading it back,
// now what it read) and returns the error saying where every file stands.
func (g *Gateway) undo(ctx context.Context, u *upstream.Upstream, read, edit *entry, written []planFile, failed planFile, now string, cerr, rerr error) error {
	var restored, lost []string
	put := func(f planFile, current string) {
		_, err := callRole(ctx, u, edit, map[string]any{"path": f.path, "edits": []any{map[string]any{"oldText": current, "newText": f.before}}})
		back, rerr := readFile(ctx, u, read, f.path)
		if err == nil && rerr == nil && sameText(back, f.before) {
			restored = append(restored, f.rel)
			return
		}
		lost = append(lost, f.rel)
		g.cfg.Logger.ErrorContext(ctx, "a file a composed edit wrote could not be put back", "upstream", u.Name(), "path", f.path)
	}
	why := "it does not read back as previewed"
	switch {
	case cerr != nil:
		why = errText(cerr)
	case rerr != nil:
		why = "reading it back failed: " + errText(rerr)
	}
	switch {
	case rerr != nil: // its state is unknown
		lost = append(lost, failed.rel)
	case now != failed.before: // written, wholly or in part
		put(failed, now)
	}
	for i := len(written) - 1; i >= 0; i-- {
		put(written[i], written[i].after)
	}
	sort.Strings(restored)
	data := map[string]any{"upstream": u.Name(), "failed": failed.rel, "restored": nonNil(restored), "not_restored": nonNil(lost)}
	msg := fmt.Sprintf("the edit of %s failed (%s)", quote(failed.rel), why)
	switch {
	case len(lost) > 0:
		msg += fmt.Sprintf("; %d files could not be put back as they were: %s", len(lost), quoteAll(lost))
	case len(restored) > 0:
		msg += fmt.Sprintf("; the %d files written were put back as they were: nothing is changed", len(restored))
	default:
		msg += "; nothing was written"
	}
	return fail(CodeEditIncomplete, "tell the user; read the files named before editing again", data, "%s", msg)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// errText is the message of an error for another error's message.
func errText(err error) string {
	if pe, ok := err.(*protocol.Error); ok {
		return pe.Message
	}
	return "the upstream call did not complete"
}

// move moves source to destination after making the destination's
// directory, each through the upstream's own tool.
func (g *Gateway) move(ctx context.Context, u *upstream.Upstream, c *composed, args map[string]any) (*manglecp.Outcome, error) {
	src, dst := argString(args, "source", ""), argString(args, "destination", "")
	mkdir, mv := c.roles[roleMkdir.tool], c.roles[roleMove.tool]
	dir := path.Dir(dst)
	mkArgs := map[string]any{"path": dir}
	mvArgs := map[string]any{"source": src, "destination": dst}
	// Both calls' arguments are checked before the first is made.
	if errs := validate(mkdir.schema, mkArgs); len(errs) > 0 {
		return nil, invalidArguments(mkdir, errs)
	}
	if errs := validate(mv.schema, mvArgs); len(errs) > 0 {
		return nil, invalidArguments(mv, errs)
	}
	var said []string
	if dir != "." && dir != "/" {
		res, err := callRole(ctx, u, mkdir, mkArgs)
		if err != nil {
			return nil, err
		}
		said = append(said, answerLine(mkdir, res))
	}
	res, err := callRole(ctx, u, mv, mvArgs)
	if err != nil {
		return nil, err
	}
	said = append(said, answerLine(mv, res))
	return &manglecp.Outcome{Summary: strings.Join(said, "\n"), Result: map[string]any{}}, nil
}

// answerLine is an upstream's answer as one quoted line after the tool's
// name, as the gateway shows short answers.
func answerLine(e *entry, res *mcp.CallToolResult) string {
	text, _, _ := shape(res, maxSummaryText)
	return upstreamName(e) + ": " + strconv.Quote(upstream.Truncate(text, maxSummaryText))
}
