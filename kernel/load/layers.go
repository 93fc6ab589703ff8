package load

import (
	"fmt"
	"io/fs"

	"codeberg.org/TauCeti/mangle-go/ast"
	"github.com/manglecp/manglecp/kernel/rules"
)

// ProtocolLayers returns the kernel's own layers: schema (highest trust)
// and pipeline (lowest). [Load] places domain layers between them.
func ProtocolLayers() (schema, pipeline Layer) {
	s, _ := fs.Sub(rules.FS, "schema")
	p, _ := fs.Sub(rules.FS, "pipeline")
	return Layer{Name: "schema", FS: s, Prefix: "kernel/schema"}, Layer{Name: "pipeline", FS: p, Prefix: "kernel/pipeline"}
}

// CollectFacts returns the body-less clauses of every file by predicate.
func CollectFacts(files []*File) map[string][]Located {
	out := map[string][]Located{}
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			if len(c.Premises) == 0 && c.Transform == nil {
				out[c.Head.Predicate.Symbol] = append(out[c.Head.Predicate.Symbol], Located{c.Head, f.Name, f.ClauseLine(i)})
			}
		}
	}
	return out
}

type Located struct {
	atom ast.Atom
	File string
	Line int
}

func (l Located) Str(i int) (string, error) {
	if i >= len(l.atom.Args) {
		return "", l.Errorf("needs at least %d arguments", i+1)
	}
	c, ok := l.atom.Args[i].(ast.Constant)
	if !ok || c.Type != ast.StringType {
		return "", l.Errorf("argument %d must be a string", i)
	}
	s, _ := c.StringValue()
	return s, nil
}

func (l Located) Num(i int) (int64, error) {
	c, ok := l.atom.Args[i].(ast.Constant)
	if !ok || c.Type != ast.NumberType {
		return 0, l.Errorf("argument %d must be an integer", i)
	}
	return c.NumberValue()
}

func (l Located) Errorf(format string, args ...any) error {
	return &LoadError{File: l.File, Line: l.Line, Message: l.atom.Predicate.Symbol + ": " + fmt.Sprintf(format, args...)}
}

// SourceClause is a clause of a rule file with its location.
type SourceClause struct {
	File   string
	Line   int
	Clause ast.Clause
}

// SourceClauses parses the layers and returns their clauses in file
// order, for tools that show rule structure (manglecp check --show-rules).
func SourceClauses(domain ...Layer) ([]SourceClause, error) {
	files, err := Read(domain)
	if err != nil {
		return nil, err
	}
	var out []SourceClause
	for _, f := range files {
		for i, c := range f.Unit.Clauses {
			out = append(out, SourceClause{File: f.Name, Line: f.ClauseLine(i), Clause: c})
		}
	}
	return out, nil
}
