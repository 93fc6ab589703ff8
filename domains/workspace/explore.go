package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/manglecp/manglecp"
)

// The explore jobs: the roots, listings, trees and file metadata.

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
			e := map[string]any{"name": listed(it.name), "kind": it.kind}
			if it.kind == "file" {
				e["size"] = it.size
			}
			entries = append(entries, e)
			continue
		}
		name := listed(it.name)
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
	var stop string
	if err := out.Step("walk", func() (string, error) {
		var err error
		stop, _, err = a.w.walk(ctx, l, func(_ loc, rel string, d fs.DirEntry) error {
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
			b.WriteString(listed(path.Base(rel)))
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
	out.Result = map[string]any{"path": shown, "depth": depth, "tree": b.String(), "entries": n, "truncated": stop != "" || full}
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
	*lc.lines += int64(bytes.Count(p, newline))
	return lc.h.Write(p)
}
