package cli

import (
	"flag"
	"strings"

	"github.com/manglecp/manglecp/domains/browser"
)

// browserFlags are serve's flags for the browser domain's own Chromium
// (stable contract): --browser-path and --browser-allowed-hosts. They
// override the config file's "browser" section.
type browserFlags struct {
	path, hosts string
}

// addBrowserFlags registers the browser flags on fs.
func addBrowserFlags(fs *flag.FlagSet, b *browserFlags) {
	fs.StringVar(&b.path, "browser-path", "", "Chromium binary of the browser domain (a path or a name on PATH; default: chromium, chromium-browser, google-chrome; \"none\" turns the browser off)")
	fs.StringVar(&b.hosts, "browser-allowed-hosts", "", "comma-separated hosts the browser may load pages from (default: localhost,127.0.0.1,::1; \"*\" allows every host)")
}

// apply sets the flags that were given on c.
func (b *browserFlags) apply(c *browser.Config) {
	if b.path != "" {
		c.BrowserPath = b.path
	}
	if b.hosts != "" {
		c.AllowedHosts = nil
		for _, h := range strings.Split(b.hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				c.AllowedHosts = append(c.AllowedHosts, h)
			}
		}
	}
}
