package workspace

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
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
	pattern := argOr(c.Args, "glob", "*")
	g, err := compileGlob(pattern)
	if err != nil {
		return nil, err
	}
	l, err := a.w.resolve(argOr(c.Args, "path", "."))
	if err != nil {
		return nil, err
	}
	var found []string // as listed
	var files []string // the files found, as paths
	full := false
	out := &manglecp.Outcome{}
	var stop string
	if err := out.Step("walk", func() (string, error) {
		var err error
		stop, _, err = a.w.walk(ctx, l, func(at loc, rel string, d fs.DirEntry) error {
			if !g.match(rel) {
				return nil
			}
			if len(found) == a.w.cfg.MaxEntries {
				full = true
				return fs.SkipAll
			}
			p := listed(a.w.show(at))
			if d.IsDir() {
				p += "/"
			} else {
				files = append(files, a.w.show(at))
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
	out.Result = map[string]any{"glob": pattern, "path": a.w.show(l), "files": found, "truncated": stop != "" || full}
	out.ContinuationFacts = mentionedFacts(files, 10)
	out.Summary = fmt.Sprintf("%d paths match %s below %s.", len(found), quote(pattern), a.w.show(l))
	return out, ctx.Err()
}

// searchText finds lines containing a literal text. Its work is bounded:
// it visits at most MaxScanFiles entries no deeper than MaxWalkDepth,
// reads files of at most 4 times MaxReadBytes and at most MaxSearchBytes
// in all, and stops after MaxSearchTime; an answer cut by a bound says so
// (truncated, stopped, and how many files and bytes it searched).
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
	l, err := a.w.resolve(argOr(c.Args, "path", "."))
	if err != nil {
		return nil, err
	}
	cfg := a.w.cfg
	sctx, cancel := context.WithTimeout(ctx, cfg.MaxSearchTime)
	defer cancel()
	matches := []any{}
	var files []string // the files with matches, as paths
	var listedFiles []string
	scanned, skipped, visited := 0, 0, 0
	var read int64
	out := &manglecp.Outcome{}
	stop := "" // why the search itself stopped
	walkStop := ""
	if err := out.Step("search", func() (string, error) {
		var err error
		walkStop, visited, err = a.w.walk(sctx, l, func(at loc, rel string, d fs.DirEntry) error {
			if !d.Type().IsRegular() || (g != nil && !g.match(rel)) {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if info.Size() > 4*cfg.MaxReadBytes {
				skipped++
				return nil
			}
			if read+info.Size() > cfg.MaxSearchBytes {
				stop = stopBytes
				return fs.SkipAll
			}
			scanned++
			hits, n, err := a.searchFile(sctx, at, text, cfg.MaxMatches-len(matches))
			read += n
			if sctx.Err() != nil {
				return sctx.Err()
			}
			if err != nil || len(hits) == 0 {
				return nil
			}
			p := a.w.show(at)
			files = append(files, p)
			listedFiles = append(listedFiles, listed(p))
			for _, h := range hits {
				matches = append(matches, map[string]any{"path": listed(p), "line": h.line, "text": h.text})
			}
			if len(matches) >= cfg.MaxMatches {
				stop = stopMatches
				return fs.SkipAll
			}
			return nil
		})
		if err != nil && ctx.Err() == nil && sctx.Err() != nil {
			stop, err = stopTime, nil // the search's own deadline: a partial answer
		}
		return fmt.Sprintf("%d matches in %d files; %d files, %d bytes searched", len(matches), len(files), scanned, read), err
	}); err != nil {
		return nil, err
	}
	if listedFiles == nil {
		listedFiles = []string{}
	}
	var stopped []string
	for _, s := range []string{stop, walkStop} {
		if s != "" {
			stopped = append(stopped, s)
		}
	}
	out.Result = map[string]any{"text": text, "path": a.w.show(l), "matches": matches, "files": listedFiles,
		"scanned": scanned, "bytes_read": read, "visited": visited, "truncated": len(stopped) > 0}
	if skipped > 0 {
		out.Result["skipped_large"] = skipped
	}
	out.ContinuationFacts = mentionedFacts(files, 10)
	out.Summary = fmt.Sprintf("%d lines in %d files contain %s; searched %d files (%d bytes).", len(matches), len(files), quote(text), scanned, read)
	if len(stopped) > 0 {
		out.Result["stopped"] = stopped
		for _, s := range stopped {
			out.Summary += " " + stopReason(s, cfg) + "."
		}
		out.Summary += " Files beyond that were not searched."
	}
	if skipped > 0 {
		out.Summary += fmt.Sprintf(" %d files over %d bytes were skipped.", skipped, 4*cfg.MaxReadBytes)
	}
	return out, ctx.Err()
}

// stopReason says in words why a search stopped.
func stopReason(stop string, cfg Config) string {
	switch stop {
	case stopEntries:
		return fmt.Sprintf("It stopped after visiting %d entries", cfg.MaxScanFiles)
	case stopDepth:
		return fmt.Sprintf("It did not enter directories more than %d levels deep", cfg.MaxWalkDepth)
	case stopBytes:
		return fmt.Sprintf("It stopped at the byte budget of %d bytes", cfg.MaxSearchBytes)
	case stopTime:
		return fmt.Sprintf("It stopped at the time budget of %s", cfg.MaxSearchTime)
	}
	return fmt.Sprintf("It stopped after %d matching lines", cfg.MaxMatches)
}

type hit struct {
	line int
	text string
}

// searchFile returns up to n lines of a text file containing text, and
// the bytes it read. It stops when ctx ends.
func (a *actions) searchFile(ctx context.Context, l loc, text string, n int) ([]hit, int64, error) {
	f, _, err := a.w.openRegular(l)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	cr := &ctxReader{ctx: ctx, r: f}
	br := bufio.NewReader(cr)
	head, _ := br.Peek(sniffBytes)
	if !isText(head, len(head) == sniffBytes) {
		return nil, cr.n, nil
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var hits []hit
	for i := 1; sc.Scan() && len(hits) < n; i++ {
		line := sc.Text()
		if strings.Contains(line, text) {
			line = protocol.ClipN(line, 200)
			hits = append(hits, hit{line: i, text: listedLine(line)})
		}
	}
	// A line over 1 MiB ends the file's search; only the end of ctx is an
	// error.
	return hits, cr.n, ctx.Err()
}

// ctxReader reads from r until ctx ends, counting the bytes.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	n   int64
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
