package load

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"codeberg.org/TauCeti/mangle-go/parse"
)

// Layer is one trust layer of rule files. Layers are given from the highest
// trust to the lowest.
type Layer struct {
	// Name is the layer's name: "schema", "policy", "domain" or "pipeline".
	Name string
	// FS holds the layer's .mg files; every *.mg file under its root is
	// loaded, in lexical path order.
	FS fs.FS
	// Prefix is prepended to file names in errors (e.g. the --rules
	// directory), so messages name files as the operator knows them.
	Prefix string
}

// LoadError is a start-up problem in the rules, with its location.
type LoadError struct {
	File    string // file name as known to the operator
	Line    int    // 1-based, 0 when unknown
	Column  int    // 0-based, 0 when unknown
	Message string
}

// Error formats the error as file:line:column: message.
func (e *LoadError) Error() string {
	switch {
	case e.File == "":
		return e.Message
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	case e.Column == 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
}

// LoadErrors is every problem found while loading.
type LoadErrors []*LoadError

// Error joins the problems, one per line.
func (es LoadErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// File is one parsed .mg file.
type File struct {
	Layer   string
	Name    string
	Unit    parse.SourceUnit
	clauses []int // line of each clause, parallel to unit.Clauses
	decls   []int // line of each decl, parallel to unit.Decls
}

func (f *File) ClauseLine(i int) int {
	if i < len(f.clauses) {
		return f.clauses[i]
	}
	return 0
}

// Read parses every file of every layer. Parse errors of all files
// are collected.
func Read(layers []Layer) ([]*File, error) {
	var files []*File
	var errs LoadErrors
	for _, l := range layers {
		var names []string
		err := fs.WalkDir(l.FS, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".mg") {
				names = append(names, p)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) && l.Name != "domain" {
			continue // an absent policy layer is an empty one
		}
		if err != nil {
			errs = append(errs, &LoadError{File: l.Prefix, Message: fmt.Sprintf("cannot read the %s layer: %v", l.Name, err)})
			continue
		}
		if l.Name == "domain" && len(names) == 0 {
			errs = append(errs, &LoadError{File: l.Prefix, Message: "the domain layer has no .mg files"})
			continue
		}
		sort.Strings(names)
		for _, n := range names {
			display := path.Join(l.Prefix, n)
			src, err := fs.ReadFile(l.FS, n)
			if err != nil {
				errs = append(errs, &LoadError{File: display, Message: err.Error()})
				continue
			}
			unit, err := parse.Unit(bytes.NewReader(src))
			if err != nil {
				errs = append(errs, parseErrors(display, string(src), err)...)
				continue
			}
			f := &File{Layer: l.Name, Name: display, Unit: unit}
			f.decls, f.clauses = statementLines(string(src))
			if len(f.clauses) != len(unit.Clauses) {
				f.clauses = nil // the split disagrees with the parser: report no lines rather than wrong ones
			}
			files = append(files, f)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return files, nil
}

// statementLines finds the first line of each top-level statement of a .mg
// source, split into Decl statements and clauses. A statement ends at a '.'
// followed by white space, a comment or the end of input, outside strings.
func statementLines(src string) (decls, clauses []int) {
	line := 1
	start := 0 // line where the current statement started; 0 = none yet
	var text strings.Builder
	inString, escaped := byte(0), false
	for i := 0; i < len(src); i++ {
		ch := src[i]
		if ch == '\n' {
			line++
		}
		if inString != 0 {
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == inString:
				inString = 0
			}
			continue
		}
		switch {
		case ch == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			if i < len(src) {
				line++
			}
			continue
		case ch == '"' || ch == '\'' || ch == '`':
			inString = ch
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n':
			continue
		}
		if start == 0 {
			start = line
			text.Reset()
		}
		if text.Len() < 8 {
			text.WriteByte(ch)
		}
		if ch == '.' && (i+1 == len(src) || strings.IndexByte(" \t\r\n#", src[i+1]) >= 0) {
			t := text.String()
			switch {
			case strings.HasPrefix(t, "Decl"):
				decls = append(decls, start)
			case strings.HasPrefix(t, "Package"), strings.HasPrefix(t, "Use"):
			default:
				clauses = append(clauses, start)
			}
			start = 0
		}
	}
	return decls, clauses
}

// LocateInError finds the clause an engine error message talks about, by
// looking for its printed form or its head predicate.
func LocateInError(files []*File, msg string) *LoadError {
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			if strings.Contains(msg, c.String()) || strings.Contains(msg, c.ReplaceWildcards().String()) {
				return &LoadError{File: f.Name, Line: f.ClauseLine(i), Message: msg}
			}
		}
	}
	// Otherwise blame the clause whose head the message mentions first.
	best, bestPos := (*LoadError)(nil), len(msg)+1
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			if pos := strings.Index(msg, c.Head.Predicate.Symbol+"("); pos >= 0 && pos < bestPos {
				best, bestPos = &LoadError{File: f.Name, Line: f.ClauseLine(i), Message: msg}, pos
			}
		}
	}
	if best != nil {
		return best
	}
	return &LoadError{Message: msg}
}

// AsLoadErrors normalizes an error to LoadErrors.
func AsLoadErrors(err error) LoadErrors {
	var les LoadErrors
	if errors.As(err, &les) {
		return les
	}
	var le *LoadError
	if errors.As(err, &le) {
		return LoadErrors{le}
	}
	return LoadErrors{{Message: err.Error()}}
}
