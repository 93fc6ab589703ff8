package code

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/manglecp/manglecp/internal/lsp"
)

// Go files gopls does not load. gopls type-checks the packages of the
// module for the default build configuration only: a file its build
// constraints exclude (//go:build ignore on a one-off script, another
// GOOS or GOARCH, a custom tag such as integration) is in no package it
// loaded, so its rename and references miss the uses there. The domain
// finds those uses itself, by parsing such files (go/parser: identifiers
// only, never strings or comments) and resolving a use through the
// file's imports, and adds them to the same preview with a note.

// goUse is a use of a symbol in a Go file gopls did not load.
type goUse struct {
	at   loc
	pos  lsp.Position // of the identifier
	line string       // the line's text, for references
}

// goUnloaded is what the scan of the files gopls did not load found.
type goUnloaded struct {
	uses []goUse
	// files are the unloaded files that hold uses, sorted.
	files []string
	// unsure are occurrences of the name the scan cannot resolve without
	// type information (a method or field selector), as path:line; they
	// are not renamed.
	unsure []string
}

// note says in one sentence what the scan added, for a preview or a
// reference list; "" when it found nothing.
func (u goUnloaded) note(name, verb string) string {
	var parts []string
	if len(u.uses) > 0 {
		parts = append(parts, fmt.Sprintf("gopls does not load %s (build constraints); %d use(s) of %s there were found by parsing and %s",
			strings.Join(u.files, ", "), len(u.uses), name, verb))
	}
	if len(u.unsure) > 0 {
		parts = append(parts, fmt.Sprintf("check by hand: %s in files gopls does not load may be %s (not %s: no type information there)",
			strings.Join(u.unsure, ", "), name, verb))
	}
	return strings.Join(parts, "; ")
}

// goSymbolPackage is the package that defines a Go symbol: its directory,
// import path ("" without a go.mod) and name.
type goSymbolPackage struct {
	dir, importPath, name string
}

// goUnloadedUses finds the uses of the Go symbol h in the files of h's
// root that the default build configuration excludes, leaving out the
// files in skip (those the server's own answer covers).
func (c *Code) goUnloadedUses(h symbolHit, skip map[string]bool) goUnloaded {
	var out goUnloaded
	short := h.name
	member := false
	if i := strings.LastIndexByte(short, '.'); i >= 0 {
		short, member = short[i+1:], true
	}
	switch h.kind {
	case "method", "field":
		member = true
	}
	if !token.IsIdentifier(short) {
		return out
	}
	def, err := c.readText(h.at, c.cfg.MaxFileBytes)
	if err != nil {
		return out
	}
	df, err := parser.ParseFile(token.NewFileSet(), h.at.rel, def, parser.PackageClauseOnly)
	if err != nil {
		return out
	}
	pkg := goSymbolPackage{dir: path.Dir(h.at.rel), name: df.Name.Name}
	if mod, modPath, err := c.goModule(loc{root: h.at.root, rel: pkg.dir}); err == nil {
		pkg.importPath = modPath
		if r := relTo(pkg.dir, mod.rel); r != "" && r != "." {
			pkg.importPath += "/" + r
		}
	}
	files := map[string]bool{}
	_, _ = walkFiles(h.at.root, ".", c.cfg.MaxFiles, func(rel string, _ fs.DirEntry) error {
		if langOf(rel) != LangGo || path.Ext(rel) != ".go" || skip[rel] || strings.Contains("/"+rel, "/testdata/") {
			return nil
		}
		l := loc{root: h.at.root, rel: rel}
		if c.goLoaded(l) {
			return nil
		}
		content, err := c.readText(l, c.cfg.MaxFileBytes)
		if err != nil || !bytes.Contains(content, []byte(short)) {
			return nil
		}
		uses, unsure := goUsesIn(content, rel, pkg, short, member)
		for _, u := range uses {
			u.at = l
			out.uses = append(out.uses, u)
			files[c.show(l)] = true
		}
		for _, line := range unsure {
			out.unsure = append(out.unsure, fmt.Sprintf("%s:%d", c.show(l), line))
		}
		return nil
	})
	for f := range files {
		out.files = append(out.files, f)
	}
	sort.Strings(out.files)
	if len(out.unsure) > 10 {
		out.unsure = append(out.unsure[:10], fmt.Sprintf("and %d more", len(out.unsure)-10))
	}
	return out
}

// goLoaded reports whether gopls loads a Go file in its default build
// configuration: the go command's own rule (go/build's MatchFile: file
// name suffixes, build constraints, no tags) for this machine's GOOS and
// GOARCH, which gopls runs with.
func (c *Code) goLoaded(l loc) bool {
	bc := build.Default
	bc.BuildTags, bc.ToolTags = nil, nil
	bc.OpenFile = func(string) (io.ReadCloser, error) { return l.root.fs.Open(l.rel) }
	ok, err := bc.MatchFile(path.Dir(l.rel), path.Base(l.rel))
	return ok || err != nil // a file go/build cannot read is the server's to judge
}

// goUsesIn finds, in a Go file's content, the identifiers that refer to
// the symbol short of pkg: a selector pkg.short through an import of pkg
// (under its own name or the package's), short itself in a file of pkg's
// own package (unless a local declaration shadows it) or through a dot
// import. For a member (a method or a field), selectors x.short cannot be
// resolved without types: their lines are returned as unsure. Strings and
// comments are never touched: only identifiers are.
func goUsesIn(content []byte, rel string, pkg goSymbolPackage, short string, member bool) (uses []goUse, unsure []int) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, content, 0)
	if err != nil {
		return nil, nil
	}
	lines := lineStarts(content)
	add := func(id *ast.Ident) {
		p := fset.Position(id.Pos())
		start := lines[p.Line-1]
		col := utf16Len(string(content[start : start+p.Column-1]))
		uses = append(uses, goUse{pos: lsp.Position{Line: p.Line - 1, Character: col}, line: lineText(content, lines, p.Line-1)})
	}
	samePkg := path.Dir(rel) == pkg.dir && f.Name.Name == pkg.name
	if member {
		seen := map[int]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			var id *ast.Ident
			switch x := n.(type) {
			case *ast.SelectorExpr:
				id = x.Sel
			case *ast.FuncDecl:
				if x.Recv != nil {
					id = x.Name
				}
			case *ast.KeyValueExpr:
				id, _ = x.Key.(*ast.Ident)
			}
			if id != nil && id.Name == short {
				if l := fset.Position(id.Pos()).Line; !seen[l] {
					seen[l] = true
					unsure = append(unsure, l)
				}
			}
			return true
		})
		return nil, unsure
	}
	qualifiers := map[string]bool{}
	dotImport := false
	if pkg.importPath != "" {
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil || p != pkg.importPath {
				continue
			}
			switch {
			case imp.Name == nil:
				qualifiers[pkg.name] = true
			case imp.Name.Name == ".":
				dotImport = true
			case imp.Name.Name != "_":
				qualifiers[imp.Name.Name] = true
			}
		}
	}
	bare := samePkg || dotImport
	if len(qualifiers) == 0 && !bare {
		return nil, nil
	}
	// Identifiers that are not uses of a package-level name: selector
	// names, the keys of composite literals (field names), the names of
	// fields, methods and parameters.
	notUse := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			notUse[x.Sel] = true
			if id, ok := x.X.(*ast.Ident); ok && qualifiers[id.Name] && x.Sel.Name == short && id.Obj == nil {
				add(x.Sel)
			}
		case *ast.CompositeLit:
			for _, e := range x.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if id, ok := kv.Key.(*ast.Ident); ok {
						notUse[id] = true
					}
				}
			}
		case *ast.Field:
			for _, id := range x.Names {
				notUse[id] = true
			}
		case *ast.FuncDecl:
			if x.Recv != nil {
				notUse[x.Name] = true
			}
		}
		return true
	})
	if bare {
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok || id.Name != short || notUse[id] {
				return true
			}
			// Unresolved in the file: a package-level name of another
			// file of the package (or of the dot import); resolved: only
			// the file's own top-level declaration of it counts.
			if id.Obj == nil || (samePkg && f.Scope.Lookup(short) == id.Obj) {
				add(id)
			}
			return true
		})
	}
	sort.Slice(uses, func(i, j int) bool {
		if uses[i].pos.Line != uses[j].pos.Line {
			return uses[i].pos.Line < uses[j].pos.Line
		}
		return uses[i].pos.Character < uses[j].pos.Character
	})
	return uses, nil
}

// addToEdit adds the renames of uses to a server's WorkspaceEdit.
func (u goUnloaded) addToEdit(we *lsp.WorkspaceEdit, oldName, newName string) {
	if len(u.uses) == 0 {
		return
	}
	if we.Changes == nil {
		we.Changes = map[string][]lsp.TextEdit{}
	}
	n := utf16Len(oldName)
	for _, use := range u.uses {
		end := use.pos
		end.Character += n
		uri := use.at.uri()
		we.Changes[uri] = append(we.Changes[uri], lsp.TextEdit{Range: lsp.Range{Start: use.pos, End: end}, NewText: newName})
	}
}
