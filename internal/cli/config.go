package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/settings"
	"github.com/manglecp/manglecp/store"
	"github.com/manglecp/manglecp/transport"
)

// fileConfig is the --config file: JSON, every field optional, unknown
// fields rejected.
type fileConfig struct {
	ServerName string `json:"server_name"`
	Limits     struct {
		MaxMessageBytes     int64 `json:"max_message_bytes"`
		MaxFactsPerRequest  int64 `json:"max_facts_per_request"`
		MaxDerivedFacts     int64 `json:"max_derived_facts"`
		MaxIntervalsPerAtom int64 `json:"max_intervals_per_atom"`
		MaxComputeMS        int64 `json:"max_compute_ms"`
		MaxEvaluationWork   int64 `json:"max_evaluation_work"`
	} `json:"limits"`
	MaxConcurrentEvaluations int `json:"max_concurrent_evaluations"`
	MaxEvaluationsPerCaller  int `json:"max_evaluations_per_caller"`
	Disclosure               *struct {
		Full          int64 `json:"full"`
		Condensed     int64 `json:"condensed"`
		Minimal       int64 `json:"minimal"`
		CharsPerToken int   `json:"chars_per_token"`
	} `json:"disclosure"`
	MacroCache struct {
		TTLSeconds int64 `json:"ttl_seconds"`
		MaxBytes   int64 `json:"max_bytes"`
	} `json:"macro_cache"`
	ResultCache struct {
		// MaxBytes bounds the result cache; 0 is the default (16 MiB), -1
		// turns it off.
		MaxBytes int64 `json:"max_bytes"`
	} `json:"result_cache"`
	MaxEvents       int      `json:"max_events"`
	MaxStateDelta   int      `json:"max_state_delta"`
	InvokeTimeoutMS int64    `json:"invoke_timeout_ms"`
	AuthTokens      []string `json:"auth_tokens"`
	Identities      []struct {
		Name               string   `json:"name"`
		Token              string   `json:"token"`
		Permissions        []string `json:"permissions"`
		TrustLevel         string   `json:"trust_level"`
		AutoConfirmEffects []string `json:"auto_confirm_effects"`
	} `json:"identities"`
	RuleCoverage    bool   `json:"rule_coverage"`
	ConfirmationKey string `json:"confirmation_key"`
	// StoreKey authenticates the macro-tools replicas keep in a shared
	// store (--store redis); every replica needs the same one, and not the
	// confirmation key. MANGLECP_STORE_KEY when empty.
	StoreKey string `json:"store_key"`
	// EditKey signs the workspace domain's edit ids; replicas serving one
	// workspace share it. MANGLECP_EDIT_KEY when empty; else derived from
	// the confirmation key when one is configured; else random per process.
	EditKey   string `json:"edit_key"`
	RateLimit struct {
		PerSecond float64 `json:"per_second"`
		Burst     int     `json:"burst"`
	} `json:"rate_limit"`
	ReportDir string `json:"report_dir"`
	// Browser configures the browser domain's own headless Chromium: a
	// key per setting of chrome.Config (its key tags name them).
	Browser browserSection `json:"browser"`
	// QueueTimeoutMS is how long a request waits for an evaluation slot
	// (Options.QueueTimeout).
	QueueTimeoutMS int64 `json:"queue_timeout_ms"`
	// CORSOrigins are the browser origins allowed to call the HTTP API.
	CORSOrigins []string `json:"cors_origins"`
	// OAuth turns OAuth access tokens on: a key per setting of
	// manglecp.OAuth (internal/oauth.Config, its key tags name them).
	OAuth *oauthSection `json:"oauth"`
	// TrustedProxies are the reverse proxies (addresses or CIDR prefixes)
	// whose forwarding header names the client (--trusted-proxies), and
	// ForwardedHeader that header (--forwarded-header).
	TrustedProxies  []string `json:"trusted_proxies"`
	ForwardedHeader string   `json:"forwarded_header"`
}

// browserSection is the config file's "browser" section: one key per
// setting of chrome.Config, durations in milliseconds (keys ..._ms),
// unknown keys refused.
type browserSection struct{ chrome.Config }

// UnmarshalJSON reads the section's keys into the settings.
func (b *browserSection) UnmarshalJSON(data []byte) error {
	return settings.DecodeJSON(data, &b.Config, "browser")
}

// oauthSection is the config file's "oauth" section: one key per setting
// of manglecp.OAuth, durations in milliseconds, unknown keys refused.
type oauthSection struct{ manglecp.OAuth }

// UnmarshalJSON reads the section's keys into the settings.
func (a *oauthSection) UnmarshalJSON(data []byte) error {
	return settings.DecodeJSON(data, &a.OAuth, "oauth")
}

// minMessageBytes is the smallest limit the spec allows (Spec 02 3.2).
const minMessageBytes = 16 << 20

// loadConfig reads and checks a config file; errors name the file and the
// line of the problem.
func loadConfig(path string) (*fileConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	var c fileConfig
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
	l := c.Limits
	check(l.MaxMessageBytes == 0 || l.MaxMessageBytes >= minMessageBytes, "limits.max_message_bytes must be at least %d (16 MiB, Spec 02 section 3.2)", minMessageBytes)
	check(l.MaxFactsPerRequest >= 0 && l.MaxDerivedFacts >= 0 && l.MaxIntervalsPerAtom >= 0 && l.MaxComputeMS >= 0 && l.MaxEvaluationWork >= 0, "limits must not be negative")
	check(c.MaxConcurrentEvaluations >= 0 && c.MaxEvaluationsPerCaller >= 0, "max_concurrent_evaluations and max_evaluations_per_caller must not be negative")
	if d := c.Disclosure; d != nil {
		check(d.Full >= d.Condensed && d.Condensed >= d.Minimal && d.Minimal >= 0, "disclosure thresholds need full >= condensed >= minimal >= 0")
		check(d.CharsPerToken >= 0, "disclosure.chars_per_token must not be negative")
	}
	check(c.MacroCache.TTLSeconds == 0 || c.MacroCache.TTLSeconds >= 300, "macro_cache.ttl_seconds must be at least 300 (Spec 07 section 2.4)")
	check(c.MacroCache.MaxBytes >= 0 && c.MaxEvents >= 0 && c.MaxStateDelta >= 0 && c.InvokeTimeoutMS >= 0, "sizes and timeouts must not be negative")
	check(c.ResultCache.MaxBytes >= -1, "result_cache.max_bytes must be -1 (off), 0 (default) or a size in bytes")
	check(c.RateLimit.PerSecond >= 0 && c.RateLimit.Burst >= 0, "rate_limit must not be negative")
	check(c.StoreKey == "" || len(c.StoreKey) >= 16, "store_key must be at least 16 characters")
	if c.EditKey != "" {
		kerr := store.CheckKey([]byte(c.EditKey))
		check(kerr == nil, "edit_key is not fit: %v; use a random one (for example openssl rand -base64 24)", kerr)
	}
	if c.StoreKey != "" && len(c.StoreKey) >= 16 {
		kerr := store.CheckKey([]byte(c.StoreKey))
		check(kerr == nil, "store_key is not fit: %v; use a random one (for example openssl rand -base64 24)", kerr)
	}
	check(c.QueueTimeoutMS >= 0, "queue_timeout_ms must not be negative")
	_, perr := transport.ParseTrustedProxies(c.TrustedProxies)
	check(perr == nil, "trusted_proxies: %v", perr)
	check(validForwardedHeader(c.ForwardedHeader), "forwarded_header must be \"X-Forwarded-For\" or \"Forwarded\"")
	for i, t := range c.AuthTokens {
		check(len(t) >= 16, "auth_tokens[%d] is shorter than 16 characters", i)
	}
	for _, e := range settings.Split(settings.Rename(c.Browser.Validate(), &c.Browser.Config, false, "browser.")) {
		problems = append(problems, fmt.Errorf("%s: %w", path, e))
	}
	if a := c.OAuth; a != nil {
		for _, e := range settings.Split(settings.Rename(a.Validate(), &a.OAuth, false, "oauth.")) {
			problems = append(problems, fmt.Errorf("%s: %w", path, e))
		}
	}
	for _, o := range c.CORSOrigins {
		check(o != "*" || (len(c.AuthTokens) == 0 && len(c.Identities) == 0 && c.OAuth == nil),
			"cors_origins may not hold \"*\" while authentication is on (Spec 02 section 4.2); list the origins")
	}
	names := map[string]bool{}
	for i, id := range c.Identities {
		check(id.Name != "" && !names[id.Name], "identities[%d] needs a unique name", i)
		check(len(id.Token) >= 16, "identities[%d].token is shorter than 16 characters", i)
		check(id.TrustLevel == "" || id.TrustLevel == "automated", "identities[%d].trust_level must be \"automated\" or absent", i)
		check(len(id.AutoConfirmEffects) == 0 || id.TrustLevel == "automated", "identities[%d].auto_confirm_effects needs trust_level \"automated\"", i)
		names[id.Name] = true
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
		section, key, _ := strings.Cut(ke.Key, ".")
		if s := bytes.Index(raw, []byte(strconv.Quote(section))); s >= 0 {
			if k := bytes.Index(raw[s:], []byte(strconv.Quote(key))); k >= 0 {
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

// apply copies the file's settings into server options.
func (c *fileConfig) apply(o *manglecp.Options) {
	if c.ServerName != "" {
		o.ServerName = c.ServerName
	}
	o.Limits = manglecp.Limits{
		MaxMessageBytes:     c.Limits.MaxMessageBytes,
		MaxFactsPerRequest:  c.Limits.MaxFactsPerRequest,
		MaxDerivedFacts:     c.Limits.MaxDerivedFacts,
		MaxIntervalsPerAtom: c.Limits.MaxIntervalsPerAtom,
		MaxComputeMS:        c.Limits.MaxComputeMS,
		MaxEvaluationWork:   c.Limits.MaxEvaluationWork,
	}
	o.MaxConcurrentEvaluations, o.MaxEvaluationsPerCaller = c.MaxConcurrentEvaluations, c.MaxEvaluationsPerCaller
	if d := c.Disclosure; d != nil {
		o.Disclosure = manglecp.Disclosure{Full: d.Full, Condensed: d.Condensed, Minimal: d.Minimal, CharsPerToken: d.CharsPerToken}
	}
	o.MacroTTL = time.Duration(c.MacroCache.TTLSeconds) * time.Second
	o.MacroCacheBytes = c.MacroCache.MaxBytes
	o.ResultCacheBytes = c.ResultCache.MaxBytes
	o.MaxEvents = c.MaxEvents
	o.MaxStateDelta = c.MaxStateDelta
	o.InvokeTimeout = time.Duration(c.InvokeTimeoutMS) * time.Millisecond
	o.AuthTokens = append(o.AuthTokens, c.AuthTokens...)
	for _, id := range c.Identities {
		o.Identities = append(o.Identities, manglecp.Identity{Name: id.Name, Token: id.Token, Permissions: id.Permissions,
			TrustLevel: id.TrustLevel, AutoConfirmEffects: id.AutoConfirmEffects})
	}
	o.RuleCoverage = c.RuleCoverage
	if a := c.OAuth; a != nil {
		oc := a.OAuth
		o.OAuth = &oc
	}
	if c.ConfirmationKey != "" {
		o.ConfirmationKey = []byte(c.ConfirmationKey)
	}
	o.RateLimit, o.RateBurst = c.RateLimit.PerSecond, c.RateLimit.Burst
	o.QueueTimeout = time.Duration(c.QueueTimeoutMS) * time.Millisecond
}
