package cli

import (
	"flag"

	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/settings"
)

// browserFlags are serve's flags for the browser domain's own Chromium
// (stable contract): one --browser-* flag per setting of chrome.Config
// (its flag tags name them; --browser-path, --browser-allowed-hosts, the
// bounds of the browser's work and its live sessions). The flags given
// override the config file's "browser" section. docs/browser.md lists
// each with its default.
type browserFlags struct {
	fs *flag.FlagSet
	// cfg holds the flags' values: chrome's defaults until given.
	cfg chrome.Config
}

// addBrowserFlags registers the browser flags on fs.
func addBrowserFlags(fs *flag.FlagSet, b *browserFlags) {
	b.fs, b.cfg = fs, chrome.DefaultConfig()
	settings.Register(fs, &b.cfg)
}

// given is the settings of the flags given, the others zero.
func (b *browserFlags) given() chrome.Config {
	var c chrome.Config
	if b.fs != nil {
		settings.Given(b.fs, &c, &b.cfg)
	}
	return c
}

// check validates the flags given before the server starts
// (chrome.Config.Validate), each error naming its flag.
func (b *browserFlags) check() error {
	c := b.given()
	return settings.Rename(c.Validate(), &c, true, "")
}

// apply sets the flags that were given on c.
func (b *browserFlags) apply(c *browser.Config) {
	if b.fs != nil {
		settings.Given(b.fs, &c.Config, &b.cfg)
	}
}
