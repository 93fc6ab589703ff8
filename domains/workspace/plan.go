package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/manglecp/manglecp/internal/words"
)

// Edit plans: several edits of one or more files, previewed as one
// unified diff and applied at once. The workspace tools preview_edit (with
// all), preview_edits and replace build one, and so can another domain
// (a language server's WorkspaceEdit becomes Edits with Spans).

// Edit is one change to one file of a plan. It replaces Old with New
// (exactly one occurrence, or every one with All; with Word only
// occurrences that are whole words), or, when Spans is set, the ranges
// of Spans (Old must then be empty). Several Edits of one path apply in
// order, each to the content the previous one left.
type Edit struct {
	// Path names the file as clients do: relative to its root; with
	// several roots the first segment names the root.
	Path string
	// Old is the text to replace and New its replacement.
	Old, New string
	// All replaces every occurrence of Old; without it Old must occur
	// exactly once.
	All bool
	// Word matches Old only where it is not part of a longer word: the
	// character before and after it is not a letter, digit or underscore
	// (checked on each side where Old itself starts or ends with one).
	// "calc_total" then leaves "calc_total_weight" and "calc_totals" alone.
	Word bool
	// Spans replace ranges of the file's content, as a language server's
	// TextEdits do. They must not overlap; they refer to the content
	// before this Edit.
	Spans []Span
}

// Span replaces the text from Start to End (End excluded) with New.
type Span struct {
	Start, End Position
	New        string
}

// Position is a place in a text file as the Language Server Protocol
// counts it: Line and Character are 0-based, Character in UTF-16 code
// units. A Character past the end of its line means the line's end.
type Position struct {
	Line, Character int
}

// FileChange is what a plan does to one file.
type FileChange struct {
	// Path is the file as clients name it.
	Path string
	// Before and After are the digests (16 hex digits of SHA-256) of the
	// file's content when previewed and after the plan.
	Before, After string
	// Replaced is the number of occurrences and spans replaced.
	Replaced int
}

// Plan is a previewed edit of one or more files: the changes and their
// unified diff. It holds the content each file had when previewed and
// the content it gets; [Workspace.Apply] writes it only where the files
// still have that content. A Plan is not safe for concurrent use.
type Plan struct {
	// Files lists the files that change, in path order. A file the edits
	// leave as it was is not listed.
	Files []FileChange
	// Diff is the unified diff of every file, in path order (a/ and b/
	// labels, as git writes them).
	Diff string

	files []plannedFile
}

// plannedFile is a file's content before and after a plan.
type plannedFile struct {
	l             loc
	before, after []byte
}

// Paths returns the paths of the files the plan changes, in order.
func (p *Plan) Paths() []string {
	out := make([]string, len(p.Files))
	for i, f := range p.Files {
		out[i] = f.Path
	}
	return out
}

// Preview computes the plan of edits without writing anything: each file
// is read once (at most Config.MaxReadBytes, UTF-8 text, through the
// roots' os.Root), the edits of each path apply in order, and the result
// is one unified diff. It fails, naming the file, when a path is outside
// every root or not a text file, when Old does not occur (or occurs more
// than once without All), when spans overlap or lie outside the file, or
// when the plan would touch more than Config.MaxEditFiles files. The
// errors are this domain's codes ([Codes]).
func (w *Workspace) Preview(ctx context.Context, edits []Edit) (*Plan, error) {
	if len(edits) == 0 {
		return nil, fail(CodeEditConflict, "name at least one edit", nil, "the plan holds no edit")
	}
	type file struct {
		l             loc
		shown         string
		before, after []byte
		replaced      int
	}
	byPath := map[string]*file{}
	var order []*file
	for _, e := range edits {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := w.resolve(e.Path)
		if err != nil {
			return nil, err
		}
		shown := w.show(l)
		if l.root == nil || l.rel == "." {
			return nil, fail(CodeIsADirectory, "name a file", map[string]any{"path": shown}, "%s is a directory", quote(shown))
		}
		f := byPath[shown]
		if f == nil {
			if len(order) >= w.cfg.MaxEditFiles {
				return nil, fail(CodeFileTooLarge, "edit fewer files at once", map[string]any{"path": shown, "limit": w.cfg.MaxEditFiles},
					"the plan touches more than %d files", w.cfg.MaxEditFiles)
			}
			b, _, err := w.readText(l, w.cfg.MaxReadBytes)
			if err != nil {
				return nil, err
			}
			f = &file{l: l, shown: shown, before: b, after: b}
			byPath[shown] = f
			order = append(order, f)
		}
		after, n, err := applyEdit(shown, f.after, e)
		if err != nil {
			return nil, err
		}
		if int64(len(after)) > w.cfg.MaxWriteBytes {
			return nil, fail(CodeFileTooLarge, "make a smaller change", map[string]any{"path": shown, "size": len(after), "limit": w.cfg.MaxWriteBytes},
				"%s would be %d bytes; the limit is %d", quote(shown), len(after), w.cfg.MaxWriteBytes)
		}
		f.after, f.replaced = after, f.replaced+n
	}
	sort.Slice(order, func(i, j int) bool { return order[i].shown < order[j].shown })
	p := &Plan{}
	var diff strings.Builder
	for _, f := range order {
		if bytes.Equal(f.before, f.after) {
			continue
		}
		p.Files = append(p.Files, FileChange{Path: f.shown, Before: digestOf(f.before), After: digestOf(f.after), Replaced: f.replaced})
		p.files = append(p.files, plannedFile{l: f.l, before: f.before, after: f.after})
		diff.WriteString(unified(f.shown, string(f.before), string(f.after)))
	}
	p.Diff = diff.String()
	return p, nil
}

// Apply writes a plan Preview made: it first reads every file again and
// checks that each still has the content it had when previewed (else
// x-file_changed naming the file, and nothing is written), then writes
// each file's new content (atomically per file, through the roots'
// os.Root, as apply_edit writes). Cancelling ctx before the writes
// writes nothing; once they begin they all run. It returns the paths
// written.
func (w *Workspace) Apply(ctx context.Context, p *Plan) ([]string, error) {
	if p == nil || len(p.files) == 0 {
		return nil, fail(CodeEditConflict, "preview an edit that changes something", nil, "the plan changes no file")
	}
	perms := make([]fs.FileMode, len(p.files))
	for i, f := range p.files {
		shown := w.show(f.l)
		cur, st, err := w.readText(f.l, w.cfg.MaxReadBytes)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(cur, f.before) {
			want := digestOf(f.before)
			got := digestOf(cur)
			return nil, fail(CodeFileChanged, "preview the edit again on the files' current content",
				map[string]any{"path": shown, "expected_digest": want, "actual_digest": got},
				"%s changed since the preview (digest %s, not %s)", quote(shown), got, want)
		}
		perms[i] = st.Mode().Perm()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var written []string
	var errs []error
	for i, f := range p.files {
		if err := w.writeFile(f.l, f.after, perms[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		written = append(written, w.show(f.l))
	}
	return written, errors.Join(errs...)
}

// applyEdit applies one Edit to content and returns the new content and
// the number of occurrences or spans replaced.
func applyEdit(shown string, content []byte, e Edit) ([]byte, int, error) {
	if len(e.Spans) > 0 {
		if e.Old != "" {
			return nil, 0, fail(CodeEditConflict, "give either old or spans", map[string]any{"path": shown}, "an edit of %s has both old text and spans", quote(shown))
		}
		return applySpans(shown, content, e.Spans)
	}
	if e.Old == "" {
		return nil, 0, fail(CodeAnchorNotFound, "old must be non-empty text of the file; to replace the whole file use write_file",
			map[string]any{"path": shown, "digest": digestOf(content)}, "the text to replace is empty")
	}
	s := string(content)
	at := words.Find(s, e.Old, e.Word)
	switch {
	case len(at) == 0:
		what := "the text to replace"
		if e.Word {
			what = "the text to replace, as a whole word,"
		}
		return nil, 0, fail(CodeAnchorNotFound, "read the file again and copy old exactly, whitespace included",
			map[string]any{"path": shown, "digest": digestOf(content)}, "%s does not occur in %s", what, quote(shown))
	case len(at) > 1 && !e.All:
		var lines []any
		for _, i := range at {
			if len(lines) == 10 {
				break
			}
			lines = append(lines, strings.Count(s[:i], "\n")+1)
		}
		return nil, 0, fail(CodeAnchorAmbiguous, "include more surrounding lines in old so that it occurs once, or replace every occurrence with all",
			map[string]any{"path": shown, "count": len(at), "lines": lines}, "the text to replace occurs %d times in %s", len(at), quote(shown))
	}
	var b strings.Builder
	b.Grow(len(s) + len(at)*(len(e.New)-len(e.Old)))
	last := 0
	for _, i := range at {
		b.WriteString(s[last:i])
		b.WriteString(e.New)
		last = i + len(e.Old)
	}
	b.WriteString(s[last:])
	return []byte(b.String()), len(at), nil
}

// applySpans replaces the spans of content (LSP positions).
func applySpans(shown string, content []byte, spans []Span) ([]byte, int, error) {
	s := string(content)
	lines := lineStarts(s)
	type cut struct {
		from, to int
		new      string
	}
	cuts := make([]cut, 0, len(spans))
	for _, sp := range spans {
		from, ok1 := offsetOf(s, lines, sp.Start)
		to, ok2 := offsetOf(s, lines, sp.End)
		if !ok1 || !ok2 || to < from {
			return nil, 0, fail(CodeEditConflict, "compute the edit again on the file's current content", map[string]any{"path": shown},
				"a range of an edit lies outside %s (line %d)", quote(shown), sp.Start.Line+1)
		}
		cuts = append(cuts, cut{from, to, sp.New})
	}
	sort.SliceStable(cuts, func(i, j int) bool { return cuts[i].from < cuts[j].from })
	var b strings.Builder
	last := 0
	for _, c := range cuts {
		if c.from < last {
			return nil, 0, fail(CodeEditConflict, "send ranges that do not overlap", map[string]any{"path": shown},
				"two ranges of an edit of %s overlap", quote(shown))
		}
		b.WriteString(s[last:c.from])
		b.WriteString(c.new)
		last = c.to
	}
	b.WriteString(s[last:])
	return []byte(b.String()), len(cuts), nil
}

// lineStarts returns the byte offset where each line of s starts.
func lineStarts(s string) []int {
	out := []int{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, i+1)
		}
	}
	return out
}

// offsetOf converts an LSP position to a byte offset of s: Character
// counts UTF-16 code units and is clamped to the line's end; a line past
// the last is valid only as the end of the content.
func offsetOf(s string, lines []int, p Position) (int, bool) {
	if p.Line < 0 || p.Character < 0 {
		return 0, false
	}
	if p.Line >= len(lines) {
		if p.Line == len(lines) && p.Character == 0 {
			return len(s), true
		}
		return 0, false
	}
	i := lines[p.Line]
	end := len(s)
	if p.Line+1 < len(lines) {
		end = lines[p.Line+1] - 1 // the newline
	}
	if end > i && s[end-1] == '\r' {
		end-- // a CRLF line ends before its CR
	}
	for units := 0; i < end; {
		r, size := utf8.DecodeRuneInString(s[i:end])
		n := 1
		if r >= 0x10000 {
			n = 2
		}
		if units+n > p.Character {
			break
		}
		units += n
		i += size
	}
	return i, true
}

// String is a one-line account of the plan: "3 files, 7 replacements".
func (p *Plan) String() string {
	n := 0
	for _, f := range p.Files {
		n += f.Replaced
	}
	return fmt.Sprintf("%d %s, %d %s", len(p.Files), plural(len(p.Files), "file", "files"), n, plural(n, "replacement", "replacements"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
