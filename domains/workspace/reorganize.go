package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
)

// The reorganize jobs: move and create directories.

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
		if errors.Is(err, fs.ErrNotExist) {
			// The destination's parent directories are made, as
			// create_dir makes them (a move needs no extra call).
			if err := to.root.fs.MkdirAll(parent.rel, 0o755); err != nil {
				return "no parent", a.w.fsError(a.w.show(parent), err)
			}
			pst, err = to.root.fs.Stat(parent.rel)
		}
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
