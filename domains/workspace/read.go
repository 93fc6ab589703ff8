package workspace

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

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
