package serverconf

import (
	"flag"

	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/settings"
)

// BrowserFlags are serve's flags for the browser domain's own Chromium
// (stable contract): one --browser-* flag per setting of chrome.Config
// (its flag tags name them; --browser-path, --browser-allowed-hosts, the
// bounds of the browser's work and its live sessions). The flags given
// override the config file's "browser" section. docs/browser.md lists
// each with its default.
type BrowserFlags struct {
	fs *flag.FlagSet
	// cfg holds the flags' values: chrome's defaults until given.
	cfg chrome.Config
}

// AddBrowserFlags registers the browser flags on fs.
func AddBrowserFlags(fs *flag.FlagSet, b *BrowserFlags) {
	b.fs, b.cfg = fs, chrome.DefaultConfig()
	settings.Register(fs, &b.cfg)
}

// given is the settings of the flags given, the others zero.
func (b *BrowserFlags) given() chrome.Config {
	var c chrome.Config
	if b.fs != nil {
		settings.Given(b.fs, &c, &b.cfg)
	}
	return c
}

// check validates the flags given before the server starts
// (chrome.Config.Validate), each error naming its flag.
func (b *BrowserFlags) check() error {
	c := b.given()
	return settings.Rename(c.Validate(), &c, true, "")
}

// apply sets the flags that were given on c.
func (b *BrowserFlags) apply(c *browser.Config) {
	if b.fs != nil {
		settings.Given(b.fs, &c.Config, &b.cfg)
	}
}
