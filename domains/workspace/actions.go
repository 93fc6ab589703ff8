package workspace

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

type actions struct {
	w *Workspace
}

// at resolves the path argument name.
func (a *actions) at(args map[string]any, name string) (loc, error) {
	p, _ := args[name].(string)
	return a.w.resolve(p)
}

func argString(args map[string]any, name string) string {
	s, _ := args[name].(string)
	return s
}

func argInt(args map[string]any, name string) (int64, bool) {
	switch v := args[name].(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(string(v), 64)
			if ferr != nil {
				return 0, false
			}
			i = int64(f)
		}
		return i, true
	case int:
		return int64(v), true
	case int64:
		return v, true
	case float64:
		return int64(v), true
	}
	return 0, false
}

// listRoots lists the roots by name.
func (a *actions) listRoots(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	out := &manglecp.Outcome{}
	names := a.w.RootNames()
	_ = out.Step("list_roots", func() (string, error) { return fmt.Sprintf("%d roots", len(names)), nil })
	out.Result = map[string]any{"roots": names}
	if len(names) == 1 {
		out.Result["paths"] = "relative to the root"
	} else {
		out.Result["paths"] = "the first segment names the root"
	}
	out.Summary = fmt.Sprintf("%d roots: %s.", len(names), strings.Join(names, ", "))
	return out, ctx.Err()
}

// listDir lists a directory, with sizes on request.
func (a *actions) listDir(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	sizes, _ := c.Args["sizes"].(bool)
	shown := a.w.show(l)
	type item struct {
		name, kind string
		size       int64
	}
	var items []item
	truncated := false
	out := &manglecp.Outcome{}
	if err := out.Step("read_dir", func() (string, error) {
		if l.root == nil {
			for _, r := range a.w.roots {
				items = append(items, item{name: r.name, kind: "dir"})
			}
			return fmt.Sprintf("%d roots", len(items)), nil
		}
		st, err := l.root.fs.Stat(l.rel)
		if err != nil {
			return "stat failed", a.w.fsError(shown, err)
		}
		if !st.IsDir() {
			return "not a directory", fail(CodeNotADirectory, "inspect it with file_info or read it", map[string]any{"path": shown}, "%s is not a directory", quote(shown))
		}
		f, err := l.root.fs.Open(l.rel)
		if err != nil {
			return "open failed", a.w.fsError(shown, err)
		}
		defer f.Close()
		for {
			batch, err := f.ReadDir(256)
			for _, d := range batch {
				if len(items) == a.w.cfg.MaxEntries {
					truncated = true
					break
				}
				it := item{name: d.Name(), kind: kindOf(d.Type())}
				if sizes && d.Type().IsRegular() {
					if info, err := d.Info(); err == nil {
						it.size = info.Size()
					}
				}
				items = append(items, it)
			}
			if truncated || err == io.EOF || len(batch) == 0 {
				break
			}
			if err != nil {
				return "read failed", a.w.fsError(shown, err)
			}
			if ctx.Err() != nil {
				return "cancelled", ctx.Err()
			}
		}
		return fmt.Sprintf("%d entries", len(items)), nil
	}); err != nil {
		return nil, err
	}
	sort.Slice(items, func(i, j int) bool { return items[i].name < items[j].name })
	var entries []any
	var total int64
	files, dirs := 0, 0
	for _, it := range items {
		if it.kind == "dir" {
			dirs++
		} else {
			files++
		}
		total += it.size
		if sizes {
			e := map[string]any{"name": it.name, "kind": it.kind}
			if it.kind == "file" {
				e["size"] = it.size
			}
			entries = append(entries, e)
			continue
		}
		name := it.name
		switch it.kind {
		case "dir":
			name += "/"
		case "link":
			name += "@"
		}
		entries = append(entries, name)
	}
	if entries == nil {
		entries = []any{}
	}
	out.Result = map[string]any{"path": shown, "entries": entries, "files": files, "dirs": dirs, "truncated": truncated}
	if sizes {
		out.Result["total_bytes"] = total
	}
	out.Summary = fmt.Sprintf("%s holds %d files and %d directories.", shown, files, dirs)
	if truncated {
		out.Summary += fmt.Sprintf(" Only the first %d entries are listed.", a.w.cfg.MaxEntries)
	}
	return out, ctx.Err()
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "link"
	case m.IsRegular():
		return "file"
	}
	return "other"
}

// tree renders the tree below a directory as indented lines.
func (a *actions) tree(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	depth, ok := argInt(c.Args, "depth")
	if !ok {
		depth = 3
	}
	depth = min(max(depth, 1), 10)
	var b strings.Builder
	n := 0
	full := false
	out := &manglecp.Outcome{}
	var truncated bool
	if err := out.Step("walk", func() (string, error) {
		var err error
		truncated, err = a.w.walk(ctx, l, func(_ loc, rel string, d fs.DirEntry) error {
			level := strings.Count(rel, "/")
			if int64(level) >= depth {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if n == a.w.cfg.MaxEntries {
				full = true
				return fs.SkipAll
			}
			n++
			b.WriteString(strings.Repeat("  ", level))
			b.WriteString(path.Base(rel))
			if d.IsDir() {
				b.WriteString("/")
			} else if d.Type()&fs.ModeSymlink != 0 {
				b.WriteString("@")
			}
			b.WriteString("\n")
			return nil
		})
		return fmt.Sprintf("%d entries", n), err
	}); err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	out.Result = map[string]any{"path": shown, "depth": depth, "tree": b.String(), "entries": n, "truncated": truncated || full}
	out.Summary = fmt.Sprintf("The tree below %s has %d entries within %d levels.", shown, n, depth)
	return out, ctx.Err()
}

// fileInfo reports metadata of a file or directory.
func (a *actions) fileInfo(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	out := &manglecp.Outcome{}
	if l.root == nil {
		out.Result = map[string]any{"path": shown, "kind": "dir", "roots": a.w.RootNames()}
		out.Summary = "The top of the roots."
		return out, nil
	}
	info := map[string]any{"path": shown}
	if err := out.Step("stat", func() (string, error) {
		lst, err := l.root.fs.Lstat(l.rel)
		if err != nil {
			return "lstat failed", a.w.fsError(shown, err)
		}
		st := lst
		if lst.Mode()&fs.ModeSymlink != 0 {
			info["symlink"] = true
			if st, err = l.root.fs.Stat(l.rel); err != nil {
				return "stat failed", a.w.fsError(shown, err)
			}
		}
		info["kind"] = kindOf(st.Mode().Type())
		info["size"] = st.Size()
		info["mode"] = st.Mode().Perm().String()
		info["modified"] = st.ModTime().UTC().Format(time.RFC3339)
		if st.Mode().IsRegular() {
			if mt, ok := mediaType(l.rel); ok {
				info["media_type"] = mt
			}
			// The digest and line count of files up to 64 times the read
			// limit (16 MiB by default), as read_file gives them.
			if st.Size() <= 64*a.w.cfg.MaxReadBytes {
				f, _, err := a.w.openRegular(l)
				if err != nil {
					return "open failed", err
				}
				defer f.Close()
				h := sha256.New()
				head := make([]byte, sniffBytes)
				n, _ := io.ReadFull(f, head)
				h.Write(head[:n])
				lines := int64(strings.Count(string(head[:n]), "\n"))
				text := isText(head[:n], n == sniffBytes)
				if _, err := io.Copy(lineCounter{h, &lines}, f); err != nil {
					return "read failed", a.w.fsError(shown, err)
				}
				info["digest"] = hex.EncodeToString(h.Sum(nil)[:8])
				info["text"] = text
				if text {
					info["lines"] = lines
				}
			}
		}
		return fmt.Sprint(info["kind"]), nil
	}); err != nil {
		return nil, err
	}
	out.Result = info
	out.Summary = fmt.Sprintf("%s is a %s of %d bytes.", shown, info["kind"], info["size"])
	return out, ctx.Err()
}

// lineCounter hashes what it is written and counts newlines.
type lineCounter struct {
	h     io.Writer
	lines *int64
}

func (lc lineCounter) Write(p []byte) (int, error) {
	*lc.lines += int64(strings.Count(string(p), "\n"))
	return lc.h.Write(p)
}

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

// readFile reads a text file, or its first and last lines.
func (a *actions) readFile(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	head, hasHead := argInt(c.Args, "head")
	tail, hasTail := argInt(c.Args, "tail")
	out := &manglecp.Outcome{}
	var res map[string]any
	if err := out.Step("read", func() (string, error) {
		var err error
		res, err = a.read(l, head, hasHead, tail, hasTail)
		if err != nil {
			return "read failed", err
		}
		return fmt.Sprintf("%d bytes", len(res["content"].(string))), nil
	}); err != nil {
		return nil, err
	}
	out.Result = res
	out.Summary = fmt.Sprintf("Read %s (%d lines, digest %s).", res["path"], res["lines"], res["digest"])
	if res["truncated"] == true {
		out.Summary += " The content is truncated."
	}
	return out, ctx.Err()
}

// read reads a text file: all of it up to MaxReadBytes, or its first head
// and last tail lines. The digest and line count cover the whole file.
func (a *actions) read(l loc, head int64, hasHead bool, tail int64, hasTail bool) (map[string]any, error) {
	f, st, err := a.w.openRegular(l)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	shown := a.w.show(l)
	limit := a.w.cfg.MaxReadBytes
	if st.Size() > 64*limit {
		// Hashing and counting a whole file stay bounded too: beyond 64
		// times the read limit only its first or last lines are read.
		if !hasHead && !hasTail {
			return nil, fail(CodeFileTooLarge, "read parts of it with head or tail", map[string]any{"path": shown, "size": st.Size(), "limit": 64 * limit},
				"%s is %d bytes; the limit is %d", quote(shown), st.Size(), 64*limit)
		}
		return a.readEnds(f, shown, st.Size(), head, hasHead, tail, hasTail)
	}
	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(f, h), 64<<10)
	sniff, _ := br.Peek(sniffBytes)
	if !isText(sniff, len(sniff) == sniffBytes) {
		return nil, notText(shown, sniff)
	}
	var lines int64
	var first []string
	var last []string
	var whole strings.Builder
	truncated := false
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			lines++
			switch {
			case hasHead || hasTail:
				if hasHead && int64(len(first)) < head {
					first = append(first, line)
				} else if hasTail && tail > 0 {
					last = append(last, line)
					if int64(len(last)) > tail {
						last = last[1:]
					}
				}
			case int64(whole.Len()+len(line)) <= limit && !truncated:
				whole.WriteString(line)
			default:
				truncated = true
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, a.w.fsError(shown, err)
		}
	}
	content := whole.String()
	if hasHead || hasTail {
		content = strings.Join(first, "")
		if len(last) > 0 {
			if int64(len(first))+int64(len(last)) < lines && len(first) > 0 {
				content += "...\n"
			}
			content += strings.Join(last, "")
		}
		if int64(len(content)) > limit {
			content, truncated = content[:limit], true
		}
		truncated = truncated || int64(len(first)+len(last)) < lines
	}
	res := map[string]any{"path": shown, "content": content, "lines": lines, "digest": hex.EncodeToString(h.Sum(nil)[:8]), "truncated": truncated}
	return res, nil
}

// readEnds reads the first head and last tail lines of a file too large
// to hash, each part within MaxReadBytes. The result has no digest and no
// line count.
func (a *actions) readEnds(f *os.File, shown string, size, head int64, hasHead bool, tail int64, hasTail bool) (map[string]any, error) {
	limit := a.w.cfg.MaxReadBytes
	var parts []string
	if hasHead && head > 0 {
		br := bufio.NewReader(io.LimitReader(f, limit))
		sniff, _ := br.Peek(sniffBytes)
		if !isText(sniff, len(sniff) == sniffBytes) {
			return nil, notText(shown, sniff)
		}
		var b strings.Builder
		for n := int64(0); n < head; n++ {
			line, err := br.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				break
			}
		}
		parts = append(parts, b.String())
	}
	if hasTail && tail > 0 {
		buf := make([]byte, limit)
		n, err := f.ReadAt(buf, size-limit)
		if err != nil && err != io.EOF {
			return nil, a.w.fsError(shown, err)
		}
		buf = buf[:n]
		for i := 0; i < 3 && len(buf) > 0 && buf[0]&0xC0 == 0x80; i++ {
			buf = buf[1:] // a rune cut at the start
		}
		if !isText(buf, false) {
			return nil, notText(shown, buf[:min(len(buf), sniffBytes)])
		}
		lines := strings.SplitAfter(string(buf), "\n")
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > 0 {
			lines = lines[1:] // the first is probably cut
		}
		if int64(len(lines)) > tail {
			lines = lines[int64(len(lines))-tail:]
		}
		parts = append(parts, strings.Join(lines, ""))
	}
	return map[string]any{"path": shown, "content": strings.Join(parts, "...\n"), "size": size, "truncated": true}, nil
}

// readFiles reads every mentioned text file; a file that fails carries
// its error instead of failing the others.
func (a *actions) readFiles(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	var paths []string
	seen := map[string]bool{}
	for _, f := range c.Facts {
		if f.Pred != "mentioned" {
			continue
		}
		p, _ := f.Args[0].(string)
		if !seen[p] && len(paths) < 20 {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	out := &manglecp.Outcome{}
	files := []any{}
	okCount := 0
	budget := 4 * a.w.cfg.MaxReadBytes
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := a.w.resolve(p)
		var res map[string]any
		if err == nil {
			if a.w.kind(p) != "text" {
				continue // directories and media are not read here
			}
			res, err = a.read(l, 0, false, 0, false)
		}
		if err != nil {
			pe, _ := protocol.AsError(err)
			e := map[string]any{"code": "execution_failed", "message": "the file could not be read"}
			if pe != nil {
				e = map[string]any{"code": string(pe.Code), "message": pe.Message}
			}
			files = append(files, map[string]any{"path": bounded(p), "error": e})
			continue
		}
		content := res["content"].(string)
		if int64(len(content)) > budget {
			res["content"], res["truncated"] = content[:budget], true
		}
		budget -= int64(len(res["content"].(string)))
		files = append(files, res)
		okCount++
	}
	_ = out.Step("read", func() (string, error) { return fmt.Sprintf("%d of %d files", okCount, len(files)), nil })
	out.Result = map[string]any{"files": files}
	out.Summary = fmt.Sprintf("Read %d of %d files.", okCount, len(files))
	return out, ctx.Err()
}

// readMedia reads a media file as base64 with its media type.
func (a *actions) readMedia(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	out := &manglecp.Outcome{}
	var data []byte
	var mt string
	if err := out.Step("read", func() (string, error) {
		f, st, err := a.w.openRegular(l)
		if err != nil {
			return "open failed", err
		}
		defer f.Close()
		limit := a.w.cfg.MaxMediaBytes
		if st.Size() > limit {
			return "too large", fail(CodeFileTooLarge, "ask the user to shrink the file", map[string]any{"path": shown, "size": st.Size(), "limit": limit},
				"%s is %d bytes; the limit is %d", quote(shown), st.Size(), limit)
		}
		data, err = io.ReadAll(io.LimitReader(f, limit))
		if err != nil {
			return "read failed", a.w.fsError(shown, err)
		}
		var ok bool
		if mt, ok = mediaType(l.rel); !ok {
			mt = http.DetectContentType(data)
		}
		return fmt.Sprintf("%d bytes of %s", len(data), mt), nil
	}); err != nil {
		return nil, err
	}
	out.Result = map[string]any{"path": shown, "media_type": mt, "size": len(data), "data": base64.StdEncoding.EncodeToString(data), "digest": digestOf(data)}
	out.Summary = fmt.Sprintf("Read %s (%s, %d bytes).", shown, mt, len(data))
	return out, ctx.Err()
}

// replace replaces the one occurrence of old in content.
func (a *actions) replace(shown, content, old, new, digest string) (string, error) {
	if old == "" {
		return "", fail(CodeAnchorNotFound, "old must be non-empty text of the file; to replace the whole file use write_file",
			map[string]any{"path": shown, "digest": digest}, "the text to replace is empty")
	}
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return "", fail(CodeAnchorNotFound, "read the file again and copy old exactly, whitespace included",
			map[string]any{"path": shown, "digest": digest}, "the text to replace does not occur in %s", quote(shown))
	case n > 1:
		var lines []any
		rest, offset := content, 0
		for len(lines) < 10 {
			i := strings.Index(rest, old)
			if i < 0 {
				break
			}
			lines = append(lines, strings.Count(content[:offset+i], "\n")+1)
			offset += i + len(old)
			rest = content[offset:]
		}
		return "", fail(CodeAnchorAmbiguous, "include more surrounding lines in old so that it occurs once",
			map[string]any{"path": shown, "count": n, "lines": lines}, "the text to replace occurs %d times in %s", n, quote(shown))
	}
	return strings.Replace(content, old, new, 1), nil
}

// previewEdit shows the unified diff of an edit without writing.
func (a *actions) previewEdit(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	out := &manglecp.Outcome{}
	var before []byte
	var after, digest string
	if err := out.Step("read", func() (string, error) {
		var err error
		before, _, err = a.w.readText(l, a.w.cfg.MaxReadBytes)
		if err != nil {
			return "read failed", err
		}
		digest = digestOf(before)
		return digest, nil
	}); err != nil {
		return nil, err
	}
	if err := out.Step("replace", func() (string, error) {
		var err error
		after, err = a.replace(shown, string(before), argString(c.Args, "old"), argString(c.Args, "new"), digest)
		if err != nil {
			return "no single match", err
		}
		return "one match", nil
	}); err != nil {
		return nil, err
	}
	diff := unified(shown, string(before), after)
	afterDigest := digestOf([]byte(after))
	id := shown + "@" + afterDigest
	out.Result = map[string]any{"path": shown, "diff": diff, "digest": digest, "edit": id}
	previewed := protocol.NewFact("previewed", shown, digest, afterDigest, argString(c.Args, "old"), argString(c.Args, "new"))
	previewed.T = &protocol.Temporal{At: c.EvalTime.UTC().Format(time.RFC3339Nano)}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("mentioned", shown), previewed}
	out.Summary = fmt.Sprintf("Previewed edit %s of %s; nothing was written. Evaluate edit with the previewed fact and apply it with apply_edit.", id, shown)
	return out, ctx.Err()
}

// applyEdit writes the edit a preview showed (named "path@digest_after"
// by the previewed fact preview_edit returned) if the file still has the
// digest it had at the preview.
func (a *actions) applyEdit(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	id := argString(c.Args, "edit")
	var pv *preview
	for _, f := range c.Facts {
		if p, ok := readPreview(f); ok && p.path+"@"+p.after == id {
			pv = &p
		}
	}
	if pv == nil {
		// The rules only offer ids of previews in the facts.
		return nil, fmt.Errorf("no previewed fact for edit %q", id)
	}
	l, err := a.w.resolve(pv.path)
	if err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	out := &manglecp.Outcome{}
	var before []byte
	var st fs.FileInfo
	if err := out.Step("check_digest", func() (string, error) {
		var err error
		before, st, err = a.w.readText(l, a.w.cfg.MaxReadBytes)
		if err != nil {
			return "read failed", err
		}
		if got := digestOf(before); got != pv.digest {
			return "changed", fail(CodeFileChanged, "preview the edit again on the file's current content",
				map[string]any{"path": shown, "expected_digest": bounded(pv.digest), "actual_digest": got},
				"%s changed since the preview (digest %s, not %s)", quote(shown), got, quote(pv.digest))
		}
		return "unchanged", nil
	}); err != nil {
		return nil, err
	}
	after, err := a.replace(shown, string(before), pv.old, pv.new, pv.digest)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := out.Step("write", func() (string, error) {
		return fmt.Sprintf("%d bytes", len(after)), a.w.writeFile(l, []byte(after), st.Mode().Perm())
	}); err != nil {
		return nil, err
	}
	digest := digestOf([]byte(after))
	out.Result = map[string]any{"path": shown, "diff": unified(shown, string(before), after), "digest": digest}
	out.Retract = []protocol.Fact{protocol.NewFact("previewed", pv.path, nil, nil, nil, nil)}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("mentioned", shown)}
	out.Summary = fmt.Sprintf("Applied the previewed edit to %s (new digest %s).", shown, digest)
	return out, nil
}

// preview is a previewed fact.
type preview struct{ path, digest, after, old, new string }

func readPreview(f protocol.Fact) (preview, bool) {
	if f.Pred != "previewed" || len(f.Args) != 5 {
		return preview{}, false
	}
	var p preview
	for i, dst := range []*string{&p.path, &p.digest, &p.after, &p.old, &p.new} {
		*dst, _ = f.Args[i].(string)
	}
	return p, true
}

// writeFile creates a file, or replaces one whose digest the client sent.
func (a *actions) writeFile(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	content := argString(c.Args, "content")
	want := argString(c.Args, "digest")
	if int64(len(content)) > a.w.cfg.MaxWriteBytes {
		return nil, fail(CodeFileTooLarge, "write less content", map[string]any{"path": shown, "size": len(content), "limit": a.w.cfg.MaxWriteBytes},
			"the content is %d bytes; the limit is %d", len(content), a.w.cfg.MaxWriteBytes)
	}
	if l.root == nil || l.rel == "." {
		return nil, fail(CodeIsADirectory, "name a file", map[string]any{"path": shown}, "%s is a directory", quote(shown))
	}
	out := &manglecp.Outcome{}
	created := false
	perm := fs.FileMode(0o644)
	if err := out.Step("check", func() (string, error) {
		st, err := l.root.fs.Stat(l.rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if _, perr := l.root.fs.Stat(path.Dir(l.rel)); perr != nil {
				parent := a.w.show(loc{root: l.root, rel: path.Dir(l.rel)})
				return "no parent", a.w.fsError(parent, perr)
			}
			created = true
			return "new file", nil
		case err != nil:
			return "stat failed", a.w.fsError(shown, err)
		case st.IsDir():
			return "directory", fail(CodeIsADirectory, "name a file", map[string]any{"path": shown}, "%s is a directory", quote(shown))
		}
		perm = st.Mode().Perm()
		cur, err := a.currentDigest(l)
		if err != nil {
			return "read failed", err
		}
		if want == "" {
			return "exists", fail(CodeFileExists, "read the file and pass its digest to replace it, or edit it with preview_edit",
				map[string]any{"path": shown, "digest": cur}, "%s exists; pass its digest to replace it", quote(shown))
		}
		if want != cur {
			return "changed", fail(CodeFileChanged, "read the file again and write against its current digest",
				map[string]any{"path": shown, "expected_digest": bounded(want), "actual_digest": cur},
				"%s changed since it was read (digest %s, not %s)", quote(shown), cur, quote(want))
		}
		return "replace", nil
	}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := out.Step("write", func() (string, error) {
		return fmt.Sprintf("%d bytes", len(content)), a.w.writeFile(l, []byte(content), perm)
	}); err != nil {
		return nil, err
	}
	digest := digestOf([]byte(content))
	out.Result = map[string]any{"path": shown, "bytes": len(content), "digest": digest, "created": created}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("mentioned", shown)}
	verb := "Replaced"
	if created {
		verb = "Created"
	}
	out.Summary = fmt.Sprintf("%s %s (%d bytes, digest %s).", verb, shown, len(content), digest)
	return out, nil
}

// currentDigest is the digest of a file's whole content.
func (a *actions) currentDigest(l loc) (string, error) {
	f, _, err := a.w.openRegular(l)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", a.w.fsError(a.w.show(l), err)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// writeFile writes content to l: a regular file is replaced atomically
// through a temporary file and a rename (which never follows a symbolic
// link); a symbolic link inside the root is written through, and os.Root
// refuses one that leads outside.
func (w *Workspace) writeFile(l loc, content []byte, perm fs.FileMode) error {
	shown := w.show(l)
	if lst, err := l.root.fs.Lstat(l.rel); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
		f, err := l.root.fs.OpenFile(l.rel, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, perm)
		if err != nil {
			return w.fsError(shown, err)
		}
		if _, err := f.Write(content); err != nil {
			f.Close()
			return w.fsError(shown, err)
		}
		if err := f.Close(); err != nil {
			return w.fsError(shown, err)
		}
		return nil
	}
	dir, base := path.Split(l.rel)
	var tmp string
	var f *os.File
	for i := 0; ; i++ {
		tmp = fmt.Sprintf("%s.%s.manglecp-%d.tmp", dir, base, time.Now().UnixNano()+int64(i))
		if len(path.Base(tmp)) > maxNameBytes {
			tmp = fmt.Sprintf("%s.manglecp-%d.tmp", dir, time.Now().UnixNano()+int64(i))
		}
		var err error
		f, err = l.root.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 10 {
			return w.fsError(shown, err)
		}
	}
	_, werr := f.Write(content)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = l.root.fs.Rename(tmp, l.rel)
	}
	if werr != nil {
		_ = l.root.fs.Remove(tmp)
		return w.fsError(shown, werr)
	}
	return nil
}

// move moves or renames a file or directory inside one root, never over
// an existing destination and never a directory into itself.
func (a *actions) move(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	from, err := a.at(c.Args, "from")
	if err != nil {
		return nil, err
	}
	to, err := a.at(c.Args, "to")
	if err != nil {
		return nil, err
	}
	src, dst := a.w.show(from), a.w.show(to)
	data := map[string]any{"from": src, "to": dst}
	if from.root == nil || from.rel == "." || to.root == nil || to.rel == "." {
		return nil, fail(CodeMoveIntoItself, "a root cannot be moved or replaced; name paths inside it", data, "cannot move %s to %s", quote(src), quote(dst))
	}
	if from.root != to.root {
		return nil, fail(CodeCrossRootMove, "move within one root, or read the file and write it in the other root", data,
			"%s and %s are in different roots", quote(src), quote(dst))
	}
	out := &manglecp.Outcome{}
	if err := out.Step("check", func() (string, error) {
		st, err := from.root.fs.Lstat(from.rel)
		if err != nil {
			return "no source", a.w.fsError(src, err)
		}
		if st.IsDir() && (to.rel == from.rel || strings.HasPrefix(to.rel, from.rel+"/")) {
			return "into itself", fail(CodeMoveIntoItself, "choose a destination outside the directory", data, "cannot move the directory %s into itself (%s)", quote(src), quote(dst))
		}
		if _, err := to.root.fs.Lstat(to.rel); err == nil {
			return "destination exists", fail(CodeDestinationExists, "choose another destination, or move the existing one away first",
				map[string]any{"path": dst}, "%s exists; a move never overwrites", quote(dst))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "destination", a.w.fsError(dst, err)
		}
		parent := loc{root: to.root, rel: path.Dir(to.rel)}
		pst, err := to.root.fs.Stat(parent.rel)
		if err != nil {
			return "no parent", a.w.fsError(a.w.show(parent), err)
		}
		if !pst.IsDir() {
			p := a.w.show(parent)
			return "parent", fail(CodeNotADirectory, "the destination's parent must be a directory", map[string]any{"path": p}, "%s is not a directory", quote(p))
		}
		return "ok", nil
	}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := out.Step("move", func() (string, error) { return src + " -> " + dst, a.w.rename(from, to) }); err != nil {
		return nil, err
	}
	out.Result = map[string]any{"from": src, "to": dst}
	out.Retract = []protocol.Fact{protocol.NewFact("mentioned", src)}
	out.Assert = []protocol.Fact{protocol.NewFact("mentioned", dst)}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("mentioned", dst)}
	out.Summary = fmt.Sprintf("Moved %s to %s.", src, dst)
	return out, nil
}

// rename moves from to to without replacing an existing destination: a
// file is hard-linked then unlinked (the link fails if to exists); a
// directory (or a file on a file system without hard links) is renamed
// after the caller's check, and rename(2) refuses a directory moved into
// its own subtree.
func (w *Workspace) rename(from, to loc) error {
	src, dst := w.show(from), w.show(to)
	st, err := from.root.fs.Lstat(from.rel)
	if err != nil {
		return w.fsError(src, err)
	}
	if !st.IsDir() {
		err := from.root.fs.Link(from.rel, to.rel)
		if err == nil {
			if err := from.root.fs.Remove(from.rel); err != nil {
				return w.fsError(src, err)
			}
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return fail(CodeDestinationExists, "choose another destination", map[string]any{"path": dst}, "%s exists; a move never overwrites", quote(dst))
		}
	}
	if err := from.root.fs.Rename(from.rel, to.rel); err != nil {
		if isErrno(err, syscall.EINVAL) {
			return fail(CodeMoveIntoItself, "choose a destination outside the directory", map[string]any{"from": src, "to": dst},
				"cannot move %s into itself", quote(src))
		}
		if errors.Is(err, fs.ErrExist) || isErrno(err, syscall.ENOTEMPTY) {
			return fail(CodeDestinationExists, "choose another destination", map[string]any{"path": dst}, "%s exists; a move never overwrites", quote(dst))
		}
		return w.fsError(src, err)
	}
	return nil
}

// createDir creates a directory and its parents.
func (a *actions) createDir(ctx context.Context, c *manglecp.Call) (*manglecp.Outcome, error) {
	l, err := a.at(c.Args, "path")
	if err != nil {
		return nil, err
	}
	shown := a.w.show(l)
	out := &manglecp.Outcome{}
	created := false
	if err := out.Step("mkdir", func() (string, error) {
		if l.root == nil {
			return "exists", nil
		}
		st, err := l.root.fs.Stat(l.rel)
		switch {
		case err == nil && st.IsDir():
			return "exists", nil
		case err == nil:
			return "file in the way", fail(CodeNotADirectory, "a file has that name; choose another path", map[string]any{"path": shown}, "%s exists and is not a directory", quote(shown))
		case !errors.Is(err, fs.ErrNotExist):
			return "stat failed", a.w.fsError(shown, err)
		}
		if err := l.root.fs.MkdirAll(l.rel, 0o755); err != nil {
			return "mkdir failed", a.w.fsError(shown, err)
		}
		created = true
		return "created", nil
	}); err != nil {
		return nil, err
	}
	out.Result = map[string]any{"path": shown, "created": created}
	out.ContinuationFacts = []protocol.Fact{protocol.NewFact("focus", shown)}
	if created {
		out.Summary = fmt.Sprintf("Created %s.", shown)
	} else {
		out.Summary = fmt.Sprintf("%s already exists.", shown)
	}
	return out, ctx.Err()
}
