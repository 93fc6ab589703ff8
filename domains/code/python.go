package code

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Moving Python modules and packages. pyright and pylsp do not move
// modules, so the domain rewrites the imports itself: a scanner reads
// each .py file's tokens, skipping strings (all prefixes and quote forms)
// and comments, so text that only looks like an import (in a docstring, a
// comment) never changes.

// pyToken is a token of Python source: a name, an operator character, or
// the end of a logical line ("\n").
type pyToken struct {
	text       string
	start, end int
}

// pyTokens scans src into names, single-character operators and logical
// line ends, skipping strings, comments and line continuations.
func pyTokens(src []byte) []pyToken {
	var out []pyToken
	depth := 0
	s := string(src)
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case ch == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i += 2
		case ch == '\n':
			if depth == 0 {
				out = append(out, pyToken{"\n", i, i + 1})
			}
			i++
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f':
			i++
		case ch == '"' || ch == '\'':
			i = skipString(s, i)
		case isNameStart(s, i):
			j := i
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				j += size
			}
			// A string prefix (r, b, f, u, rb, ...) directly before a quote.
			if j < len(s) && (s[j] == '"' || s[j] == '\'') && j-i <= 2 && strings.Trim(strings.ToLower(s[i:j]), "rbfu") == "" {
				i = skipString(s, j)
				continue
			}
			out = append(out, pyToken{s[i:j], i, j})
			i = j
		default:
			switch ch {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				if depth > 0 {
					depth--
				}
			}
			out = append(out, pyToken{string(ch), i, i + 1})
			i++
		}
	}
	return append(out, pyToken{"\n", len(s), len(s)})
}

func isNameStart(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r == '_' || unicode.IsLetter(r)
}

// skipString returns the index after the string literal starting at i
// (a quote).
func skipString(s string, i int) int {
	q := s[i]
	if strings.HasPrefix(s[i:], strings.Repeat(string(q), 3)) {
		end := strings.Index(s[i+3:], strings.Repeat(string(q), 3))
		for end >= 0 && escaped(s, i+3+end) {
			next := strings.Index(s[i+3+end+1:], strings.Repeat(string(q), 3))
			if next < 0 {
				end = -1
				break
			}
			end += next + 1
		}
		if end < 0 {
			return len(s)
		}
		return i + 3 + end + 3
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j + 1
		case '\n':
			return j
		}
	}
	return len(s)
}

// escaped reports whether the character at i is preceded by an odd number
// of backslashes.
func escaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// pyImport is one imported module or name of an import statement.
type pyImport struct {
	from       bool   // a from-import
	level      int    // leading dots of a from-import
	module     string // dotted module ("" for "from . import x")
	modStart   int    // span of the dots and module in the source
	modEnd     int
	name       string // the imported name of a from-import
	nameStart  int
	nameEnd    int // the end of the name and its "as" alias
	alias      string
	stmtStart  int // the statement's first byte ("from" or "import")
	stmtEnd    int // the end of its last token
	names      int // names in the from-import's list
	lineIndent string
}

// pyImports finds the import statements of src.
func pyImports(src []byte) []pyImport {
	toks := pyTokens(src)
	var out []pyImport
	atStart := true
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.text == "\n" || t.text == ";" {
			atStart = true
			continue
		}
		if !atStart {
			continue
		}
		atStart = false
		switch t.text {
		case "import":
			j := i + 1
			for {
				mod, s, e, k := dotted(toks, j)
				if mod == "" {
					break
				}
				imp := pyImport{module: mod, modStart: s, modEnd: e, stmtStart: t.start}
				if toks[k].text == "as" && k+1 < len(toks) {
					imp.alias = toks[k+1].text
					k += 2
				}
				out = append(out, imp)
				j = k
				if toks[j].text != "," {
					break
				}
				j++
			}
			i = j - 1
		case "from":
			j := i + 1
			level := 0
			modStart := -1
			for toks[j].text == "." {
				if modStart < 0 {
					modStart = toks[j].start
				}
				level++
				j++
			}
			mod, s, e, k := "", 0, 0, j
			if toks[j].text != "import" {
				mod, s, e, k = dotted(toks, j)
			}
			if mod != "" {
				if modStart < 0 {
					modStart = s
				}
				j = k
			} else {
				e = toks[j-1].end
			}
			if toks[j].text != "import" || modStart < 0 {
				i = j - 1
				continue
			}
			j++
			paren := toks[j].text == "("
			if paren {
				j++
			}
			first := len(out)
			for j < len(toks) && toks[j].text != "\n" && toks[j].text != ";" && toks[j].text != ")" {
				if toks[j].text == "," {
					j++
					continue
				}
				name := toks[j]
				imp := pyImport{from: true, level: level, module: mod, modStart: modStart, modEnd: e,
					name: name.text, nameStart: name.start, nameEnd: name.end, stmtStart: t.start}
				j++
				if j+1 < len(toks) && toks[j].text == "as" {
					imp.alias = toks[j+1].text
					imp.nameEnd = toks[j+1].end
					j += 2
				}
				out = append(out, imp)
			}
			end := toks[j-1].end
			if j < len(toks) && toks[j].text == ")" {
				end = toks[j].end
			}
			for k := first; k < len(out); k++ {
				out[k].names = len(out) - first
				out[k].stmtEnd = end
			}
			i = j - 1
		}
	}
	for k := range out {
		ls := strings.LastIndexByte(string(src[:out[k].stmtStart]), '\n') + 1
		out[k].lineIndent = string(src[ls:out[k].stmtStart])
		if strings.TrimSpace(out[k].lineIndent) != "" {
			out[k].lineIndent = ""
		}
	}
	return out
}

// dotted reads NAME(.NAME)* at toks[i]: the name, its span, and the index
// after it.
func dotted(toks []pyToken, i int) (string, int, int, int) {
	if i >= len(toks) || !isName(toks[i].text) {
		return "", 0, 0, i
	}
	parts := []string{toks[i].text}
	start, end := toks[i].start, toks[i].end
	j := i + 1
	for j+1 < len(toks) && toks[j].text == "." && isName(toks[j+1].text) && toks[j].start == end && toks[j+1].start == toks[j].end {
		parts = append(parts, toks[j+1].text)
		end = toks[j+1].end
		j += 2
	}
	return strings.Join(parts, "."), start, end, j
}

func isName(s string) bool {
	return s != "" && s != "\n" && isNameStart(s, 0)
}

func isIdentifier(s string) bool {
	if !isName(s) {
		return false
	}
	for _, r := range s {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// pyModule is the dotted module name of a .py file or package directory
// relative to the import root ("." or "src" when the root has one and the
// file lies in it), and whether every part is an identifier.
func pyModule(rel string) (string, bool) {
	rel = strings.TrimSuffix(strings.TrimSuffix(rel, ".py"), ".pyi")
	rel = strings.TrimSuffix(rel, "/__init__")
	if after, ok := strings.CutPrefix(rel, "src/"); ok {
		rel = after
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if !isIdentifier(p) {
			return "", false
		}
	}
	return strings.Join(parts, "."), true
}

// pyPackage is the package a module's relative imports start from.
func pyPackage(rel, module string) string {
	if path.Base(rel) == "__init__.py" {
		return module
	}
	if i := strings.LastIndexByte(module, '.'); i >= 0 {
		return module[:i]
	}
	return ""
}

// resolveFrom is the absolute module of a from-import in package pkg.
func resolveFrom(imp pyImport, pkg string) (string, bool) {
	if imp.level == 0 {
		return imp.module, true
	}
	base := pkg
	for k := 1; k < imp.level; k++ {
		i := strings.LastIndexByte(base, '.')
		if i < 0 {
			if base == "" {
				return "", false
			}
			base = ""
			continue
		}
		base = base[:i]
	}
	switch {
	case imp.module == "":
		return base, base != ""
	case base == "":
		return imp.module, true
	}
	return base + "." + imp.module, true
}

// renamed maps a module inside old to its name inside new.
func renamed(mod, old, new string) (string, bool) {
	if mod == old {
		return new, true
	}
	if strings.HasPrefix(mod, old+".") {
		return new + strings.TrimPrefix(mod, old), true
	}
	return "", false
}

func parentOf(mod string) string {
	if i := strings.LastIndexByte(mod, '.'); i >= 0 {
		return mod[:i]
	}
	return ""
}

func lastOf(mod string) string {
	return mod[strings.LastIndexByte(mod, '.')+1:]
}

// rewritePyImports rewrites one file's imports of module old (and of the
// modules inside it) to new. rel is the file's path before the move and
// newRel its path after it when the file moves too (then its relative
// imports that would point elsewhere from there are made absolute). It returns the new
// content and the number of imports rewritten.
func rewritePyImports(src []byte, rel, newRel string, old, new string) ([]byte, int) {
	mod, ok := pyModule(rel)
	if !ok {
		return src, 0
	}
	pkg := pyPackage(rel, mod)
	newPkg := pkg
	if newRel != "" {
		if nmod, ok := pyModule(newRel); ok {
			newPkg = pyPackage(newRel, nmod)
		}
	}
	var spans []span
	n := 0
	qualified := map[string]bool{} // dotted prefixes used qualified: import a.b without as
	for _, imp := range pyImports(src) {
		if !imp.from {
			if nm, ok := renamed(imp.module, old, new); ok {
				spans = append(spans, span{imp.modStart, imp.modEnd, nm})
				n++
				if imp.alias == "" {
					qualified[imp.module] = true
				}
			}
			continue
		}
		abs, ok := resolveFrom(imp, pkg)
		if !ok {
			continue
		}
		target, inside := renamed(abs, old, new)
		if !inside {
			target = abs
		}
		if imp.level > 0 {
			// A relative import still right from where the file will be
			// stays; any other is made absolute.
			if now, ok := resolveFrom(imp, newPkg); ok && now == target {
				if !inside {
					goto parentImport
				}
				continue
			}
			spans = append(spans, span{imp.modStart, imp.modEnd, target})
			n++
			continue
		}
		if inside {
			spans = append(spans, span{imp.modStart, imp.modEnd, target})
			n++
			continue
		}
	parentImport:
		// from parent import module (with or without as).
		full := abs + "." + imp.name
		if abs == "" {
			full = imp.name
		}
		if full != old {
			continue
		}
		alias := imp.alias
		if alias == "" && lastOf(new) != imp.name {
			alias = imp.name
		}
		clause := lastOf(new)
		if alias != "" && alias != clause {
			clause += " as " + alias
		}
		np := parentOf(new)
		var stmt string
		if np == "" {
			stmt = "import " + clause
		} else {
			stmt = "from " + np + " import " + clause
		}
		if imp.names == 1 {
			spans = append(spans, span{imp.stmtStart, imp.stmtEnd, stmt})
		} else {
			// Take the name out of the list; the module gets its own line.
			end := imp.nameEnd
			rest := string(src[end:])
			trim := len(rest) - len(strings.TrimLeft(rest, " \t"))
			if strings.HasPrefix(rest[trim:], ",") {
				end += trim + 1
				rest2 := string(src[end:])
				end += len(rest2) - len(strings.TrimLeft(rest2, " \t"))
			}
			spans = append(spans, span{imp.nameStart, end, ""})
			spans = append(spans, span{imp.stmtEnd, imp.stmtEnd, "\n" + imp.lineIndent + stmt})
		}
		n++
	}
	if len(qualified) > 0 {
		toks := pyTokens(src)
		for i := 0; i < len(toks); i++ {
			if i > 0 && toks[i-1].text == "." && toks[i-1].end == toks[i].start {
				continue
			}
			d, s, _, _ := dotted(toks, i)
			for q := range qualified {
				if d == q || strings.HasPrefix(d, q+".") {
					nm, _ := renamed(q, old, new)
					spans = append(spans, span{s, s + len(q), nm})
				}
			}
		}
	}
	if n == 0 {
		return src, 0
	}
	return applySpans(src, dedupe(spans)), n
}

// dedupe drops spans equal to an earlier one (an import's module is also
// found as a qualified use).
func dedupe(spans []span) []span {
	seen := map[[2]int]bool{}
	out := spans[:0]
	for _, s := range spans {
		k := [2]int{s.start, s.end}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return out
}

// pyMovePlan moves a Python module or package with every import of it in
// the root updated.
func (c *Code) pyMovePlan(from, to loc, isDir bool) (*plan, string, error) {
	if !isDir && path.Ext(to.rel) != path.Ext(from.rel) {
		return nil, "", fail(CodeNotMovable, "keep the .py extension", map[string]any{"path": c.show(to), "reason": "extension"}, "the destination of a module keeps its extension")
	}
	old, ok1 := pyModule(from.rel)
	new, ok2 := pyModule(to.rel)
	if !ok1 || !ok2 {
		return nil, "", fail(CodeNotMovable, "name modules and packages with Python identifiers", map[string]any{"path": c.show(to), "reason": "not an identifier"},
			"%s or %s is not a Python module name", quote(c.show(from)), quote(c.show(to)))
	}
	moved, dirs, err := c.movedFiles(from, to, isDir)
	if err != nil {
		return nil, "", err
	}
	p := &plan{kind: "move", summary: fmt.Sprintf("Moved %s to %s", old, new), dirs: dirs}
	importers, _, err := c.rewriteImporters(p, from.root, ".", moved,
		func(rel string) bool { return langOf(rel) == LangPython },
		func(rel string, fc *fileChange, content []byte) ([]byte, int) {
			newRel := ""
			if fc != nil {
				newRel = fc.to.rel
			}
			return rewritePyImports(content, rel, newRel, old, new)
		})
	if err != nil {
		return nil, "", err
	}
	how := fmt.Sprintf("moved %d file(s); rewrote the imports of %s in %d other file(s), found by scanning their code (strings and comments skipped)", len(moved), old, importers)
	return p, how, nil
}
