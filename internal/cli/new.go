package cli

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/manglecp/manglecp"
)

//go:embed scaffold/*.tmpl
var scaffold embed.FS

// scaffoldFiles maps each template to the file it becomes; NAME is the
// domain's name.
var scaffoldFiles = []struct{ tmpl, file string }{
	{"go.mod.tmpl", "go.mod"},
	{"main.go.tmpl", "main.go"},
	{"main_test.go.tmpl", "main_test.go"},
	{"domain.mg.tmpl", "domain/NAME.mg"},
	{"policy.mg.tmpl", "policy/NAME.mg"},
	{"triage.json.tmpl", "triage.json"},
	{"README.md.tmpl", "README.md"},
}

var domainName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// newCmd writes a new domain from the scaffold: `manglecp new domain NAME`.
func newCmd(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	h := cmdHelp{name: "new", synopsis: "manglecp new domain NAME [--dir DIR] [--module PATH]",
		description: "Writes a complete small MangleCP domain into a new directory (default ./NAME): rules\n(domain/NAME.mg, policy/NAME.mg), two typed Go actions, one of which needs the user's\nconfirmation (main.go), a sample request (triage.json), a test (main_test.go), go.mod\nand a README. Then: cd NAME && go mod tidy && go test ./... && go run .\ndocs/write-a-domain.md starts from it.",
		args:        "domain  what to create (the only kind)\nNAME    the domain's id: lower case letters, digits and _, starting with a letter"}
	fl := newFlagSet("new")
	dir := fl.String("dir", "", "the directory to create (default ./NAME); it must not exist or be empty")
	module := fl.String("module", "", "the Go module path of go.mod (default NAME)")
	pos, code, ok := parseArgs(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 2 || pos[0] != "domain" {
		return usageError(stderr, h, "want 'new domain NAME', got %q", pos)
	}
	name := pos[1]
	if !domainName.MatchString(name) {
		return usageError(stderr, h, "the name %q must be lower case letters, digits and _, starting with a letter", name)
	}
	if *dir == "" {
		*dir = name
	}
	if *module == "" {
		*module = name
	}
	files, err := renderScaffold(name, *module)
	if err != nil {
		fmt.Fprintf(stderr, "manglecp new: %v\n", err)
		return 1
	}
	if err := writeNew(*dir, files); err != nil {
		fmt.Fprintf(stderr, "manglecp new: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote the %s domain into %s:\n", name, *dir)
	for _, f := range scaffoldFiles {
		fmt.Fprintf(stdout, "  %s\n", filepath.Join(*dir, filepath.FromSlash(fileName(f.file, name))))
	}
	fmt.Fprintf(stdout, "next: cd %s && go mod tidy && go test ./... && go run .\n", *dir)
	return exitOK
}

func fileName(pattern, name string) string { return strings.ReplaceAll(pattern, "NAME", name) }

// renderScaffold renders every template for a domain, by file name.
func renderScaffold(name, module string) (map[string][]byte, error) {
	data := struct{ Name, Module, Version string }{name, module, manglecp.Version}
	out := map[string][]byte{}
	for _, f := range scaffoldFiles {
		src, err := fs.ReadFile(scaffold, "scaffold/"+f.tmpl)
		if err != nil {
			return nil, err
		}
		t, err := template.New(f.tmpl).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return nil, err
		}
		out[fileName(f.file, name)] = buf.Bytes()
	}
	return out, nil
}

// writeNew creates dir (which must not exist, or be empty) and writes
// files into it through an os.Root, so no name escapes it.
func writeNew(dir string, files map[string][]byte) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty; choose another --dir", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for name, data := range files {
		if d := filepath.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := root.WriteFile(name, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
