// Package author holds the commands for domain authors: new (a domain
// from the scaffold), adopt (a rule pack for an MCP server) and check
// (rules loaded and checked as serve would, with file and line).
package author

import (
	"bytes"
	"cmp"
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

	"golang.org/x/mod/modfile"
	gomodule "golang.org/x/mod/module"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/internal/buildinfo"
)

//go:embed scaffold/*.tmpl
var scaffold embed.FS

// scaffoldFiles maps each template to the file it becomes; NAME is the
// domain's name.
var scaffoldFiles = []struct{ tmpl, file string }{
	{"", "go.mod"}, // goMod
	{"main.go.tmpl", "main.go"},
	{"main_test.go.tmpl", "main_test.go"},
	{"domain.mg.tmpl", "domain/NAME.mg"},
	{"policy.mg.tmpl", "policy/NAME.mg"},
	{"triage.json.tmpl", "triage.json"},
	{"README.md.tmpl", "README.md"},
}

var domainName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// goVersion is the go directive of a scaffold's go.mod: this module's.
const goVersion = "1.26.8"

// New is `manglecp new domain NAME`: it writes a new domain from the
// scaffold.
func New(_ context.Context, _ cmdline.Env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	h := cmdline.Help{Name: "new", Synopsis: "manglecp new domain NAME [--dir DIR] [--module PATH] [--replace DIR]",
		Description: "Writes a complete small MangleCP domain into a new directory (default ./NAME): rules\n(domain/NAME.mg, policy/NAME.mg), two typed Go actions, one of which needs the user's\nconfirmation (main.go), a sample request (triage.json), a test (main_test.go), go.mod\nand a README. Then: cd NAME && go mod tidy && go test ./... && go run .\n(go run . mcp serves it to an MCP host over stdio). docs/write-a-domain.md starts from it.\n\nThe go.mod requires the release of github.com/manglecp/manglecp this manglecp was\ninstalled from (go install ...@vX.Y.Z). A manglecp built from a checkout points the\nmodule at that checkout instead, with a replace directive the README explains.",
		Args:        "domain  what to create (the only kind)\nNAME    the domain's id: lower case letters, digits and _, starting with a letter"}
	fl := cmdline.NewFlagSet("new")
	dir := fl.String("dir", "", "the directory to create (default ./NAME); it must not exist or be empty")
	module := fl.String("module", "", "the Go module path of go.mod (default NAME)")
	replace := fl.String("replace", "", "build against the github.com/manglecp/manglecp checkout in `DIR` (a replace directive) instead of a release")
	pos, code, ok := cmdline.ParseArgs(h, fl, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 2 || pos[0] != "domain" {
		return cmdline.UsageError(stderr, h, "want 'new domain NAME', got %s", cmdline.QuoteList(pos, 3))
	}
	name := pos[1]
	if !domainName.MatchString(name) {
		return cmdline.UsageError(stderr, h, "the name %s must be lower case letters, digits and _, starting with a letter", cmdline.Quote(name))
	}
	if *dir == "" {
		*dir = name
	}
	if *module == "" {
		*module = name
	}
	if err := gomodule.CheckImportPath(*module); err != nil {
		return cmdline.UsageError(stderr, h, "--module %s is not a Go module path: %v", cmdline.Quote(*module), err)
	}
	src, err := scaffoldSource(*replace)
	if err != nil {
		return cmdline.UsageError(stderr, h, "%v", err)
	}
	files, err := renderScaffold(name, *module, src)
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
	if src.Replace != "" {
		fmt.Fprintf(stdout, "its go.mod builds against the github.com/manglecp/manglecp source in %s (a replace directive: see its README)\n", src.Replace)
	} else {
		fmt.Fprintf(stdout, "its go.mod requires github.com/manglecp/manglecp %s\n", src.Version)
	}
	fmt.Fprintf(stdout, "next: cd %s && go mod tidy && go test ./... && go run .\n", shellQuote(*dir))
	return cmdline.ExitOK
}

// moduleSource is where a scaffold's go.mod takes github.com/manglecp/manglecp
// from: a release, or a checkout through a replace directive.
type moduleSource struct {
	Version string // the required version
	Replace string // the checkout's absolute directory, or ""
}

// scaffoldSource chooses it: the checkout given (--replace), else the
// release this binary was built from, else the checkout it was built
// from. A binary that knows neither (built with -trimpath from a
// checkout) needs --replace.
func scaffoldSource(replace string) (moduleSource, error) {
	release := buildinfo.Release()
	if replace != "" {
		abs, err := filepath.Abs(replace)
		if err != nil {
			return moduleSource{}, err
		}
		if !buildinfo.IsModuleDir(abs) {
			return moduleSource{}, fmt.Errorf("--replace %s: no go.mod of %s there", cmdline.Quote(replace), buildinfo.Module)
		}
		return moduleSource{Version: cmp.Or(release, placeholderVersion), Replace: abs}, nil
	}
	if release != "" {
		return moduleSource{Version: release}, nil
	}
	if dir := buildinfo.SourceDir(); dir != "" {
		return moduleSource{Version: placeholderVersion, Replace: dir}, nil
	}
	return moduleSource{}, fmt.Errorf("this manglecp is neither a release (go install %s/cmd/manglecp@VERSION) nor a build that knows its source (it was built with -trimpath): pass --replace DIR, a checkout of %s", buildinfo.Module, buildinfo.Module)
}

// placeholderVersion is the version a go.mod requires of a module that a
// replace directive provides (what go mod tidy writes for one).
const placeholderVersion = "v0.0.0-00010101000000-000000000000"

// goMod returns the scaffold's go.mod, formatted by x/mod's modfile so
// that no path can add a directive of its own.
func goMod(module string, src moduleSource) ([]byte, error) {
	f := &modfile.File{}
	if err := f.AddModuleStmt(module); err != nil {
		return nil, err
	}
	if err := f.AddGoStmt(goVersion); err != nil {
		return nil, err
	}
	if err := f.AddRequire(buildinfo.Module, src.Version); err != nil {
		return nil, err
	}
	if src.Replace != "" {
		if err := f.AddReplace(buildinfo.Module, "", src.Replace, ""); err != nil {
			return nil, err
		}
	}
	f.Cleanup()
	return f.Format()
}

func fileName(pattern, name string) string { return strings.ReplaceAll(pattern, "NAME", name) }

// renderScaffold renders every template for a domain, by file name.
func renderScaffold(name, module string, src moduleSource) (map[string][]byte, error) {
	data := struct {
		Name, Module string
		moduleSource
	}{name, module, src}
	out := map[string][]byte{}
	for _, f := range scaffoldFiles {
		if f.tmpl == "" {
			raw, err := goMod(module, src)
			if err != nil {
				return nil, err
			}
			out[f.file] = raw
			if src.Replace != "" {
				// The checkout's go.sum has the checksums of every module
				// it needs: go mod tidy then verifies them without the
				// checksum database (and prunes the rest).
				if sums, err := os.ReadFile(filepath.Join(src.Replace, "go.sum")); err == nil {
					out["go.sum"] = sums
				}
			}
			continue
		}
		raw, err := fs.ReadFile(scaffold, "scaffold/"+f.tmpl)
		if err != nil {
			return nil, err
		}
		t, err := template.New(f.tmpl).Option("missingkey=error").Parse(string(raw))
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
