package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/workspace"
)

// domainFlags are the serve flags that choose the domain (a stable
// contract): --domain browser (the default) or --domain workspace with
// one or more --root DIR.
type domainFlags struct {
	name  string
	roots rootList
	// browser holds serve's flags for the browser domain's Chromium
	// (browserflags.go).
	browser browserFlags
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
	fs.StringVar(&d.name, "domain", "browser", "the domain to serve: browser (browser diagnostics) or workspace (files under --root)")
	fs.Var(&d.roots, "root", "a directory the workspace domain may access; repeat for several (needs --domain workspace)")
	return d
}

// check reports flag combinations that are usage errors.
func (d *domainFlags) check() error {
	switch d.name {
	case "browser":
		if len(d.roots) > 0 {
			return fmt.Errorf("--root needs --domain workspace")
		}
	case "workspace":
		if len(d.roots) == 0 {
			return fmt.Errorf("--domain workspace needs at least one --root DIR")
		}
	default:
		return fmt.Errorf("unknown --domain %q (browser or workspace)", d.name)
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
	ws, err := workspace.Open(workspace.Config{Roots: d.roots})
	if err != nil {
		return manglecp.Domain{}, err
	}
	return ws.Domain(), nil
}
