package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// root is the module root, relative to this package's directory.
const root = "../.."

// markdownFiles lists README.md and every docs/*.md, relative to root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	return files
}

type parsed struct {
	src []byte
	doc ast.Node
}

func parse(t *testing.T, name string) parsed {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	return parsed{src: src, doc: md.Parser().Parse(text.NewReader(src))}
}

// TestMarkdownRenders fails when a code fence is misplaced: a fence that
// does not start its own line renders as literal backticks inside a
// paragraph and turns the following prose into a code block.
func TestMarkdownRenders(t *testing.T) {
	for _, name := range markdownFiles(t) {
		t.Run(name, func(t *testing.T) {
			p := parse(t, name)
			fences := 0
			for _, line := range strings.Split(string(p.src), "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "```") {
					fences++
				}
			}
			if fences%2 != 0 {
				t.Errorf("%s: %d lines open or close a code fence: one is unmatched", name, fences)
			}
			ast.Walk(p.doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
				if !entering {
					return ast.WalkContinue, nil
				}
				if tx, ok := n.(*ast.Text); ok {
					if s := string(tx.Segment.Value(p.src)); strings.Contains(s, "```") {
						t.Errorf("%s: a code fence renders as text in a paragraph: %q", name, s)
					}
				}
				return ast.WalkContinue, nil
			})
		})
	}
}

// TestRelativeLinks checks that every relative link of the Markdown files
// names a file of the repository and every #anchor a heading.
func TestRelativeLinks(t *testing.T) {
	for _, name := range markdownFiles(t) {
		t.Run(name, func(t *testing.T) {
			p := parse(t, name)
			anchors := headingAnchors(p)
			ast.Walk(p.doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
				if !entering {
					return ast.WalkContinue, nil
				}
				var dest string
				switch l := n.(type) {
				case *ast.Link:
					dest = string(l.Destination)
				case *ast.Image:
					dest = string(l.Destination)
				default:
					return ast.WalkContinue, nil
				}
				if dest == "" || strings.Contains(dest, "://") || strings.HasPrefix(dest, "mailto:") {
					return ast.WalkContinue, nil
				}
				file, frag, _ := strings.Cut(dest, "#")
				target := name
				if file != "" {
					target = filepath.Join(filepath.Dir(name), file)
					if _, err := os.Stat(filepath.Join(root, target)); err != nil {
						t.Errorf("%s: link %q: %s does not exist", name, dest, target)
						return ast.WalkContinue, nil
					}
				}
				if frag != "" && strings.HasSuffix(target, ".md") {
					want := anchors
					if target != name {
						want = headingAnchors(parse(t, target))
					}
					if !want[frag] {
						t.Errorf("%s: link %q: %s has no heading with anchor #%s", name, dest, target, frag)
					}
				}
				return ast.WalkContinue, nil
			})
		})
	}
}

var nonAnchor = regexp.MustCompile(`[^\p{L}\p{N}_ -]`)

// headingAnchors returns the anchors GitHub gives the file's headings:
// lower case, punctuation dropped, spaces as hyphens.
func headingAnchors(p parsed) map[string]bool {
	out := map[string]bool{}
	ast.Walk(p.doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		var b strings.Builder
		for i := 0; i < h.Lines().Len(); i++ {
			seg := h.Lines().At(i)
			b.Write(seg.Value(p.src))
		}
		s := strings.ToLower(strings.TrimSpace(b.String()))
		s = nonAnchor.ReplaceAllString(s, "")
		s = strings.ReplaceAll(s, " ", "-")
		for i := 0; ; i++ {
			a := s
			if i > 0 {
				a = s + "-" + string(rune('0'+i))
			}
			if !out[a] {
				out[a] = true
				break
			}
		}
		return ast.WalkSkipChildren, nil
	})
	return out
}
