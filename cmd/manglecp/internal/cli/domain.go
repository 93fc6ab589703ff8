package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/workspace"
)

// domainFlags are the serve flags that choose the domain (a stable
// contract): --domain browser (the default), or --domain workspace or
// --domain code with one or more --root DIR.
type domainFlags struct {
	name  string
	roots rootList
	// browser holds serve's flags for the browser domain's Chromium
	// (browserflags.go).
	browser browserFlags
	// editKey signs the workspace's edit ids (configure: workspaceEditKey).
	editKey []byte
	// gateway says upstreams replace the domain (--upstream): configure
	// builds none, so no browser is set up, logged or left open.
	gateway bool
}

// rootList collects repeated --root flags.
type rootList []string

func (r *rootList) String() string { return strings.Join(*r, ",") }

func (r *rootList) Set(dir string) error {
	if dir == "" {
		return fmt.Errorf("empty directory")
	}
	*r = append(*r, dir)
	return nil
}

// addDomainFlags registers --domain and --root on fs.
func addDomainFlags(fs *flag.FlagSet) *domainFlags {
	d := &domainFlags{}
	fs.StringVar(&d.name, "domain", "browser", "the domain to serve: browser (browser diagnostics), workspace (files under --root) or code (source code under --root on language servers)")
	fs.Var(&d.roots, "root", "a directory the workspace or code domain may access; repeat for several (needs --domain workspace or code)")
	return d
}

// check reports flag combinations that are usage errors.
func (d *domainFlags) check() error {
	switch d.name {
	case "browser":
		if len(d.roots) > 0 {
			return fmt.Errorf("--root needs --domain workspace or --domain code")
		}
	case "workspace", "code":
		if len(d.roots) == 0 {
			return fmt.Errorf("--domain %s needs at least one --root DIR", d.name)
		}
	default:
		return fmt.Errorf("unknown --domain %q (browser, workspace or code)", d.name)
	}
	return nil
}

// domain builds the chosen domain. The workspace roots stay open for the
// life of the process, as the server does.
func (d *domainFlags) domain(dcfg browser.Config) (manglecp.Domain, error) {
	if d == nil || d.name == "" || d.name == "browser" {
		return browser.Domain(dcfg), nil
	}
	if err := d.check(); err != nil {
		return manglecp.Domain{}, err
	}
	if d.name == "code" {
		// The language servers start when a tool first needs them; the
		// domain's Close stops them.
		return code.Domain(code.Config{Roots: d.roots})
	}
	ws, err := workspace.Open(workspace.Config{Roots: d.roots, EditKey: d.editKey})
	if err != nil {
		return manglecp.Domain{}, err
	}
	return ws.Domain(), nil
}
