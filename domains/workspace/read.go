package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// The read jobs: text (whole, head, tail), several files, media.

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
// and last tail lines. The digest and line count cover the whole file (up
// to 64 times MaxReadBytes; beyond that there are none). Memory stays
// bounded by the read limit: the whole file is hashed and its lines are
// counted through a fixed buffer, the head is read from the start and the
// tail from the end, each at most MaxReadBytes.
func (a *actions) read(l loc, head int64, hasHead bool, tail int64, hasTail bool) (map[string]any, error) {
	f, st, err := a.w.openRegular(l)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	shown := a.w.show(l)
	limit := a.w.cfg.MaxReadBytes
	size := st.Size()
	big := size > 64*limit
	if big && !hasHead && !hasTail {
		// Hashing and counting a whole file stay bounded too: beyond 64
		// times the read limit only its first or last lines are read.
		return nil, fail(CodeFileTooLarge, "read parts of it with head or tail", map[string]any{"path": shown, "size": size, "limit": 64 * limit},
			"%s is %d bytes; the limit is %d", quote(shown), size, 64*limit)
	}
	sniff := make([]byte, min(size, sniffBytes))
	n, err := f.ReadAt(sniff, 0)
	if err != nil && err != io.EOF {
		return nil, a.w.fsError(shown, err)
	}
	sniff = sniff[:n]
	if !isText(sniff, int64(n) < size) {
		return nil, notText(shown, sniff)
	}
	res := map[string]any{"path": shown}
	lines := int64(-1)
	if big {
		res["size"] = size
	} else {
		h := sha256.New()
		var nl int64
		var last byte
		buf := make([]byte, 64<<10)
		for off := int64(0); ; {
			n, err := f.ReadAt(buf, off)
			if n > 0 {
				h.Write(buf[:n])
				nl += int64(bytes.Count(buf[:n], newline))
				last = buf[n-1]
				off += int64(n)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, a.w.fsError(shown, err)
			}
		}
		lines = nl
		if last != '\n' && size > 0 {
			lines++ // a last line without a newline
		}
		res["digest"] = hex.EncodeToString(h.Sum(nil)[:8])
		res["lines"] = lines
	}
	var content string
	var truncated bool
	if !hasHead && !hasTail {
		content, truncated, err = readStart(f, size, limit)
	} else {
		content, truncated, err = readEnds(f, size, limit, head, tail)
		truncated = truncated || big
	}
	if err != nil {
		return nil, a.w.fsError(shown, err)
	}
	if strings.IndexByte(content, 0) >= 0 || !utf8.ValidString(content) {
		return nil, notText(shown, sniff)
	}
	res["content"] = content
	res["truncated"] = truncated
	return res, nil
}

var newline = []byte{'\n'}

// readStart reads the whole lines of a file that fit in limit bytes.
func readStart(f *os.File, size, limit int64) (string, bool, error) {
	buf := make([]byte, min(size, limit))
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return "", false, err
	}
	buf = buf[:n]
	if int64(n) < size {
		// Cut after the last whole line that fits.
		buf = buf[:bytes.LastIndexByte(buf, '\n')+1]
		return string(buf), true, nil
	}
	return string(buf), false, nil
}

// readEnds reads the first head and the last tail lines of a file, each
// part within limit bytes and the parts never overlapping; between them
// "...\n" marks lines left out. It reads at most limit bytes from each end.
func readEnds(f *os.File, size, limit, head, tail int64) (string, bool, error) {
	var first []byte
	headEnd := int64(0)
	cut := false
	if head > 0 {
		buf := make([]byte, min(size, limit))
		n, err := f.ReadAt(buf, 0)
		if err != nil && err != io.EOF {
			return "", false, err
		}
		buf = buf[:n]
		end, found := len(buf), int64(0)
		for i, c := range buf {
			if c == '\n' {
				if found++; found == head {
					end = i + 1
					break
				}
			}
		}
		if found < head && int64(end) < size {
			cut = true // the limit ends the head part, maybe mid-line
			end = runeStart(buf, end)
		}
		first, headEnd = buf[:end], int64(end)
	}
	var last []byte
	tailStart := size
	if tail > 0 && headEnd < size {
		from := max(headEnd, size-limit)
		buf := make([]byte, size-from)
		n, err := f.ReadAt(buf, from)
		if err != nil && err != io.EOF {
			return "", false, err
		}
		buf = buf[:n]
		start, found := 0, int64(0)
		i := len(buf) - 1
		if i >= 0 && buf[i] == '\n' {
			i-- // the newline that ends the last line
		}
		for ; i >= 0; i-- {
			if buf[i] == '\n' {
				if found++; found == tail {
					start = i + 1
					break
				}
			}
		}
		if i < 0 && from > headEnd {
			// The limit ends the tail part: drop the line it cuts unless
			// it is the only one.
			cut = true
			if j := bytes.IndexByte(buf, '\n'); j >= 0 && j+1 < len(buf) {
				start = j + 1
			} else {
				start = runeNext(buf, 0)
			}
		}
		last, tailStart = buf[start:], from+int64(start)
	}
	var b strings.Builder
	b.Grow(len(first) + len(last) + 4)
	b.Write(first)
	gap := headEnd < tailStart
	if len(first) > 0 && len(last) > 0 && gap {
		b.WriteString("...\n")
	}
	b.Write(last)
	content := b.String()
	if int64(len(content)) > limit {
		content, cut = content[:runeStart([]byte(content), int(limit))], true
	}
	return content, cut || gap, nil
}

// runeStart moves the cut end back to the start of the rune it splits.
func runeStart(b []byte, end int) int {
	for i := 0; i < utf8.UTFMax && end > 0 && end < len(b) && !utf8.RuneStart(b[end]); i++ {
		end--
	}
	return end
}

// runeNext moves start forward past the continuation bytes of a cut rune.
func runeNext(b []byte, start int) int {
	for i := 0; i < utf8.UTFMax && start < len(b) && !utf8.RuneStart(b[start]); i++ {
		start++
	}
	return start
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
	var read []string
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
		read = append(read, p)
		okCount++
	}
	_ = out.Step("read", func() (string, error) { return fmt.Sprintf("%d of %d files", okCount, len(files)), nil })
	out.Result = map[string]any{"files": files}
	// The files read go on to the intent read_files suggests (edit), so
	// it can offer to edit them without the model naming them again.
	out.ContinuationFacts = mentionedFacts(read, 10)
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
