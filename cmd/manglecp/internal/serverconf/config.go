// Package serverconf builds the server that serve, mcp and inspect run in
// this process from the flags they share and the --config file: the domain
// (--domain, --root, the --browser-* flags, upstream MCP servers through
// the gateway with --upstream*, --rules) and the server options (the
// config file, --auth-token, the local confirmation key, the workspace's
// edit key). Every check of a setting is here once, naming the flag or
// the file, line and key.
package serverconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/settings"
	"github.com/manglecp/manglecp/store"
	"github.com/manglecp/manglecp/transport"
)

// File is the --config file: JSON, every key optional, unknown keys
// rejected. Its keys are those of the server's settings (manglecp.Options'
// key tags: server_name, limits.*, disclosure.*, macro_cache.*, ...,
// oauth.*) and the CLI's own (cliConfig), browser.* among them
// (chrome.Config's key tags). TestConfigDocumented checks that the README
// lists them.
type File struct {
	// Options holds the server settings the file sets (zero: absent).
	Options manglecp.Options
	cliConfig
}

// cliConfig are the config file's keys that are not server options.
type cliConfig struct {
	// StoreKey authenticates the macro-tools replicas keep in a shared
	// store (--store redis); every replica needs the same one, and not the
	// confirmation key. MANGLECP_STORE_KEY when empty.
	StoreKey string `key:"store_key" help:"authenticates the macro-tools replicas keep in --store redis (at least 16 characters; empty: MANGLECP_STORE_KEY)"`
	// EditKey signs the workspace domain's edit ids; replicas serving one
	// workspace share it. MANGLECP_EDIT_KEY when empty; else derived from
	// the confirmation key when one is configured; else random per process.
	EditKey string `key:"edit_key" help:"signs the workspace domain's edit ids (empty: MANGLECP_EDIT_KEY, else derived from the confirmation key, else random)"`
	// ReportDir is the browser domain's report directory.
	ReportDir string `key:"report_dir" help:"where the browser domain writes its diagnosis reports"`
	// Browser configures the browser domain's own headless Chromium: a
	// key per setting of chrome.Config (docs/browser.md).
	Browser chrome.Config `key:"browser"`
	// CORSOrigins are the browser origins allowed to call the HTTP API.
	CORSOrigins []string `key:"cors_origins" help:"browser origins allowed to call the HTTP API (\"*\" only without authentication)"`
	// TrustedProxies are the reverse proxies (addresses or CIDR prefixes)
	// whose forwarding header names the client (--trusted-proxies), and
	// ForwardedHeader that header (--forwarded-header).
	TrustedProxies  []string `key:"trusted_proxies" help:"reverse proxies (addresses or CIDR prefixes) whose forwarding header names the client"`
	ForwardedHeader string   `key:"forwarded_header" help:"that header: X-Forwarded-For or Forwarded"`
}

// UnmarshalJSON reads the file's keys into the settings.
func (c *File) UnmarshalJSON(data []byte) error {
	return settings.DecodeJSON(data, "", &c.Options, &c.cliConfig)
}

// Load reads and checks a config file; errors name the file and the line
// of the problem.
func Load(path string) (*File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	var c File
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", path, lineOf(raw, err, dec.InputOffset()), err)
	}
	var problems []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Errorf("%s: "+format, append([]any{path}, args...)...))
		}
	}
	for _, e := range settings.Split(settings.Rename(c.Options.Validate(), &c.Options, false, "")) {
		problems = append(problems, fmt.Errorf("%s: %w", path, e))
	}
	// The spec's minimum (Spec 02 section 3.2); the library allows less
	// for test harnesses, so this check is the CLI's.
	check(c.Options.Limits.MaxMessageBytes == 0 || c.Options.Limits.MaxMessageBytes >= 16<<20,
		"limits.max_message_bytes must be at least %d (16 MiB, Spec 02 section 3.2)", 16<<20)
	check(c.StoreKey == "" || len(c.StoreKey) >= 16, "store_key must be at least 16 characters")
	if c.EditKey != "" {
		kerr := store.CheckKey([]byte(c.EditKey))
		check(kerr == nil, "edit_key is not fit: %v; use a random one (for example openssl rand -base64 24)", kerr)
	}
	if c.StoreKey != "" && len(c.StoreKey) >= 16 {
		kerr := store.CheckKey([]byte(c.StoreKey))
		check(kerr == nil, "store_key is not fit: %v; use a random one (for example openssl rand -base64 24)", kerr)
	}
	_, perr := transport.ParseTrustedProxies(c.TrustedProxies)
	check(perr == nil, "trusted_proxies: %v", perr)
	check(ValidForwardedHeader(c.ForwardedHeader), "forwarded_header must be \"X-Forwarded-For\" or \"Forwarded\"")
	for i, t := range c.Options.AuthTokens {
		check(len(t) >= 16, "auth_tokens[%d] is shorter than 16 characters", i)
	}
	for _, e := range settings.Split(settings.Rename(c.Browser.Validate(), &c.Browser, false, "browser.")) {
		problems = append(problems, fmt.Errorf("%s: %w", path, e))
	}
	for _, o := range c.CORSOrigins {
		check(o != "*" || (len(c.Options.AuthTokens) == 0 && len(c.Options.Identities) == 0 && c.Options.OAuth == nil),
			"cors_origins may not hold \"*\" while authentication is on (Spec 02 section 4.2); list the origins")
	}
	for i, id := range c.Options.Identities {
		check(len(id.Token) >= 16, "identities[%d].token is shorter than 16 characters", i)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return &c, nil
}

// lineOf finds the line of a JSON decoding error.
func lineOf(raw []byte, err error, fallback int64) int {
	off := fallback
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var ke *settings.KeyError
	switch {
	case errors.As(err, &ke): // a section's key (its offsets are the section's): the key's first place
		section, key, nested := strings.Cut(ke.Key, ".")
		if s := bytes.Index(raw, []byte(strconv.Quote(section))); s >= 0 {
			off = int64(s)
			if k := bytes.Index(raw[s:], []byte(strconv.Quote(key))); nested && k >= 0 {
				off = int64(s + k)
			}
		}
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	return bytes.Count(raw[:off], []byte("\n")) + 1
}

// Apply copies the file's settings into server options: the file's
// tokens and identities join o's, and its server_name and
// confirmation_key replace o's when set.
func (c *File) Apply(o *manglecp.Options) {
	f := c.Options
	f.AuthTokens = append(o.AuthTokens, f.AuthTokens...)
	f.Identities = append(o.Identities, f.Identities...)
	if f.ServerName == "" {
		f.ServerName = o.ServerName
	}
	if len(f.ConfirmationKey) == 0 {
		f.ConfirmationKey = o.ConfirmationKey
	}
	settings.Copy(o, &f)
}

// ValidForwardedHeader reports whether h names a forwarding header the
// server reads (forwarded_header, serve's --forwarded-header).
func ValidForwardedHeader(h string) bool {
	return h == "" || strings.EqualFold(h, "X-Forwarded-For") || strings.EqualFold(h, "Forwarded")
}
