package manglecp

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/manglecp/manglecp/internal/buildinfo"
	"github.com/manglecp/manglecp/internal/confirmkey"
	"github.com/manglecp/manglecp/internal/oauth"
	"github.com/manglecp/manglecp/internal/settings"
)

// Options configure a [Server]. A nil *Options means all defaults;
// [NewServer] copies the options and fills in every zero field.
type Options struct {
	// ServerName and ServerVersion identify the server in the manifest.
	ServerName    string `key:"server_name" help:"the server's name in the manifest"`
	ServerVersion string
	// BasePath is the HTTP base of the evaluate and invoke endpoints
	// advertised in the manifest. Default "/manglecp".
	BasePath string

	// Limits are the server's limits (Spec 04 section 3.2.9).
	Limits Limits `key:"limits"`
	// Disclosure configures progressive disclosure.
	Disclosure Disclosure `key:"disclosure"`

	// RuleCoverage adds rule coverage diagnostics (Spec 09 section 6) to
	// every intent response; clients can also ask per request with the
	// option x-include_rule_coverage.
	RuleCoverage bool `key:"rule_coverage" help:"add rule coverage diagnostics to every intent response"`

	// MacroTTL is how long a macro-tool stays invokable when it has no
	// validity window. Default and minimum 5 minutes (Spec 07 2.4).
	MacroTTL time.Duration `key:"macro_cache.ttl_seconds" help:"how long a macro-tool without a validity window stays invokable (at least 5m, Spec 07 section 2.4)"`
	// MacroCacheBytes bounds the memory of cached macro definitions; the
	// least recently used are evicted beyond it. Default 64 MiB.
	MacroCacheBytes int64 `key:"macro_cache.max_bytes" help:"memory of cached macro definitions; the least recently used are evicted beyond it"`
	// ResultCacheBytes bounds the memory of the result cache, which answers
	// an identical deterministic intent request (same payload, identity and
	// rules; an explicit eval_time; only deterministic external predicates)
	// without evaluating it again. Default 16 MiB; -1 disables it.
	ResultCacheBytes int64 `key:"result_cache.max_bytes" min:"-1" help:"memory of the cache answering identical deterministic intent requests (-1: off)"`
	// MaxEvents caps observability events per invocation. Default 20.
	MaxEvents int `key:"max_events" help:"observability events per invocation"`
	// MaxStateDelta caps asserted plus retracted facts per invocation
	// (an action's first facts are kept, and an observability event
	// "state_delta" says what was cut). Default 500: a live browser page
	// as facts, with the call's console and network facts, fits.
	MaxStateDelta int `key:"max_state_delta" help:"asserted plus retracted facts per invocation (the first kept)"`
	// InvokeTimeout bounds one action's run. Default 30 s.
	InvokeTimeout time.Duration `key:"invoke_timeout_ms" help:"time of one action's run"`

	// Identities, when non-empty, turn authentication on: a request must
	// carry the token of one of them (bearer or API key), compared in
	// constant time and never logged. The caller's name and permissions
	// enter evaluation as server facts (caller/1, caller_permission/1), so
	// policy rules decide which intents each identity may use.
	Identities []Identity `key:"identities" help:"callers with a token, permissions and trust level; any turns authentication on"`
	// OAuth, when set, also accepts OAuth 2.1 JWT access tokens (and turns
	// authentication on).
	OAuth *OAuth `key:"oauth" help:"accept OAuth 2.1 JWT access tokens: an object of the keys of docs/deploy.md (OAuth)"`
	// AnonymousPermissions are the permissions of callers when
	// authentication is off (default ["*"]); policy rules see them as
	// caller_permission facts of the caller "anonymous".
	AnonymousPermissions []string
	// AuthTokens is shorthand for identities "token-1", "token-2", ... with
	// the permission "*".
	AuthTokens []string `key:"auth_tokens" help:"tokens of identities token-1, token-2, ... with every permission"`
	// ConfirmationKey signs and verifies confirmation tokens. When empty,
	// the key of MANGLECP_CONFIRMATION_KEY is used, else the user's key
	// file (<user config dir>/manglecp/confirmation.key, created with a
	// random key on first use): the key `manglecp serve` uses and
	// `manglecp invoke --confirm` signs with. Only when neither can be had
	// is a random key generated (logged as a warning): tokens then stop
	// working at every restart.
	ConfirmationKey []byte `key:"confirmation_key" help:"signs and verifies confirmation tokens (empty: MANGLECP_CONFIRMATION_KEY, else the local key file)"`
	// ConfirmationTTL is the longest lifetime a confirmation token may
	// claim. Default 5 minutes.
	ConfirmationTTL time.Duration
	// RateLimit is the sustained number of requests per second one identity
	// may make; 0 disables rate limiting. RateBurst is the burst size
	// (default: RateLimit rounded up, at least 1).
	RateLimit float64 `key:"rate_limit.per_second" help:"sustained requests per second of one identity (0: no limit)"`
	RateBurst int     `key:"rate_limit.burst" help:"burst size of the rate limit (0: the rate rounded up)"`

	// MaxConcurrentEvaluations bounds evaluations running at once; default
	// 4 per CPU. A request that finds no free slot within QueueTimeout
	// (default 2 s) is refused with rate_limited, so overload is refused
	// quickly instead of queueing without end.
	MaxConcurrentEvaluations int           `key:"max_concurrent_evaluations" help:"evaluations running at once (0: 4 per CPU)"`
	QueueTimeout             time.Duration `key:"queue_timeout_ms" help:"how long a request waits for an evaluation slot before rate_limited"`
	// MaxEvaluationsPerCaller bounds the evaluations one caller (an
	// identity, or the address of an anonymous caller) runs at once;
	// default half of MaxConcurrentEvaluations, at least 1. A freed slot
	// goes to the waiting caller running the fewest evaluations, so one
	// caller's heavy requests cannot starve the others.
	MaxEvaluationsPerCaller int `key:"max_evaluations_per_caller" help:"evaluations one caller runs at once (0: half of max_concurrent_evaluations)"`

	// Store holds the state replicas share: macro-tools, confirmation
	// nonces and rate limits. Default: in memory, bounded by
	// MacroCacheBytes (one process). Several replicas behind a load balancer
	// need a shared store (store/redis) and the same ConfirmationKey.
	Store Store
	// Metrics, when set, receives the server's Prometheus collectors
	// (requests by type, transport and code; latencies; gas; cache; in-flight
	// work; sessions; reloads). Nil: no metrics are kept.
	Metrics prometheus.Registerer
	// TracerProvider, when set, traces every request (a span per request,
	// with decode, evaluate, render, store and action children). Nil: tracing
	// is off and costs nothing.
	TracerProvider trace.TracerProvider

	// Logger receives server logs. Default: text on stderr at level info
	// (slog.DiscardHandler silences it).
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Identity is a caller that can authenticate.
type Identity struct {
	Name        string   `json:"name"`
	Token       string   `json:"token"`
	Permissions []string `json:"permissions"`
	// TrustLevel "automated" with AutoConfirmEffects waives confirmation
	// for tools whose every side effect is listed (Spec 08 section 4.3).
	// Only explicit configuration grants it.
	TrustLevel         string   `json:"trust_level"`
	AutoConfirmEffects []string `json:"auto_confirm_effects"`
}

// Limits are the server limits advertised in the manifest and enforced.
type Limits struct {
	// MaxMessageBytes: default 16 MiB (the minimum the spec allows).
	MaxMessageBytes int64 `key:"max_message_bytes" help:"largest message (serve: at least 16 MiB, Spec 02 section 3.2)"`
	// MaxFactsPerRequest: default 10000.
	MaxFactsPerRequest int64 `key:"max_facts_per_request" help:"facts one request may carry"`
	// MaxDerivedFacts is the created-facts gas limit: default 100000.
	MaxDerivedFacts int64 `key:"max_derived_facts" help:"facts one evaluation may create (gas)"`
	// MaxIntervalsPerAtom: default 1000.
	MaxIntervalsPerAtom int64 `key:"max_intervals_per_atom" help:"intervals per temporal atom"`
	// MaxComputeMS bounds one evaluation: default 30000.
	MaxComputeMS int64 `key:"max_compute_ms" help:"milliseconds of one evaluation"`
	// MaxEvaluationWork is the work budget of one evaluation, counted by
	// the kernel's store: one unit per fact a rule's lookup looks at, 100
	// per fact it joins (about 50 ns of CPU a unit on a current server
	// core). It bounds the CPU of rules that join the request's facts with
	// each other yet derive little, which MaxDerivedFacts cannot see.
	// Exceeding it is derivation_limit_exceeded with a budget in
	// "work_units". Advertised as the manifest extension
	// x-max_evaluation_work. Default 10,000,000 (about 0.5 s of CPU; the
	// browser domain spends about 3 million on 10,000 facts).
	MaxEvaluationWork int64 `key:"max_evaluation_work" help:"work units of one evaluation (facts looked at, 100 per fact joined)"`
}

// Disclosure configures adaptive disclosure: a tool scoring at least Full
// is disclosed in full, at least Condensed condensed, at least Minimal
// minimal; lower scores are left out. Defaults 70, 40, 20 (Spec 05 5.2).
type Disclosure struct {
	Full      int64 `key:"full" help:"score from which a tool is disclosed in full"`
	Condensed int64 `key:"condensed" help:"score from which a tool is disclosed condensed"`
	Minimal   int64 `key:"minimal" help:"score from which a tool is disclosed at all (minimal)"`
	// CharsPerToken is the token estimate's divisor: a tool costs its JSON
	// length / CharsPerToken tokens. Default 4.
	CharsPerToken int `key:"chars_per_token" help:"divisor of the token estimate (JSON length / it)"`
}

const (
	defaultMaxMessageBytes = 16 << 20
	minMacroTTL            = 5 * time.Minute
)

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	out.Identities = append([]Identity(nil), out.Identities...)
	for i, t := range out.AuthTokens {
		out.Identities = append(out.Identities, Identity{Name: fmt.Sprintf("token-%d", i+1), Token: t, Permissions: []string{"*"}})
	}
	out.AuthTokens = nil
	if out.AnonymousPermissions == nil {
		out.AnonymousPermissions = []string{"*"}
	}
	out.AnonymousPermissions = append([]string(nil), out.AnonymousPermissions...)
	out.ConfirmationKey = append([]byte(nil), out.ConfirmationKey...)
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	if out.ServerName == "" {
		out.ServerName = "manglecp-go"
	}
	if out.ServerVersion == "" {
		out.ServerVersion = Version
	}
	if out.BasePath == "" {
		out.BasePath = "/manglecp"
	}
	def(&out.Limits.MaxMessageBytes, defaultMaxMessageBytes)
	def(&out.Limits.MaxFactsPerRequest, 10000)
	def(&out.Limits.MaxDerivedFacts, 100000)
	def(&out.Limits.MaxIntervalsPerAtom, 1000)
	def(&out.Limits.MaxComputeMS, 30000)
	def(&out.Limits.MaxEvaluationWork, 10_000_000)
	if out.Disclosure.Full == 0 && out.Disclosure.Condensed == 0 && out.Disclosure.Minimal == 0 {
		out.Disclosure.Full, out.Disclosure.Condensed, out.Disclosure.Minimal = 70, 40, 20
	}
	if out.Disclosure.CharsPerToken <= 0 {
		out.Disclosure.CharsPerToken = 4
	}
	if out.MacroTTL < minMacroTTL {
		out.MacroTTL = minMacroTTL
	}
	def(&out.MacroCacheBytes, 64<<20)
	if out.ResultCacheBytes == 0 {
		out.ResultCacheBytes = 16 << 20
	}
	if out.MaxEvents <= 0 {
		out.MaxEvents = 20
	}
	if out.MaxStateDelta <= 0 {
		out.MaxStateDelta = 500
	}
	if out.InvokeTimeout <= 0 {
		out.InvokeTimeout = 30 * time.Second
	}
	if out.ConfirmationTTL <= 0 {
		out.ConfirmationTTL = 5 * time.Minute
	}
	if out.RateLimit > 0 && out.RateBurst <= 0 {
		out.RateBurst = max(1, int(out.RateLimit+0.999))
	}
	if out.MaxConcurrentEvaluations <= 0 {
		out.MaxConcurrentEvaluations = 4 * runtime.GOMAXPROCS(0)
	}
	if out.MaxEvaluationsPerCaller <= 0 {
		out.MaxEvaluationsPerCaller = max(1, out.MaxConcurrentEvaluations/2)
	}
	if out.QueueTimeout <= 0 {
		out.QueueTimeout = 2 * time.Second
	}
	if out.Logger == nil {
		out.Logger = DefaultLogger()
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

// Validate reports the options that are not valid, each error naming its
// field ("Limits.MaxMessageBytes must be at least ..."): numbers and
// durations below zero (ResultCacheBytes below -1), disclosure thresholds
// out of order, a MacroTTL under
// 5 minutes, identities without a unique name or with a trust level other
// than "automated" (auto_confirm_effects need it), invalid OAuth settings.
// Zero values are valid (they take the defaults). [Server.Load] (and so
// [NewServer]) fails with these errors; `manglecp serve` names the config
// file's key instead of the field (the fields' key tags). A message limit
// under the spec's 16 MiB (Spec 02 section 3.2) is the CLI's check only:
// test harnesses (cmd/manglecp-load) run servers with smaller ones.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	errs := settings.CheckMin(o)
	d := o.Disclosure
	settings.Check(&errs, d.Full >= d.Condensed && d.Condensed >= d.Minimal, "Disclosure.Full",
		"must be at least condensed, and condensed at least minimal (got %d, %d, %d)", d.Full, d.Condensed, d.Minimal)
	settings.Check(&errs, o.MacroTTL == 0 || o.MacroTTL >= minMacroTTL, "MacroTTL", "must be at least 300 seconds (Spec 07 section 2.4)")
	names := map[string]bool{}
	for i, id := range o.Identities {
		setting := fmt.Sprintf("Identities[%d]", i)
		settings.Check(&errs, id.Name != "" && !names[id.Name], setting, "needs a unique name")
		settings.Check(&errs, id.TrustLevel == "" || id.TrustLevel == "automated", setting, "trust_level must be \"automated\" or absent")
		settings.Check(&errs, len(id.AutoConfirmEffects) == 0 || id.TrustLevel == "automated", setting, "auto_confirm_effects needs trust_level \"automated\"")
		names[id.Name] = true
	}
	if o.OAuth != nil {
		errs = append(errs, settings.Split(settings.Within(o.OAuth.Validate(), "OAuth"))...)
	}
	return errors.Join(errs...)
}

// Version is this implementation's version, without the "v" of its tag:
// the release the binary was built from, as the Go build info records it
// (a binary installed with go install ...@v0.2.0, or a domain whose go.mod
// requires v0.2.0, says "0.2.0"); a build from a checkout says
// SourceVersion+"+devel".
var Version = version()

// SourceVersion is the version of the newest section of CHANGELOG.md: the
// release this source tree is, or is on its way to be. The release
// procedure (CHANGELOG.md) sets it before tagging.
const SourceVersion = "0.1.0"

func version() string {
	if v := buildinfo.Release(); v != "" {
		return strings.TrimPrefix(v, "v")
	}
	return SourceVersion + "+devel"
}

// DefaultLogger is the logger of a server whose Options have none: text
// on stderr at level info.
func DefaultLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// confirmationKey returns the configured key, else the local default
// (package confirmkey), else a random one with a warning.
func confirmationKey(o Options) ([]byte, error) {
	if len(o.ConfirmationKey) > 0 {
		return o.ConfirmationKey, nil
	}
	key, source, err := confirmkey.Default()
	if err == nil {
		o.Logger.Info("confirmation tokens are signed with the local key", "source", source)
		return key, nil
	}
	o.Logger.Warn("no confirmation key (Options.ConfirmationKey, "+confirmkey.EnvVar+" or the key file): using a random one, so tokens stop working at restart", "error", err.Error())
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("manglecp: confirmation key: %w", err)
	}
	return key, nil
}

// OAuth configures OAuth 2.1 bearer tokens (Spec 08 section 3.2): JWT
// access tokens signed by the issuer's keys (JWKS) are accepted beside the
// configured identities. The manifest lists the scheme "oauth2" and
// TokenURL. Its fields:
//
//   - Issuer must equal the token's "iss"; Audience must be in its "aud"
//     (both required).
//   - JWKSURL (required) is where the issuer publishes its signing keys.
//   - TokenURL is the issuer's token endpoint, advertised as auth.token_url.
//   - PermissionsClaim names the claim holding the caller's permissions, a
//     space-separated string or a list; default "scope".
//   - HTTPClient fetches the JWKS; default a client of http.DefaultTransport.
//   - FetchTimeout bounds one fetch of the JWKS; default 3 s. A token
//     whose key is not known waits at most this long.
//
// It is the verifier's own configuration (one struct, no copy): its
// Validate method names each invalid setting, and [Server.Load] fails
// with those errors.
type OAuth = oauth.Config

// newOAuthVerifier is the verifier of o, or nil when OAuth is off.
func newOAuthVerifier(o *OAuth) *oauth.Verifier {
	if o == nil {
		return nil
	}
	return oauth.NewVerifier(*o)
}
