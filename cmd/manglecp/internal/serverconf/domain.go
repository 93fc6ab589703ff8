package serverconf

import (
	"flag"
	"fmt"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/code"
	"github.com/manglecp/manglecp/domains/workspace"
)

// DomainFlags are the serve flags that choose the domain (a stable
// contract): --domain browser (the default), or --domain workspace or
// --domain code with one or more --root DIR.
type DomainFlags struct {
	// Name is --domain; Roots the --root directories.
	Name  string
	Roots RootList
	// Browser holds serve's flags for the browser domain's Chromium
	// (browserflags.go).
	Browser BrowserFlags
	// Gateway says upstreams replace the domain (--upstream): Configure
	// builds none, so no browser is set up, logged or left open.
	Gateway bool
	// editKey signs the workspace's edit ids (Configure: workspaceEditKey).
	editKey []byte
}

// RootList collects repeated --root flags.
type RootList []string

// String is the directories, comma-separated.
func (r *RootList) String() string { return strings.Join(*r, ",") }

// Set adds a --root.
func (r *RootList) Set(dir string) error {
	if dir == "" {
		return fmt.Errorf("empty directory")
	}
	*r = append(*r, dir)
	return nil
}

// AddDomainFlags registers --domain and --root on fs.
func AddDomainFlags(fs *flag.FlagSet) *DomainFlags {
	d := &DomainFlags{}
	fs.StringVar(&d.Name, "domain", "browser", "the domain to serve: browser (browser diagnostics), workspace (files under --root) or code (source code under --root on language servers)")
	fs.Var(&d.Roots, "root", "a directory the workspace or code domain may access; repeat for several (needs --domain workspace or code)")
	return d
}

// Check reports flag combinations that are usage errors.
func (d *DomainFlags) Check() error {
	switch d.Name {
	case "browser":
		if len(d.Roots) > 0 {
			return fmt.Errorf("--root needs --domain workspace or --domain code")
		}
	case "workspace", "code":
		if len(d.Roots) == 0 {
			return fmt.Errorf("--domain %s needs at least one --root DIR", d.Name)
		}
	default:
		return fmt.Errorf("unknown --domain %q (browser, workspace or code)", d.Name)
	}
	return nil
}

// domain builds the chosen domain. The workspace roots stay open for the
// life of the process, as the server does.
func (d *DomainFlags) domain(dcfg browser.Config) (manglecp.Domain, error) {
	if d == nil || d.Name == "" || d.Name == "browser" {
		return browser.Domain(dcfg), nil
	}
	if err := d.Check(); err != nil {
		return manglecp.Domain{}, err
	}
	if d.Name == "code" {
		// The language servers start when a tool first needs them; the
		// domain's Close stops them.
		return code.Domain(code.Config{Roots: d.Roots})
	}
	ws, err := workspace.Open(workspace.Config{Roots: d.Roots, EditKey: d.editKey})
	if err != nil {
		return manglecp.Domain{}, err
	}
	return ws.Domain(), nil
}
