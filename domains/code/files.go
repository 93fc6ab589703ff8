package code

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/internal/rootfile"
	"github.com/manglecp/manglecp/protocol"
)

// File access of the code domain. Every read, write, move and walk goes
// through the root's os.Root, so no path a client or a language server
// names reaches outside a root.

// croot is one root: its name for clients, its absolute directory (for
// the language servers' URIs, never opened by path) and its os.Root.
type croot struct {
	name string
	dir  string
	fs   *os.Root
}

// loc is a path inside a root ("." for the root itself).
type loc struct {
	root *croot
	rel  string
}

const (
	maxPathBytes = 4096
	maxNameBytes = 255
)

// resolve checks a client path as the workspace domain does: with one
// root, relative to it; with several, the first segment names the root.
func (c *Code) resolve(p string) (loc, error) {
	switch {
	case p == "":
		return loc{}, fail(workspace.CodeInvalidPath, `use "." for the root`, map[string]any{"reason": "empty"}, "the path is empty")
	case strings.IndexByte(p, 0) >= 0 || !utf8.ValidString(p):
		return loc{}, fail(workspace.CodeInvalidPath, "paths are UTF-8 without NUL bytes", map[string]any{"reason": "invalid"}, "the path is not valid")
	case len(p) > maxPathBytes:
		return loc{}, fail(workspace.CodeInvalidPath, "use a shorter path", map[string]any{"reason": "too long", "limit": maxPathBytes}, "the path is too long")
	}
	for _, seg := range strings.Split(p, "/") {
		if len(seg) > maxNameBytes {
			return loc{}, fail(workspace.CodeInvalidPath, "use shorter names", map[string]any{"reason": "name too long", "limit": maxNameBytes}, "a name in the path is too long")
		}
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) >= 2 && p[1] == ':') {
		return loc{}, c.outside(p, "paths are relative to a root")
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return loc{}, c.outside(p, "the path climbs out of its root with ..")
	}
	if len(c.roots) == 1 {
		return loc{root: c.roots[0], rel: clean}, nil
	}
	first, rest, _ := strings.Cut(clean, "/")
	for _, r := range c.roots {
		if r.name == first {
			if rest == "" {
				rest = "."
			}
			return loc{root: r, rel: rest}, nil
		}
	}
	return loc{}, c.outside(p, "with several roots the first segment of a path names the root")
}

func (c *Code) outside(p, suggestion string) error {
	return fail(workspace.CodePathOutsideRoots, suggestion, map[string]any{"path": bounded(p)}, "%s is outside every root", quote(p))
}

// show is the client's form of a location.
func (c *Code) show(l loc) string {
	if len(c.roots) == 1 || l.root == nil {
		return l.rel
	}
	if l.rel == "." {
		return l.root.name
	}
	return l.root.name + "/" + l.rel
}

// fromURI turns a language server's URI into a location inside root r; ok
// is false for a URI outside it (a standard library file, a dependency),
// which the domain never reads.
func (r *croot) fromURI(uri string) (loc, bool) {
	abs, err := uriPath(uri)
	if err != nil {
		return loc{}, false
	}
	rel, ok := strings.CutPrefix(abs, r.dir+"/")
	if !ok || rel == "" {
		return loc{}, false
	}
	clean := path.Clean(rel)
	if clean != rel || clean == ".." || strings.HasPrefix(clean, "../") {
		return loc{}, false
	}
	return loc{root: r, rel: clean}, true
}

// uri is the file URI of a location, for the language server.
func (l loc) uri() string {
	if l.rel == "." {
		return fileURI(l.root.dir)
	}
	return fileURI(l.root.dir + "/" + l.rel)
}

// fsError turns an os.Root error into a domain error.
func (c *Code) fsError(shown string, err error) error {
	data := map[string]any{"path": shown}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(workspace.CodeFileNotFound, "check the path with list_dir or search", data, "%s does not exist", quote(shown))
	case rootfile.IsEscape(err):
		return fail(workspace.CodePathOutsideRoots, "use a path inside a root; symbolic links may not leave it", data, "%s leads outside its root", quote(shown))
	case errors.Is(err, syscall.ENOTDIR):
		return fail(workspace.CodeNotADirectory, "a parent of the path is a file", data, "%s: a component is not a directory", quote(shown))
	case errors.Is(err, syscall.EISDIR):
		return fail(workspace.CodeIsADirectory, "name a file", data, "%s is a directory", quote(shown))
	case errors.Is(err, fs.ErrPermission):
		return fail(workspace.CodePermissionDenied, "ask the user to fix the permissions", data, "access to %s is denied", quote(shown))
	}
	return fmt.Errorf("%s: %w", shown, err)
}

// readText reads a regular text file of at most limit bytes.
func (c *Code) readText(l loc, limit int64) ([]byte, error) {
	shown := c.show(l)
	f, err := l.root.fs.OpenFile(l.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, c.fsError(shown, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, c.fsError(shown, err)
	}
	if st.IsDir() {
		return nil, fail(workspace.CodeIsADirectory, "name a file", map[string]any{"path": shown}, "%s is a directory", quote(shown))
	}
	if !st.Mode().IsRegular() {
		return nil, fail(workspace.CodeNotText, "only regular files are read", map[string]any{"path": shown, "media_type": "application/octet-stream"}, "%s is not a regular file", quote(shown))
	}
	if st.Size() > limit {
		return nil, fail(workspace.CodeFileTooLarge, "edit a smaller file", map[string]any{"path": shown, "size": st.Size(), "limit": limit}, "%s is %d bytes; the limit is %d", quote(shown), st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, c.fsError(shown, err)
	}
	if int64(len(b)) > limit {
		return nil, fail(workspace.CodeFileTooLarge, "edit a smaller file", map[string]any{"path": shown, "limit": limit}, "%s is over %d bytes", quote(shown), limit)
	}
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		return nil, fail(workspace.CodeNotText, "only UTF-8 text is edited", map[string]any{"path": shown, "media_type": "application/octet-stream"}, "%s is not UTF-8 text", quote(shown))
	}
	return b, nil
}

// exists reports whether l names something (without following a final
// symbolic link).
func (l loc) exists() bool {
	_, err := l.root.fs.Lstat(l.rel)
	return err == nil
}

// writeAtomic writes content to l through a temporary file in the same
// directory and a rename, so a reader never sees half a file and a
// symbolic link at l is replaced, never followed.
func (c *Code) writeAtomic(l loc, content []byte, perm fs.FileMode) error {
	if err := rootfile.WriteAtomic(l.root.fs, l.rel, content, perm); err != nil {
		return c.fsError(c.show(l), err)
	}
	return nil
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// skipDir reports whether a walk skips a directory: version control,
// dependencies, caches and virtual environments.
func skipDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", "node_modules", "vendor", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".cache", ".tox":
		return true
	}
	return false
}

// walkFiles calls fn with the path (relative to the root) of every regular
// file below dir, skipping skipDir directories, without following
// symbolic links, up to limit entries; it reports whether it stopped at
// the limit.
func walkFiles(r *croot, dir string, limit int, fn func(rel string, d fs.DirEntry) error) (bool, error) {
	n := 0
	truncated := false
	err := fs.WalkDir(r.fs.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil
		}
		if n++; n > limit {
			truncated = true
			return fs.SkipAll
		}
		if d.IsDir() {
			if p != dir && (skipDir(d.Name()) || strings.HasPrefix(d.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return fn(p, d)
	})
	return truncated, err
}

// bounded cuts client input echoed in details (at a rune boundary).
func bounded(s string) string { return protocol.ClipN(s, 200) }

// quote bounds and escapes client input echoed in a message.
func quote(s string) string {
	return fmt.Sprintf("%q", bounded(s))
}
