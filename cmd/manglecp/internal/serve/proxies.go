package serve

import (
	"flag"
	"fmt"
	"net/netip"
	"strings"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/serverconf"
	"github.com/manglecp/manglecp/transport"
)

// proxyFlags are serve's --trusted-proxies and --forwarded-header, which
// the config file's trusted_proxies and forwarded_header also set (the
// flags win). They make the server tell callers apart by the address
// their reverse proxy forwards instead of the proxy's own (docs/deploy.md).
type proxyFlags struct {
	trusted string // comma-separated, from the flag
	header  string

	fileTrusted []string
	fileHeader  string
}

func (p *proxyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.trusted, "trusted-proxies", "", "comma-separated addresses or CIDR prefixes of reverse proxies whose --forwarded-header names the client (e.g. 127.0.0.1/32,10.0.0.0/8); the client is the right-most address in it that is not a trusted proxy. Empty: the direct peer is the client and no header is read")
	fs.StringVar(&p.header, "forwarded-header", "", "the header the trusted proxies write: X-Forwarded-For (default) or Forwarded; only this one is read")
}

// fromConfig takes the config file's settings for what the flags leave
// unset.
func (p *proxyFlags) fromConfig(c *serverconf.File) {
	p.fileTrusted, p.fileHeader = c.TrustedProxies, c.ForwardedHeader
}

// resolve returns the trusted proxies and the header to read.
func (p *proxyFlags) resolve() ([]netip.Prefix, string, error) {
	list, header := p.fileTrusted, p.fileHeader
	if p.trusted != "" {
		list = strings.Split(p.trusted, ",")
	}
	if p.header != "" {
		header = p.header
	}
	prefixes, err := transport.ParseTrustedProxies(list)
	if err != nil {
		return nil, "", fmt.Errorf("--trusted-proxies: %w", err)
	}
	if !serverconf.ValidForwardedHeader(header) {
		return nil, "", fmt.Errorf("--forwarded-header must be X-Forwarded-For or Forwarded, got %s", cmdline.Quote(header))
	}
	return prefixes, header, nil
}
