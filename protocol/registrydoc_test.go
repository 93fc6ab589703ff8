package protocol

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/internal/testenv"
)

// update rewrites golden files and docs/errors.md instead of comparing:
//
//	go test ./protocol -update
var update = flag.Bool("update", false, "rewrite golden files and docs/errors.md")

// checkGolden compares got with the file at path, or rewrites the file when
// -update is set.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./protocol -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale (run go test ./protocol -update and review the diff)\n%s", path, testenv.FirstDiff(string(want), string(got)))
	}
}

// CheckErrorsDoc compares the registry rendered with the domains' codes
// with docs/errors.md (or rewrites it under -update). TestErrorsDoc, in
// errorsdoc_test.go, calls it with the codes of every domain in this
// module: package protocol cannot import the domains.
func CheckErrorsDoc(t *testing.T, domainCodes []DomainCode) {
	t.Helper()
	checkGolden(t, filepath.Join("..", "docs", "errors.md"), []byte(RegistryMarkdown(domainCodes...)))
}

func TestRegistryMarkdownDeterministic(t *testing.T) {
	if a, b := RegistryMarkdown(), RegistryMarkdown(); a != b {
		t.Fatalf("two renderings differ:\n%s", testenv.FirstDiff(a, b))
	}
}

func TestRegistryMarkdownContent(t *testing.T) {
	md := RegistryMarkdown()
	var mustContain []string
	for _, c := range Codes() {
		mustContain = append(mustContain,
			"| `"+string(c.Code)+"` | "+strconv.Itoa(c.HTTPStatus)+" ",
			"### "+categoryTitle(c.Category))
	}
	for _, w := range Warnings() {
		mustContain = append(mustContain, "| `"+string(w.Code)+"` | ")
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[ErrorDetails](), reflect.TypeFor[Violation]()} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			mustContain = append(mustContain, "`"+name+"`")
		}
	}
	mustContain = append(mustContain,
		"go test ./protocol -run TestErrorsDoc -update",
		"protocol/codes.go",
		`"id": "req-1"`,
		`"retry_after_ms": null`,
		"499 Client Closed Request",
		`\_manglecp\_ prefix`,
	)
	for _, s := range mustContain {
		if !strings.Contains(md, s) {
			t.Errorf("RegistryMarkdown() does not contain %q", s)
		}
	}
}

// TestViolationIssuesComplete parses validate.go and checks that the issue
// list of the document names every Issue constant, so a new issue cannot be
// added without documenting it.
func TestViolationIssuesComplete(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "validate.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Issue") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s is not a string literal", n.Name)
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				declared = append(declared, s)
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("found no Issue constants in validate.go")
	}
	documented := map[string]bool{}
	for _, is := range violationIssues() {
		if documented[string(is.code)] {
			t.Errorf("issue %q documented twice", is.code)
		}
		documented[string(is.code)] = true
		if is.meaning == "" {
			t.Errorf("issue %q has no description", is.code)
		}
	}
	for _, d := range declared {
		if !documented[d] {
			t.Errorf("issue %q of validate.go is not in violationIssues()", d)
		}
		delete(documented, d)
	}
	// What is left must be registry codes used as issues.
	var rest []string
	for c := range documented {
		if _, ok := Lookup(Code(c)); !ok {
			rest = append(rest, c)
		}
	}
	sort.Strings(rest)
	if len(rest) > 0 {
		t.Errorf("violationIssues() lists codes that are neither Issue constants nor registry codes: %v", rest)
	}
}

func TestMDEscape(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "Unknown message type", "Unknown message type"},
		{"snake case kept", "Exceeds limits.max_facts_per_request", "Exceeds limits.max_facts_per_request"},
		{"edge underscores", "the reserved _manglecp_ prefix", `the reserved \_manglecp\_ prefix`},
		{"leading and trailing", "_x_", `\_x\_`},
		{"pipe and star", "a|b*c", `a\|b\*c`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mdEscape(tt.in); got != tt.want {
				t.Errorf("mdEscape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
