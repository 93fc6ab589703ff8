package workspace

import (
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/manglecp/manglecp/protocol"
)

// Path limits checked before any file system call.
const (
	maxPathBytes = 4096
	maxNameBytes = 255
)

// loc is a resolved path: a root and a cleaned path relative to it ("."
// for the root itself). A nil root is the virtual top above several roots.
type loc struct {
	root *root
	rel  string
}

// resolve checks and resolves a client path. With one root, paths are
// relative to it; with several, the first segment names the root and "."
// is the virtual top listing them. It never touches the file system: the
// os.Root operations that follow confine symbolic links.
func (w *Workspace) resolve(p string) (loc, error) {
	if p == "" {
		return loc{}, fail(CodeInvalidPath, `use "." for the root`, map[string]any{"reason": "empty"}, "the path is empty")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return loc{}, fail(CodeInvalidPath, "remove the NUL byte", map[string]any{"reason": "NUL byte"}, "the path holds a NUL byte")
	}
	if !utf8.ValidString(p) {
		return loc{}, fail(CodeInvalidPath, "paths are UTF-8", map[string]any{"reason": "not UTF-8"}, "the path is not valid UTF-8")
	}
	if len(p) > maxPathBytes {
		return loc{}, fail(CodeInvalidPath, "use a shorter path", map[string]any{"reason": "too long", "limit": maxPathBytes, "size": len(p)},
			"the path is %d bytes long; the limit is %d", len(p), maxPathBytes)
	}
	for _, seg := range strings.Split(p, "/") {
		if len(seg) > maxNameBytes {
			return loc{}, fail(CodeInvalidPath, "use shorter names", map[string]any{"reason": "name too long", "limit": maxNameBytes, "size": len(seg)},
				"a name in the path is %d bytes long; the limit is %d", len(seg), maxNameBytes)
		}
	}
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) >= 2 && p[1] == ':') {
		return loc{}, w.outside(p, "paths are relative to a root; list them with list_roots")
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return loc{}, w.outside(p, "the path climbs out of its root with ..")
	}
	if len(w.roots) == 1 {
		return loc{root: w.roots[0], rel: clean}, nil
	}
	if clean == "." {
		return loc{}, nil
	}
	first, rest, _ := strings.Cut(clean, "/")
	for _, r := range w.roots {
		if r.name == first {
			if rest == "" {
				rest = "."
			}
			return loc{root: r, rel: rest}, nil
		}
	}
	return loc{}, w.outside(p, "with several roots the first segment of a path names the root")
}

func (w *Workspace) outside(p, suggestion string) error {
	return fail(CodePathOutsideRoots, suggestion, map[string]any{"path": bounded(p), "roots": w.RootNames()},
		"%s is outside every root", quote(p))
}

// show is the client's form of a location: relative to its root, prefixed
// by the root's name when there are several roots.
func (w *Workspace) show(l loc) string {
	if l.root == nil {
		return "."
	}
	if len(w.roots) == 1 {
		return l.rel
	}
	if l.rel == "." {
		return l.root.name
	}
	return l.root.name + "/" + l.rel
}

// join is the location of name inside the directory l.
func join(l loc, name string) loc {
	if l.rel == "." {
		return loc{root: l.root, rel: name}
	}
	return loc{root: l.root, rel: l.rel + "/" + name}
}

// bounded cuts client input echoed in details.
func bounded(s string) string {
	return protocol.ClipN(s, 200)
}

// listed is how listings (tree, list_dir, search) show a name or path: as
// it is when every rune of it prints, Go-quoted otherwise ("a\nb.txt"),
// so a name holding a newline, another control character or an invisible
// format character (a bidirectional override) cannot forge lines or
// entries. A name that starts with a double quote is quoted too, so a
// quoted name is never ambiguous.
func listed(s string) string {
	if strings.HasPrefix(s, `"`) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// listedLine is how a content search shows a matching line: as it is when
// every rune but tabs prints, Go-quoted otherwise (a carriage return or a
// terminal escape sequence).
func listedLine(s string) string {
	for _, r := range s {
		if r != '\t' && (r == utf8.RuneError || !strconv.IsPrint(r)) {
			return strconv.Quote(s)
		}
	}
	return s
}
