package code

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/lsp"
	"github.com/manglecp/manglecp/protocol"
)

// Symbols: find a symbol's definition and its references, rename it.

// symbolHit is a symbol definition a server reported inside a root.
type symbolHit struct {
	root      *croot
	lang      string
	at        loc
	pos       lsp.Position
	name      string
	kind      string
	container string
}

// line is the one-based line of the hit.
func (h symbolHit) line() int { return h.pos.Line + 1 }

// matches reports whether a server's symbol is the one named: its name,
// or a method written Type.Method (gopls names methods so; pyright gives
// the class as container).
func matches(s lsp.SymbolInformation, name string) bool {
	if s.Name == name || strings.HasSuffix(s.Name, "."+name) {
		return true
	}
	if s.ContainerName != "" && strings.Contains(name, ".") {
		c := s.ContainerName
		if i := strings.LastIndexAny(c, "./"); i >= 0 {
			c = c[i+1:]
		}
		return c+"."+s.Name == name
	}
	return false
}

// waitReady waits until srv has found its workspace's files, bounded by
// the request's patience: when it runs out, the request answers
// x-language_server_unavailable (retryable) while the server goes on.
func (c *Code) waitReady(ctx context.Context, srv *lsp.Server, lang string) error {
	select {
	case <-srv.Ready():
		return nil
	default:
	}
	pctx, stop := c.patient(ctx)
	defer stop()
	select {
	case <-srv.Ready():
		return nil
	case <-pctx.Done():
		if ctx.Err() == nil && context.Cause(pctx) == errPatience {
			return c.notYet(lang, "starting")
		}
		return ctx.Err()
	case <-srv.Done():
		return nil // the request that follows reports the exit
	}
}

func anyMatch(syms []lsp.SymbolInformation, name string) bool {
	for _, s := range syms {
		if matches(s, name) {
			return true
		}
	}
	return false
}

// targets are the roots and languages a symbol request asks: the path's
// when one is given, else every language of every root with a server.
func (c *Code) targets(pathArg, lang string) ([]target, error) {
	var out []target
	if pathArg != "" {
		l, err := c.resolve(pathArg)
		if err != nil {
			return nil, err
		}
		if lang == "" {
			lang = langOf(l.rel)
			if lang == "" {
				lang = c.dirLang(l)
			}
		}
		if lang == "" {
			return nil, fail(CodeServerUnavailable, "name a Go or Python file", map[string]any{"path": c.show(l), "reason": "no language"},
				"%s is not a Go or Python file", quote(c.show(l)))
		}
		return []target{{root: l.root, lang: lang, at: &l}}, nil
	}
	for _, r := range c.roots {
		for _, l := range c.languages(r) {
			if lang != "" && l != lang {
				continue
			}
			switch c.languageState(r, l) {
			case stateRunning, stateAvailable, stateFailed:
				out = append(out, target{root: r, lang: l})
			}
		}
	}
	if len(out) == 0 {
		if lang == "" {
			lang = "any language"
		}
		return nil, fail(CodeServerUnavailable, "find text with search", map[string]any{"language": lang, "reason": "no server"},
			"no language server serves %s here", lang)
	}
	return out, nil
}

type target struct {
	root *croot
	lang string
	at   *loc // the file or directory the request names, if any
}

// findDefinitions asks each target's server for the symbols named name
// and keeps the exact matches defined inside the root (and inside the
// target's path when it names one).
func (c *Code) findDefinitions(ctx context.Context, name string, targets []target, line int) ([]symbolHit, error) {
	var hits []symbolHit
	var firstErr error
	for _, t := range targets {
		srv, err := c.server(ctx, t.root, t.lang)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		var syms []lsp.SymbolInformation
		err = c.waitReady(ctx, srv, t.lang)
		if err == nil && !srv.HasCapability("workspaceSymbolProvider") {
			// pylsp (1.7) has no workspace/symbol: the symbols of the
			// files that hold the name, by textDocument/documentSymbol.
			syms, err = c.documentSymbols(ctx, t, srv, name)
		} else if err == nil {
			err = c.call(ctx, t.root, t.lang, srv, "workspace/symbol", map[string]any{"query": name}, &syms)
		}
		if err == nil && srv.HasCapability("workspaceSymbolProvider") && srv.First("workspace/symbol") && !anyMatch(syms, name) {
			// A server's first answer can come before it has analysed the
			// files it found; the second waits for the analysis.
			err = c.call(ctx, t.root, t.lang, srv, "workspace/symbol", map[string]any{"query": name}, &syms)
		}
		if err != nil {
			if se := (*serverError)(nil); errors.As(err, &se) {
				err = se.asFailure()
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		for _, s := range syms {
			if !matches(s, name) {
				continue
			}
			l, ok := t.root.fromURI(s.Location.URI)
			if !ok {
				continue // a dependency's or the standard library's
			}
			if t.at != nil && t.at.rel != "." && l.rel != t.at.rel && !strings.HasPrefix(l.rel, t.at.rel+"/") {
				continue
			}
			if line > 0 && s.Location.Range.Start.Line+1 != line {
				continue
			}
			hits = append(hits, symbolHit{root: t.root, lang: t.lang, at: l, pos: s.Location.Range.Start,
				name: s.Name, kind: lsp.SymbolKindName(s.Kind), container: s.ContainerName})
		}
	}
	if len(hits) == 0 && firstErr != nil {
		return nil, firstErr
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].at.rel != hits[j].at.rel {
			return hits[i].at.rel < hits[j].at.rel
		}
		return hits[i].pos.Line < hits[j].pos.Line
	})
	return hits, nil
}

// describe is a hit in one line: path:line kind name (container).
func (c *Code) describe(h symbolHit) string {
	s := fmt.Sprintf("%s:%d %s %s", c.show(h.at), h.line(), h.kind, h.name)
	if h.container != "" {
		s += " (in " + h.container + ")"
	}
	return s
}

// symbolPosition positions a hit on its identifier: servers give the
// start of the declaration's range or of its name, so the name is looked
// for from there on that line.
func (c *Code) symbolPosition(h symbolHit) (lsp.Position, []byte, error) {
	content, err := c.readText(h.at, c.cfg.MaxFileBytes)
	if err != nil {
		return h.pos, nil, err
	}
	lines := lineStarts(content)
	short := h.name
	if i := strings.LastIndexByte(short, '.'); i >= 0 {
		short = short[i+1:]
	}
	if h.pos.Line < len(lines) {
		start, _ := offsetOf(content, lines, h.pos)
		end := len(content)
		if h.pos.Line+1 < len(lines) {
			end = lines[h.pos.Line+1]
		}
		if i := indexWord(string(content[start:end]), short); i >= 0 {
			return lsp.Position{Line: h.pos.Line, Character: h.pos.Character + utf16Len(string(content[start:start+i]))}, content, nil
		}
	}
	return h.pos, content, nil
}

// serverAt is the language server of a hit's root and language, and the
// position of the hit's identifier.
func (c *Code) serverAt(ctx context.Context, h symbolHit) (*lsp.Server, lsp.Position, error) {
	srv, err := c.server(ctx, h.root, h.lang)
	if err != nil {
		return nil, lsp.Position{}, err
	}
	pos, _, err := c.symbolPosition(h)
	return srv, pos, err
}

// indexWord is the index of the first whole-word occurrence of w in s.
func indexWord(s, w string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return -1
		}
		i += off
		before := i == 0 || !isIdent(s[i-1])
		after := i+len(w) >= len(s) || !isIdent(s[i+len(w)])
		if before && after {
			return i
		}
		off = i + 1
	}
}

func isIdent(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// one picks the single definition of hits, or explains why there is not
// one.
func (c *Code) one(name string, hits []symbolHit) (symbolHit, error) {
	switch len(hits) {
	case 0:
		return symbolHit{}, fail(CodeSymbolNotFound, "check the name with find_symbol, or find text with search", map[string]any{"name": bounded(name)},
			"no symbol named %s is defined inside the root", quote(name))
	case 1:
		return hits[0], nil
	}
	var cands []any
	for i, h := range hits {
		if i == 10 {
			break
		}
		cands = append(cands, c.describe(h))
	}
	return symbolHit{}, fail(CodeSymbolAmbiguous, "pass path (and line) to choose one", map[string]any{"name": bounded(name), "candidates": cands},
		"%d symbols are named %s", len(hits), quote(name))
}

// findSymbol answers find_symbol: the definitions of a name and, with
// references, every reference to each, as path:line: text lines.
func (a *actions) findSymbol(ctx context.Context, call *manglecp.Call) (*manglecp.Outcome, error) {
	c := a.c
	name, _ := call.Args["name"].(string)
	pathArg, _ := call.Args["path"].(string)
	lang, _ := call.Args["language"].(string)
	withRefs, set := call.Args["references"].(bool)
	if !set {
		withRefs = true // the rules' default
	}
	if name == "" {
		return nil, fail(CodeSymbolNotFound, "pass the symbol's name", map[string]any{"name": ""}, "the name is empty")
	}
	out := &manglecp.Outcome{}
	targets, err := c.targets(pathArg, lang)
	if err != nil {
		return nil, err
	}
	var hits []symbolHit
	if err := out.Step("workspace/symbol", func() (string, error) {
		var err error
		hits, err = c.findDefinitions(ctx, name, targets, 0)
		return fmt.Sprintf("%d definitions", len(hits)), err
	}); err != nil {
		return nil, err
	}
	if len(hits) == 0 {
		_, err := c.one(name, nil)
		return nil, err
	}
	defs := []string{}
	mentioned := map[string]bool{}
	for i, h := range hits {
		if i == c.cfg.MaxResults {
			break
		}
		defs = append(defs, c.describe(h))
		mentioned[c.show(h.at)] = true
	}
	out.Result = map[string]any{"definitions": defs}
	if withRefs {
		refs := []string{}
		total := 0
		outside := 0
		covered := map[string]bool{} // root name NUL path of the files with references
		if err := out.Step("textDocument/references", func() (string, error) {
			for _, h := range hits {
				if len(hits) > 10 {
					break // a name defined this often: narrow it first
				}
				locs, err := c.references(ctx, h)
				if err != nil {
					return "failed", err
				}
				for _, l := range locs {
					at, ok := h.root.fromURI(l.URI)
					if !ok {
						outside++
						continue
					}
					total++
					covered[at.root.name+"\x00"+at.rel] = true
					if len(refs) >= c.cfg.MaxResults {
						continue
					}
					content, err := c.readText(at, c.cfg.MaxFileBytes)
					text := ""
					if err == nil {
						text = lineText(content, lineStarts(content), l.Range.Start.Line)
					}
					refs = append(refs, fmt.Sprintf("%s:%d: %s", c.show(at), l.Range.Start.Line+1, text))
					if len(mentioned) < 8 {
						mentioned[c.show(at)] = true
					}
				}
			}
			// gopls's references miss the files it does not load.
			for _, h := range hits {
				if h.lang != LangGo || len(hits) > 10 {
					continue
				}
				seen := map[string]bool{}
				for k := range covered {
					if name, rel, _ := strings.Cut(k, "\x00"); name == h.root.name {
						seen[rel] = true
					}
				}
				u := c.goUnloadedUses(h, seen)
				for _, use := range u.uses {
					total++
					if len(refs) < c.cfg.MaxResults {
						refs = append(refs, fmt.Sprintf("%s:%d: %s", c.show(use.at), use.pos.Line+1, use.line))
					}
				}
				if note := u.note(h.name, "listed"); note != "" {
					out.Result["note"] = note
				}
			}
			return fmt.Sprintf("%d references", total), nil
		}); err != nil {
			return nil, err
		}
		out.Result["references"] = refs
		if total > len(refs) {
			out.Result["truncated"] = true
		}
		out.Summary = fmt.Sprintf("%d definition(s) and %d reference(s) of %s.", len(hits), total, name)
	} else {
		out.Summary = fmt.Sprintf("%d definition(s) of %s.", len(hits), name)
	}
	out.ContinuationFacts = append(out.ContinuationFacts, protocol.NewFact("symbol", name))
	for _, p := range sortedKeys(mentioned) {
		out.ContinuationFacts = append(out.ContinuationFacts, protocol.NewFact("mentioned", p))
	}
	return out, nil
}

// references are the locations that refer to a definition, itself
// included.
func (c *Code) references(ctx context.Context, h symbolHit) ([]lsp.Location, error) {
	srv, pos, err := c.serverAt(ctx, h)
	if err != nil {
		return nil, err
	}
	var locs []lsp.Location
	err = c.call(ctx, h.root, h.lang, srv, "textDocument/references", map[string]any{
		"textDocument": map[string]any{"uri": h.at.uri()}, "position": pos,
		"context": map[string]any{"includeDeclaration": true},
	}, &locs)
	if se := (*serverError)(nil); errors.As(err, &se) {
		err = se.asFailure()
	}
	sort.SliceStable(locs, func(i, j int) bool {
		if locs[i].URI != locs[j].URI {
			return locs[i].URI < locs[j].URI
		}
		return locs[i].Range.Start.Line < locs[j].Range.Start.Line
	})
	return locs, err
}

// renameSymbol previews a rename across the project: the language
// server's edit, as one diff.
func (a *actions) renameSymbol(ctx context.Context, call *manglecp.Call) (*manglecp.Outcome, error) {
	c := a.c
	name, _ := call.Args["name"].(string)
	newName, _ := call.Args["new_name"].(string)
	pathArg, _ := call.Args["path"].(string)
	lang, _ := call.Args["language"].(string)
	line := 0
	if n, ok := argInt(call.Args, "line"); ok {
		line = int(n)
	}
	if newName == "" || newName == name {
		return nil, fail(CodeNothingToChange, "pass a new name different from the old", map[string]any{"name": bounded(name)}, "the new name is the old one")
	}
	out := &manglecp.Outcome{}
	targets, err := c.targets(pathArg, lang)
	if err != nil {
		return nil, err
	}
	var h symbolHit
	if err := out.Step("workspace/symbol", func() (string, error) {
		hits, err := c.findDefinitions(ctx, name, targets, line)
		if err != nil {
			return "failed", err
		}
		h, err = c.one(name, hits)
		if err != nil {
			return fmt.Sprintf("%d definitions", len(hits)), err
		}
		return c.describe(h), nil
	}); err != nil {
		return nil, err
	}
	srv, pos, err := c.serverAt(ctx, h)
	if err != nil {
		return nil, err
	}
	refused := func(reason string) error {
		return fail(CodeRenameRefused, "check the new name, or rename by hand with preview_edit", map[string]any{"name": bounded(name), "new_name": bounded(newName), "reason": bounded(reason)},
			"the %s language server refused to rename %s: %s", h.lang, quote(name), quote(reason))
	}
	var we lsp.WorkspaceEdit
	if err := out.Step("textDocument/rename", func() (string, error) {
		params := map[string]any{"textDocument": map[string]any{"uri": h.at.uri()}, "position": pos}
		if srv.HasCapability("renameProvider") && hasPrepareRename(srv) {
			var prep json.RawMessage
			err := c.call(ctx, h.root, h.lang, srv, "textDocument/prepareRename", params, &prep)
			if se := (*serverError)(nil); errors.As(err, &se) {
				return "refused", refused(se.re.Message)
			} else if err != nil {
				return "failed", err
			}
			if string(prep) == "null" || len(prep) == 0 {
				return "refused", refused("the symbol cannot be renamed here")
			}
		}
		params["newName"] = newName
		err := c.call(ctx, h.root, h.lang, srv, "textDocument/rename", params, &we)
		if se := (*serverError)(nil); errors.As(err, &se) {
			return "refused", refused(se.re.Message)
		}
		return "edit received", err
	}); err != nil {
		return nil, err
	}
	extra := map[string]any{}
	if h.lang == LangGo {
		// gopls's edit misses the files it does not load (build
		// constraints); their uses join the same preview.
		var u goUnloaded
		_ = out.Step("unloaded files", func() (string, error) {
			u = c.goUnloadedUses(h, editedFiles(h.root, &we))
			u.addToEdit(&we, h.name[strings.LastIndexByte(h.name, '.')+1:], newName)
			return fmt.Sprintf("%d uses in %d files", len(u.uses), len(u.files)), nil
		})
		if note := u.note(name, "renamed in this diff"); note != "" {
			extra["note"] = note
		}
	}
	p, err := c.planFromWorkspaceEdit(ctx, h.root, &we, "rename", fmt.Sprintf("Renamed %s to %s", name, newName))
	if err != nil {
		return nil, err
	}
	edits := 0
	for _, dc := range we.DocumentChanges {
		edits += len(dc.Edits)
	}
	for _, es := range we.Changes {
		edits += len(es)
	}
	p.summary = fmt.Sprintf("Renamed %s to %s (%d occurrences)", name, newName, edits)
	out.ContinuationFacts = append(out.ContinuationFacts, protocol.NewFact("symbol", newName))
	return c.preview(ctx, p, out, extra)
}

// hasPrepareRename reports whether a server answers
// textDocument/prepareRename (renameProvider {"prepareProvider": true});
// pylsp does not.
func hasPrepareRename(srv *lsp.Server) bool {
	var caps struct {
		Rename json.RawMessage `json:"renameProvider"`
	}
	_ = json.Unmarshal(srv.Capabilities(), &caps)
	var opts struct {
		Prepare bool `json:"prepareProvider"`
	}
	return json.Unmarshal(caps.Rename, &opts) == nil && opts.Prepare
}

// maxSymbolFiles bounds the files whose symbols a request asks a server
// without workspace/symbol for.
const maxSymbolFiles = 200

// documentSymbols finds the symbols named name in the files of t that
// hold the name as a word, by textDocument/documentSymbol (for a server
// without workspace/symbol). Names a file imports are left out (jedi,
// behind pylsp, lists them as the file's symbols), as are the locals of
// functions.
func (c *Code) documentSymbols(ctx context.Context, t target, srv *lsp.Server, name string) ([]lsp.SymbolInformation, error) {
	short := name[strings.LastIndexByte(name, '.')+1:]
	base := "."
	if t.at != nil {
		base = t.at.rel
	}
	var files []loc
	_, err := walkFiles(t.root, base, c.cfg.MaxFiles, func(rel string, _ fs.DirEntry) error {
		if langOf(rel) != t.lang || len(files) >= maxSymbolFiles {
			return nil
		}
		l := loc{root: t.root, rel: rel}
		if content, err := c.readText(l, c.cfg.MaxFileBytes); err == nil && indexWord(string(content), short) >= 0 {
			files = append(files, l)
		}
		return nil
	})
	if err != nil {
		return nil, c.fsError(c.show(loc{root: t.root, rel: base}), err)
	}
	var out []lsp.SymbolInformation
	for _, l := range files {
		var raw []docSymbol
		if err := c.call(ctx, t.root, t.lang, srv, "textDocument/documentSymbol", map[string]any{"textDocument": map[string]any{"uri": l.uri()}}, &raw); err != nil {
			return nil, err
		}
		content, _ := c.readText(l, c.cfg.MaxFileBytes)
		lines := lineStarts(content)
		var walk func(ds []docSymbol, container string, inFunc bool)
		walk = func(ds []docSymbol, container string, inFunc bool) {
			for _, d := range ds {
				r := d.Range
				if d.Location != nil {
					r = d.Location.Range
				}
				in := container
				if d.ContainerName != nil {
					in = *d.ContainerName
				}
				text := lineText(content, lines, r.Start.Line)
				isImport := strings.HasPrefix(text, "from ") || strings.HasPrefix(text, "import ")
				// In a flat answer a container is a class (methods,
				// fields) or a function (its locals).
				local := inFunc || (d.Location != nil && in != "" && d.Kind != lspKindMethod && d.Kind != lspKindField && d.Kind != lspKindProperty)
				if !isImport && !local {
					out = append(out, lsp.SymbolInformation{Name: d.Name, Kind: d.Kind, ContainerName: in,
						Location: lsp.Location{URI: l.uri(), Range: r}})
				}
				walk(d.Children, d.Name, d.Kind == lspKindFunction || d.Kind == lspKindMethod)
			}
		}
		walk(raw, "", false)
	}
	return out, nil
}

// docSymbol is one answer of textDocument/documentSymbol: a
// SymbolInformation (location, containerName) or a DocumentSymbol
// (range, children).
type docSymbol struct {
	Name          string        `json:"name"`
	Kind          int           `json:"kind"`
	ContainerName *string       `json:"containerName"`
	Location      *lsp.Location `json:"location"`
	Range         lsp.Range     `json:"range"`
	Children      []docSymbol   `json:"children"`
}

// LSP symbol kinds the domain tells apart.
const (
	lspKindMethod   = 6
	lspKindProperty = 7
	lspKindField    = 8
	lspKindFunction = 12
)

// editedFiles are the paths (relative to r) of the files a server's edit
// changes.
func editedFiles(r *croot, we *lsp.WorkspaceEdit) map[string]bool {
	out := map[string]bool{}
	for _, dc := range we.DocumentChanges {
		if dc.TextDocument != nil {
			if l, ok := r.fromURI(dc.TextDocument.URI); ok {
				out[l.rel] = true
			}
		}
	}
	for u := range we.Changes {
		if l, ok := r.fromURI(u); ok {
			out[l.rel] = true
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func argInt(args map[string]any, name string) (int64, bool) {
	switch v := args[name].(type) {
	case json.Number:
		i, err := v.Int64()
		if err != nil {
			f, ferr := v.Float64()
			if ferr != nil {
				return 0, false
			}
			i = int64(f)
		}
		return i, true
	case float64:
		return int64(v), true
	case int:
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}
