package code

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/workspace"
)

// Moving code with its imports updated. Neither gopls nor pyright moves a
// package or module with its importers (gopls renames a package's last
// path element only; pyright has no move), so the domain does it itself:
// it moves the files and rewrites every import of the old path, found by
// parsing (go/parser for Go; a scanner that skips strings and comments
// for Python), and the qualified uses of a renamed Go package; the
// language server then reports the diagnostics of the result.

// span is a replacement of content[start:end].
type span struct {
	start, end int
	text       string
}

func applySpans(content []byte, spans []span) []byte {
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b []byte
	last := 0
	for _, s := range spans {
		if s.start < last {
			continue // overlapping: keep the first
		}
		b = append(b, content[last:s.start]...)
		b = append(b, s.text...)
		last = s.end
	}
	return append(b, content[last:]...)
}

// moveCode previews moving a Go package directory or a Python module or
// package with every import of it updated.
func (a *actions) moveCode(ctx context.Context, call *manglecp.Call) (*manglecp.Outcome, error) {
	c := a.c
	fromArg, _ := call.Args["from"].(string)
	toArg, _ := call.Args["to"].(string)
	from, err := c.resolve(fromArg)
	if err != nil {
		return nil, err
	}
	to, err := c.resolve(toArg)
	if err != nil {
		return nil, err
	}
	if from.root != to.root {
		return nil, fail(workspace.CodeCrossRootMove, "move within one root", map[string]any{"from": bounded(fromArg), "to": bounded(toArg)}, "the move crosses roots")
	}
	if from.rel == "." || to.rel == "." {
		return nil, fail(CodeNotMovable, "name a package or module below the root", map[string]any{"path": c.show(from), "reason": "root"}, "the root itself cannot be moved")
	}
	if to.rel == from.rel || strings.HasPrefix(to.rel, from.rel+"/") {
		return nil, fail(workspace.CodeMoveIntoItself, "choose a destination outside the source", map[string]any{"from": c.show(from), "to": c.show(to)}, "cannot move %s into itself", quote(c.show(from)))
	}
	if to.exists() {
		return nil, fail(workspace.CodeDestinationExists, "choose a destination that does not exist", map[string]any{"path": c.show(to)}, "%s exists", quote(c.show(to)))
	}
	st, err := from.root.fs.Stat(from.rel)
	if err != nil {
		return nil, c.fsError(c.show(from), err)
	}
	lang := langOf(from.rel)
	if st.IsDir() {
		lang = c.dirLang(from)
	}
	out := &manglecp.Outcome{}
	var p *plan
	var how string
	err = out.Step("plan", func() (string, error) {
		switch {
		case lang == LangGo && st.IsDir():
			p, how, err = c.goMovePlan(from, to)
		case lang == LangPython:
			p, how, err = c.pyMovePlan(from, to, st.IsDir())
		default:
			reason := "a Go file belongs to its package: move the package directory, or rename the file with move"
			if lang == "" {
				reason = "not Go or Python code: move it with move"
			}
			return "not movable", fail(CodeNotMovable, reason, map[string]any{"path": c.show(from), "reason": reason}, "move_code cannot move %s", quote(c.show(from)))
		}
		if err != nil {
			return "failed", err
		}
		return how, nil
	})
	if err != nil {
		return nil, err
	}
	return c.preview(ctx, p, out, map[string]any{"how": how})
}

// readRaw reads a file of a moved directory whatever it holds (bounded).
func (c *Code) readRaw(l loc) ([]byte, fs.FileMode, error) {
	f, err := l.root.fs.OpenFile(l.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, c.fsError(c.show(l), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, 0, fail(CodeNotMovable, "move it with move", map[string]any{"path": c.show(l), "reason": "not a regular file"}, "%s is not a regular file", quote(c.show(l)))
	}
	if st.Size() > c.cfg.MaxFileBytes {
		return nil, 0, fail(workspace.CodeFileTooLarge, "move it with move", map[string]any{"path": c.show(l), "size": st.Size(), "limit": c.cfg.MaxFileBytes}, "%s is too large to move with its imports", quote(c.show(l)))
	}
	b, err := io.ReadAll(io.LimitReader(f, c.cfg.MaxFileBytes+1))
	if err != nil {
		return nil, 0, c.fsError(c.show(l), err)
	}
	return b, st.Mode().Perm(), nil
}

// movedFiles lists the files below a directory being moved (or the file
// itself) with their destinations, and the directories left behind.
func (c *Code) movedFiles(from, to loc, isDir bool) ([]*fileChange, []loc, error) {
	if !isDir {
		b, perm, err := c.readRaw(from)
		if err != nil {
			return nil, nil, err
		}
		f := from
		return []*fileChange{{from: &f, to: to, before: b, after: b, perm: perm}}, nil, nil
	}
	var files []*fileChange
	var dirs []loc
	count := 0
	err := fs.WalkDir(from.root.fs.FS(), from.rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if count++; count > c.cfg.MaxEditFiles {
			return fail(CodeTooManyFiles, "move fewer files at once", map[string]any{"limit": c.cfg.MaxEditFiles}, "the directory holds more than %d entries", c.cfg.MaxEditFiles)
		}
		if d.IsDir() {
			dirs = append(dirs, loc{root: from.root, rel: p})
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 || !d.Type().IsRegular() {
			return fail(CodeNotMovable, "move it with move", map[string]any{"path": p, "reason": "holds a link or special file"}, "the directory holds a link or special file")
		}
		src := loc{root: from.root, rel: p}
		b, perm, err := c.readRaw(src)
		if err != nil {
			return err
		}
		dst := loc{root: to.root, rel: to.rel + strings.TrimPrefix(p, from.rel)}
		files = append(files, &fileChange{from: &src, to: dst, before: b, after: b, perm: perm})
		return nil
	})
	if err != nil {
		var pe interface{ Error() string }
		if errors.As(err, &pe) {
			return nil, nil, err
		}
	}
	return files, dirs, err
}

// goModule finds the go.mod governing dir (the nearest above it inside the
// root) and returns its directory and module path.
func (c *Code) goModule(dir loc) (loc, string, error) {
	for d := dir.rel; ; d = path.Dir(d) {
		l := loc{root: dir.root, rel: path.Join(d, "go.mod")}
		if b, err := c.readText(l, 1<<20); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				line = strings.TrimSpace(line)
				if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
					mod := strings.Trim(strings.TrimSpace(strings.SplitN(rest, "//", 2)[0]), `"`+"`")
					if mod != "" {
						return loc{root: dir.root, rel: d}, mod, nil
					}
				}
			}
		}
		if d == "." {
			break
		}
	}
	return loc{}, "", fail(CodeNotMovable, "a Go package is moved inside its module: the root needs a go.mod", map[string]any{"path": c.show(dir), "reason": "no go.mod"}, "no go.mod governs %s", quote(c.show(dir)))
}

// within reports whether rel lies in dir ("." holds everything).
func within(rel, dir string) bool {
	return dir == "." || rel == dir || strings.HasPrefix(rel, dir+"/")
}

func relTo(rel, dir string) string {
	if dir == "." {
		return rel
	}
	return strings.TrimPrefix(strings.TrimPrefix(rel, dir), "/")
}

// goMovePlan moves a Go package directory (with the packages below it)
// and rewrites the module's imports of it.
func (c *Code) goMovePlan(from, to loc) (*plan, string, error) {
	modDir, mod, err := c.goModule(from)
	if err != nil {
		return nil, "", err
	}
	if !within(to.rel, modDir.rel) {
		return nil, "", fail(CodeNotMovable, "move the package inside its module", map[string]any{"path": c.show(to), "reason": "outside the module"}, "%s is outside the module %s", quote(c.show(to)), mod)
	}
	oldPath := mod + "/" + relTo(from.rel, modDir.rel)
	newPath := mod + "/" + relTo(to.rel, modDir.rel)
	oldName, newName := path.Base(oldPath), path.Base(newPath)
	renamePkg := oldName != newName && token.IsIdentifier(newName) && !strings.Contains(newName, ".")
	moved, dirs, err := c.movedFiles(from, to, true)
	if err != nil {
		return nil, "", err
	}
	p := &plan{kind: "move", summary: fmt.Sprintf("Moved package %s to %s", oldPath, newPath), dirs: dirs}
	// The package clause of the moved package's own files.
	if renamePkg {
		for _, f := range moved {
			if path.Dir(f.from.rel) != from.rel || langOf(f.from.rel) != LangGo {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f.from.rel, f.after, parser.PackageClauseOnly)
			if err != nil || (file.Name.Name != oldName && file.Name.Name != oldName+"_test") {
				continue
			}
			off := fset.Position(file.Name.Pos()).Offset
			f.after = applySpans(f.after, []span{{off, off + len(oldName), newName}})
		}
	}
	importers, movedImporters, err := c.rewriteImporters(p, from.root, modDir.rel, moved,
		func(rel string) bool { return langOf(rel) == LangGo && !strings.Contains("/"+rel+"/", "/testdata/") },
		func(_ string, _ *fileChange, content []byte) ([]byte, int) {
			return rewriteGoImports(content, oldPath, newPath, oldName, newName, renamePkg)
		})
	if err != nil {
		return nil, "", err
	}
	importers += movedImporters
	how := fmt.Sprintf("moved %d file(s); rewrote the import of %s in %d file(s) found by parsing them (go/parser)", len(moved), oldPath, importers)
	if renamePkg {
		how += fmt.Sprintf(", and renamed package %s to %s with its qualified uses", oldName, newName)
	}
	return p, how, nil
}

// rewriteImporters rewrites the imports of a move in the files below dir
// of root that keep accepts: rewrite gets each file's path, its change when
// the move moves it (nil otherwise) and its content, and returns the new
// content and the number of imports it rewrote. A moved file's change gets
// the new content; any other file readable as text becomes a change of p.
// The moved files join p's changes, within the bound on files. It returns
// how many files other than the moved ones, and how many moved ones, had
// imports rewritten.
func (c *Code) rewriteImporters(p *plan, root *croot, dir string, moved []*fileChange, keep func(rel string) bool,
	rewrite func(rel string, fc *fileChange, content []byte) ([]byte, int)) (others, movedN int, err error) {
	movedBySrc := map[string]*fileChange{}
	for _, f := range moved {
		movedBySrc[f.from.rel] = f
	}
	_, err = walkFiles(root, dir, c.cfg.MaxFiles, func(rel string, _ fs.DirEntry) error {
		if !keep(rel) {
			return nil
		}
		fc := movedBySrc[rel]
		var content []byte
		if fc != nil {
			content = fc.after
		} else {
			b, err := c.readText(loc{root: root, rel: rel}, c.cfg.MaxFileBytes)
			if err != nil {
				return nil // not a file a move can edit: its imports stay
			}
			content = b
		}
		after, n := rewrite(rel, fc, content)
		switch {
		case n == 0:
		case fc != nil:
			fc.after = after
			movedN++
		default:
			others++
			l := loc{root: root, rel: rel}
			st, _ := l.root.fs.Stat(rel)
			perm := fs.FileMode(0o644)
			if st != nil {
				perm = st.Mode().Perm()
			}
			p.files = append(p.files, &fileChange{to: l, before: content, after: after, perm: perm})
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	p.files = append(p.files, moved...)
	if len(p.files) > c.cfg.MaxEditFiles {
		return 0, 0, fail(CodeTooManyFiles, "make a smaller move", map[string]any{"limit": c.cfg.MaxEditFiles}, "the move touches %d files", len(p.files))
	}
	return others, movedN, nil
}

// rewriteGoImports rewrites a Go file's imports of oldPath (and of the
// packages below it) to newPath; with renamePkg, the qualified uses
// (oldName.X) of an import without its own name become newName.X. It
// returns the new content and the number of imports rewritten.
func rewriteGoImports(content []byte, oldPath, newPath, oldName, newName string, renamePkg bool) ([]byte, int) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "x.go", content, parser.SkipObjectResolution)
	if err != nil {
		return content, 0
	}
	var spans []span
	n := 0
	qualify := false
	for _, imp := range file.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		var np string
		switch {
		case p == oldPath:
			np = newPath
			if renamePkg && imp.Name == nil {
				qualify = true
			}
		case strings.HasPrefix(p, oldPath+"/"):
			np = newPath + strings.TrimPrefix(p, oldPath)
		default:
			continue
		}
		start := fset.Position(imp.Path.Pos()).Offset
		end := fset.Position(imp.Path.End()).Offset
		spans = append(spans, span{start, end, strconv.Quote(np)})
		n++
	}
	if qualify {
		// oldName.X where oldName is not declared in the file: the
		// package. (Local declarations shadowing it are left alone.)
		declared := map[string]bool{}
		ast.Inspect(file, func(nd ast.Node) bool {
			switch x := nd.(type) {
			case *ast.ValueSpec:
				for _, id := range x.Names {
					declared[id.Name] = true
				}
			case *ast.AssignStmt:
				if x.Tok == token.DEFINE {
					for _, e := range x.Lhs {
						if id, ok := e.(*ast.Ident); ok {
							declared[id.Name] = true
						}
					}
				}
			case *ast.Field:
				for _, id := range x.Names {
					declared[id.Name] = true
				}
			}
			return true
		})
		if !declared[oldName] {
			ast.Inspect(file, func(nd ast.Node) bool {
				if sel, ok := nd.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == oldName {
						off := fset.Position(id.Pos()).Offset
						spans = append(spans, span{off, off + len(oldName), newName})
					}
				}
				return true
			})
		}
	}
	if n == 0 {
		return content, 0
	}
	return applySpans(content, spans), n
}
