package workspace

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/manglecp/manglecp"
)

// The find job: files by glob and lines by content.

// search finds files below a directory by glob (search_files of the
// filesystem server) and, given a text, the lines of those files that
// contain it.
func (a *actions) search(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	if _, ok := c.Args["text"]; ok {
		return a.searchText(ctx, c)
	}
	return a.findFiles(ctx, c)
}

// findFiles finds paths matching a glob (default: every file) below a
// directory.
func (a *actions) findFiles(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	pattern := argString(c.Args, "glob")
	if pattern == "" {
		pattern = "*"
	}
	g, err := compileGlob(pattern)
	if err != nil {
		return nil, err
	}
	start := argString(c.Args, "path")
	if start == "" {
		start = "."
	}
	l, err := a.w.resolve(start)
	if err != nil {
		return nil, err
	}
	var found []string
	full := false
	out := &manglecp.Outcome{}
	var truncated bool
	if err := out.Step("walk", func() (string, error) {
		var err error
		truncated, err = a.w.walk(ctx, l, func(at loc, rel string, d fs.DirEntry) error {
			if !g.match(rel) {
				return nil
			}
			if len(found) == a.w.cfg.MaxEntries {
				full = true
				return fs.SkipAll
			}
			p := a.w.show(at)
			if d.IsDir() {
				p += "/"
			}
			found = append(found, p)
			return nil
		})
		return fmt.Sprintf("%d matches", len(found)), err
	}); err != nil {
		return nil, err
	}
	if found == nil {
		found = []string{}
	}
	out.Result = map[string]any{"glob": pattern, "path": a.w.show(l), "files": found, "truncated": truncated || full}
	var files []string
	for _, p := range found {
		if !strings.HasSuffix(p, "/") {
			files = append(files, p)
		}
	}
	out.ContinuationFacts = mentionedFacts(files, 10)
	out.Summary = fmt.Sprintf("%d paths match %s below %s.", len(found), quote(pattern), a.w.show(l))
	return out, ctx.Err()
}

// searchText finds lines containing a literal text.
func (a *actions) searchText(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	text := argString(c.Args, "text")
	if text == "" {
		return nil, fail(CodeInvalidPattern, "search for a non-empty text", map[string]any{"pattern": ""}, "the search text is empty")
	}
	var g *glob
	if pat := argString(c.Args, "glob"); pat != "" {
		var err error
		if g, err = compileGlob(pat); err != nil {
			return nil, err
		}
	}
	start := argString(c.Args, "path")
	if start == "" {
		start = "."
	}
	l, err := a.w.resolve(start)
	if err != nil {
		return nil, err
	}
	matches := []any{}
	var files []string
	full := false
	scanned := 0
	out := &manglecp.Outcome{}
	var truncated bool
	if err := out.Step("search", func() (string, error) {
		var err error
		truncated, err = a.w.walk(ctx, l, func(at loc, rel string, d fs.DirEntry) error {
			if !d.Type().IsRegular() || (g != nil && !g.match(rel)) {
				return nil
			}
			if info, err := d.Info(); err != nil || info.Size() > 4*a.w.cfg.MaxReadBytes {
				return nil
			}
			scanned++
			hits, err := a.searchFile(at, text, a.w.cfg.MaxMatches-len(matches))
			if err != nil || len(hits) == 0 {
				return nil
			}
			p := a.w.show(at)
			files = append(files, p)
			for _, h := range hits {
				matches = append(matches, map[string]any{"path": p, "line": h.line, "text": h.text})
			}
			if len(matches) >= a.w.cfg.MaxMatches {
				full = true
				return fs.SkipAll
			}
			return nil
		})
		return fmt.Sprintf("%d matches in %d files", len(matches), len(files)), err
	}); err != nil {
		return nil, err
	}
	if files == nil {
		files = []string{}
	}
	out.Result = map[string]any{"text": text, "path": a.w.show(l), "matches": matches, "files": files, "scanned": scanned, "truncated": truncated || full}
	out.ContinuationFacts = mentionedFacts(files, 10)
	out.Summary = fmt.Sprintf("%d lines in %d files contain %s.", len(matches), len(files), quote(text))
	return out, ctx.Err()
}

type hit struct {
	line int
	text string
}

// searchFile returns up to n lines of a text file containing text.
func (a *actions) searchFile(l loc, text string, n int) ([]hit, error) {
	f, _, err := a.w.openRegular(l)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(sniffBytes)
	if !isText(head, len(head) == sniffBytes) {
		return nil, nil
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var hits []hit
	for i := 1; sc.Scan() && len(hits) < n; i++ {
		line := sc.Text()
		if strings.Contains(line, text) {
			if len(line) > 200 {
				line = line[:200] + "..."
			}
			hits = append(hits, hit{line: i, text: line})
		}
	}
	return hits, nil
}
