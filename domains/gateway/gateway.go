// Package gateway is a MangleCP domain built from upstream MCP servers:
// each tool an upstream lists (package upstream supervises them) becomes a
// MangleCP tool named UPSTREAM_TOOL, whose action validates the arguments
// against the upstream's own input schema and calls it. The tool list
// becomes server facts (upstream_tool, upstream_hint, tool_param, ...; see
// rules/domain/gateway.mg), so rule packs (.mg, as for every domain)
// declare the intents and decide which upstream tools each intent offers;
// the gateway's own policy puts destructive tools behind confirmation
// unless a pack waives it.
//
// Packs are embedded for the MCP filesystem server, Playwright MCP and the
// "everything" reference server (packs/), chosen by the name an upstream
// gives at initialization or by [Upstream.Pack]; [Config.Rules] replaces
// them with a pack of one's own (manglecp adopt writes a start).
//
// Upstream failures become the domain's error codes (see [Codes]) with the
// upstream's message bounded and stripped of stack traces and paths;
// results are bounded by [Config.MaxResultBytes]. The manifest's
// x-upstreams extension says which upstreams are up; the server is
// degraded, naming the reason, while one is not, and the others keep
// serving.
package gateway

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing/fstest"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/upstream"
)

//go:embed rules packs
var embedded embed.FS

// ID is the domain id advertised in the manifest.
const ID = "gateway"

// DefaultMaxResultBytes bounds the text of one result.
const DefaultMaxResultBytes = 32 << 10

// Upstream configures one upstream and the pack that serves it.
type Upstream struct {
	upstream.Config
	// Pack names the embedded pack for it ("filesystem", "playwright",
	// "everything"); "" chooses by the server's name, "none" uses none.
	// Ignored when Config.Rules is set.
	Pack string
}

// Config configures the gateway.
type Config struct {
	Upstreams []Upstream
	// Rules, when set, is the rule pack (domain/*.mg, policy/*.mg) used
	// instead of the embedded ones; RulesName names it in errors.
	Rules     fs.FS
	RulesName string
	// MaxResultBytes bounds the text of one result (default
	// [DefaultMaxResultBytes]); longer text is cut and says so.
	MaxResultBytes int
	// Logger receives the upstreams' stderr and lifecycle.
	Logger *slog.Logger
}

// Gateway is the running upstreams and the domain serving them.
type Gateway struct {
	cfg       Config
	upstreams []*upstream.Upstream

	cat     sync.RWMutex                    // guards entries, macros, packs, rules
	entries map[string]map[string]*entry    // upstream -> tool -> entry
	macros  map[string]map[string]*composed // upstream -> composed tool -> how
	packs   map[string]string               // upstream -> embedded pack
	rules   fstest.MapFS
	plans   plans // previewed edits of the composed replace

	mu      sync.Mutex
	report  manglecp.HealthReport
	status  map[string]upstream.Status
	reload  func(fs.FS) error
	opened  bool
	joining map[string]bool // upstreams whose late tools are being added
	bg      sync.WaitGroup
}

// packByServer maps the serverInfo.name of known servers to their pack.
var packByServer = map[string]string{
	"secure-filesystem-server":   "filesystem",
	"Playwright":                 "playwright",
	"example-servers/everything": "everything",
	"mcp-servers/everything":     "everything",
}

// Packs lists the embedded packs.
func Packs() []string {
	ents, _ := fs.ReadDir(embedded, "packs")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// Open starts every upstream (at once, bounded by their connect timeout
// and ctx) and builds the rules from their tool lists. An upstream that
// does not start is served degraded, without its tools, and retried in
// the background; Open fails only on a configuration error. Close the
// gateway (or the domain's Close) to stop them.
func Open(ctx context.Context, cfg Config) (*Gateway, error) {
	if len(cfg.Upstreams) == 0 {
		return nil, errors.New("gateway: no upstream configured")
	}
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = DefaultMaxResultBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{cfg: cfg, entries: map[string]map[string]*entry{}, packs: map[string]string{}, status: map[string]upstream.Status{}}
	seen := map[string]bool{}
	for _, uc := range cfg.Upstreams {
		if seen[uc.Name] {
			g.closeAll()
			return nil, fmt.Errorf("gateway: upstream %s is configured twice", uc.Name)
		}
		seen[uc.Name] = true
		if uc.Pack != "" && uc.Pack != "none" && !hasPack(uc.Pack) {
			g.closeAll()
			return nil, fmt.Errorf("gateway: upstream %s: no embedded pack %q (%s)", uc.Name, uc.Pack, strings.Join(Packs(), ", "))
		}
		c := uc.Config
		if c.Logger == nil {
			c.Logger = cfg.Logger
		}
		c.OnStatus = g.onStatus
		u, err := upstream.New(c)
		if err != nil {
			g.closeAll()
			return nil, fmt.Errorf("gateway: %w", err)
		}
		g.upstreams = append(g.upstreams, u)
	}
	var wg sync.WaitGroup
	for _, u := range g.upstreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := u.Start(ctx); err != nil {
				cfg.Logger.Warn("upstream did not start; serving without its tools", "upstream", u.Name(), "error", err.Error(), "cause", upstream.Cause(err))
			}
		}()
	}
	wg.Wait()
	if err := g.buildRules(); err != nil {
		g.closeAll()
		return nil, err
	}
	g.mu.Lock()
	g.opened = true
	g.mu.Unlock()
	return g, nil
}

// SetReload gives the gateway the server's reload (Server.Reload): an
// upstream that was down at start and comes up later then joins with its
// tools, the rules rebuilt and reloaded. Without it, such an upstream
// serves only after a restart.
func (g *Gateway) SetReload(reload func(fs.FS) error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reload = reload
	for _, u := range g.upstreams {
		g.joinIfLateLocked(u.Status())
	}
}

// joinIfLateLocked starts join for an upstream that is up with tools the
// catalogue lacks. g.mu is held.
func (g *Gateway) joinIfLateLocked(st upstream.Status) {
	if !g.opened || g.reload == nil || st.State != "up" || st.Tools == 0 || g.joining[st.Name] {
		return
	}
	g.cat.RLock()
	_, has := g.entries[st.Name]
	g.cat.RUnlock()
	if has {
		return
	}
	if g.joining == nil {
		g.joining = map[string]bool{}
	}
	g.joining[st.Name] = true
	g.bg.Add(1)
	go g.join(st.Name)
}

// join rebuilds the rules with the tools of an upstream that came up
// after start and reloads the server with them.
func (g *Gateway) join(name string) {
	defer g.bg.Done()
	defer func() {
		g.mu.Lock()
		delete(g.joining, name)
		g.mu.Unlock()
	}()
	if err := g.buildRules(); err != nil {
		g.cfg.Logger.Error("rules with a late upstream do not build", "upstream", name, "error", err.Error())
		return
	}
	g.mu.Lock()
	reload := g.reload
	g.mu.Unlock()
	if err := reload(g.Rules()); err != nil {
		g.cfg.Logger.Error("rules with a late upstream do not load; the previous rules keep serving", "upstream", name, "error", err.Error())
		return
	}
	g.cfg.Logger.Info("upstream joined with its tools", "upstream", name)
}

func hasPack(name string) bool {
	_, err := fs.Stat(embedded, "packs/"+name)
	return err == nil && !strings.Contains(name, "/")
}

// buildRules assembles the gateway's rules, each upstream's catalogue and
// the packs into one file system.
func (g *Gateway) buildRules() error {
	files := fstest.MapFS{}
	allEntries := map[string]map[string]*entry{}
	allMacros := map[string]map[string]*composed{}
	allPacks := map[string]string{}
	if err := copyMG(files, embedded, "rules", "", ""); err != nil {
		return err
	}
	packs := map[string]bool{}
	for i, u := range g.upstreams {
		tools := u.Tools()
		if tools == nil {
			continue // not started: no catalogue
		}
		pack := ""
		if g.cfg.Rules == nil {
			pack = g.cfg.Upstreams[i].Pack
			if pack == "" {
				pack = packByServer[u.ServerName()]
			}
			if pack == "none" {
				pack = ""
			}
		}
		allPacks[u.Name()] = pack
		entries, facts, skipped := catalogue(u.Name(), pack, tools)
		for _, s := range skipped {
			g.cfg.Logger.Warn("upstream tool left out", "upstream", u.Name(), "tool", s)
		}
		macros, macroFacts, skippedMacros := compose(u.Name(), entries)
		for _, s := range skippedMacros {
			g.cfg.Logger.Warn("composed tool left out", "upstream", u.Name(), "reason", s)
		}
		allEntries[u.Name()], allMacros[u.Name()] = entries, macros
		files["domain/upstream_"+u.Name()+".mg"] = &fstest.MapFile{Data: []byte(facts + macroFacts), Mode: 0o444}
		if pack != "" && !packs[pack] {
			packs[pack] = true
			if err := copyMG(files, embedded, "packs/"+pack, "pack_"+pack+"_", ""); err != nil {
				return err
			}
		}
	}
	if g.cfg.Rules != nil {
		if err := copyMG(files, g.cfg.Rules, ".", "rules_", g.cfg.RulesName); err != nil {
			return err
		}
	}
	g.cat.Lock()
	g.rules, g.entries, g.macros, g.packs = files, allEntries, allMacros, allPacks
	g.cat.Unlock()
	return nil
}

// copyMG copies domain/*.mg and policy/*.mg of src under dir into dst,
// prefixing each file name.
func copyMG(dst fstest.MapFS, src fs.FS, dir, prefix, name string) error {
	for _, layer := range []string{"domain", "policy"} {
		ents, err := fs.ReadDir(src, path.Join(dir, layer))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("gateway: rules %s: %w", name, err)
		}
		for _, e := range ents {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".mg") {
				continue
			}
			data, err := fs.ReadFile(src, path.Join(dir, layer, e.Name()))
			if err != nil {
				return fmt.Errorf("gateway: rules %s: %w", name, err)
			}
			dst[layer+"/"+prefix+e.Name()] = &fstest.MapFile{Data: data, Mode: 0o444}
		}
	}
	return nil
}

// Rules returns the assembled rules: the gateway's, the catalogues and
// the packs.
func (g *Gateway) Rules() fs.FS {
	g.cat.RLock()
	defer g.cat.RUnlock()
	return g.rules
}

// Upstreams returns the supervised upstreams.
func (g *Gateway) Upstreams() []*upstream.Upstream { return g.upstreams }

// Domain returns the MangleCP domain: its Close stops the upstreams.
func (g *Gateway) Domain() manglecp.Domain {
	actions := map[string]manglecp.ActionSpec{}
	for _, u := range g.upstreams {
		actions[u.Name()] = manglecp.ActionSpec{Run: g.action(u), ParamSchemas: g.paramSchemas(u.Name())}
	}
	return manglecp.Domain{
		ID:          ID,
		Description: "Upstream MCP servers under Mangle rules: " + strings.Join(g.names(), ", ") + ".",
		Categories:  []string{"gateway"},
		Rules:       g.Rules(),
		RulesName:   "gateway",
		Actions:     actions,
		Codes:       Codes(),
		Health:      g.setReport,
		Close:       g.Close,
	}
}

// paramSchemas gives the server what the upstream's schemas say of its
// tools' parameters beyond the rules' facts (nested items and fields,
// lengths, patterns): the macro-tools carry it, so a call is validated
// against it before the user is asked to confirm, and a host shows the
// fields of an array's items.
func (g *Gateway) paramSchemas(up string) func(tool string) map[string]map[string]any {
	return func(tool string) map[string]map[string]any {
		g.cat.RLock()
		defer g.cat.RUnlock()
		e := g.entries[up][tool]
		if c := g.macros[up][tool]; c != nil && c.kind == kindMove {
			e = c.roles[roleMove.tool] // move takes move_file's source and destination
		}
		if e == nil || len(e.more) == 0 {
			return nil
		}
		out := make(map[string]map[string]any, len(e.more))
		for name, kw := range e.more {
			out[name] = copyJSON(kw).(map[string]any)
		}
		return out
	}
}

// copyJSON copies a decoded JSON value, so that no macro-tool shares
// (and could change) the catalogue's.
func copyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = copyJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = copyJSON(x)
		}
		return out
	}
	return v
}

func (g *Gateway) names() []string {
	var out []string
	for _, u := range g.upstreams {
		out = append(out, u.Name())
	}
	return out
}

// Close stops every upstream.
func (g *Gateway) Close() error {
	g.closeAll()
	g.bg.Wait()
	return nil
}

func (g *Gateway) closeAll() {
	var wg sync.WaitGroup
	for _, u := range g.upstreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = u.Close()
		}()
	}
	wg.Wait()
}

// onStatus records an upstream's status and reports the gateway's health.
func (g *Gateway) onStatus(st upstream.Status) {
	g.mu.Lock()
	g.status[st.Name] = st
	report := g.report
	value, degraded := g.healthLocked()
	g.joinIfLateLocked(st)
	g.mu.Unlock()
	if report != nil {
		report("x-upstreams", value, degraded)
	}
}

func (g *Gateway) setReport(r manglecp.HealthReport) {
	g.mu.Lock()
	g.report = r
	for _, u := range g.upstreams {
		if _, ok := g.status[u.Name()]; !ok {
			g.status[u.Name()] = u.Status()
		}
	}
	value, degraded := g.healthLocked()
	g.mu.Unlock()
	r("x-upstreams", value, degraded)
}

// healthLocked is the x-upstreams extension and the degraded reason: an
// upstream that is neither up nor idle (lazy) degrades the server.
func (g *Gateway) healthLocked() (map[string]any, string) {
	value := map[string]any{}
	var reasons []string
	names := make([]string, 0, len(g.status))
	for n := range g.status {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := g.status[n]
		value[n] = st
		if st.State != "up" && st.State != "idle" {
			reasons = append(reasons, fmt.Sprintf("upstream %s is %s: %s", n, st.State, st.Reason))
		}
	}
	return value, strings.Join(reasons, "; ")
}

// Status returns every upstream's status, by name.
func (g *Gateway) Status() map[string]upstream.Status {
	out := map[string]upstream.Status{}
	for _, u := range g.upstreams {
		out[u.Name()] = u.Status()
	}
	return out
}

// action is the action running every tool of u.
func (g *Gateway) action(u *upstream.Upstream) manglecp.Action {
	return func(ctx context.Context, call *manglecp.Call) (*manglecp.Outcome, error) {
		g.cat.RLock()
		e := g.entries[u.Name()][call.Tool]
		c := g.macros[u.Name()][call.Tool]
		known := readers[g.packs[u.Name()]]
		g.cat.RUnlock()
		if c != nil {
			if !manglecp.CallerPermitted(ctx, Permission(u.Name())) {
				return nil, protocol.Errorf(protocol.CodeAuthInsufficient, "this identity does not hold the permission %s", Permission(u.Name()))
			}
			return g.runComposed(ctx, u, c, call)
		}
		if e == nil {
			return nil, fail(CodeToolFailed, "the upstream did not list this tool at start", nil, "upstream %s has no tool %s", u.Name(), quote(call.Tool))
		}
		// The rules offer an upstream's tools only to callers holding
		// upstream:NAME; the action holds the line too.
		if !manglecp.CallerPermitted(ctx, Permission(u.Name())) {
			return nil, protocol.Errorf(protocol.CodeAuthInsufficient, "this identity does not hold the permission %s", Permission(u.Name()))
		}
		if errs := validate(e.schema, call.Args); len(errs) > 0 {
			return nil, invalidArguments(e, errs)
		}
		res, err := u.Call(ctx, owner(ctx), e.original, call.Args)
		if err != nil {
			return nil, upstreamError(err)
		}
		text, truncated, total := shape(res, g.cfg.MaxResultBytes)
		if res.IsError {
			return nil, fail(CodeToolFailed, "read the message, fix the arguments or the situation, and call again",
				map[string]any{"upstream": u.Name(), "tool": e.original},
				"%s failed: %s", e.original, upstream.Sanitize(text, upstream.MaxMessage))
		}
		out := outcome(e, text, truncated, total)
		if read := known[e.original]; read != nil && !truncated {
			out.Assert = read(call.Args, text)
		}
		return out, nil
	}
}

func quote(s string) string { return fmt.Sprintf("%q", upstream.Truncate(s, 80)) }

// Permission is the permission an identity needs to use upstream name's
// tools: "upstream:NAME" (or "*").
func Permission(name string) string { return "upstream:" + name }

// owner is whom an upstream session belongs to: the caller's identity, or
// "" for anonymous callers (authentication off: one identity).
func owner(ctx context.Context) string {
	name, anonymous := manglecp.CallerIdentity(ctx)
	if anonymous {
		return ""
	}
	return "id:" + name
}

// maxSummaryText is the longest one-line answer that is the summary
// itself rather than a result.
const maxSummaryText = 300

// outcome is the answer of a call: a short one-line text is the summary
// (it says what happened, and a model reads it once), quoted and escaped
// after the tool's name (`move_file: "Successfully moved ..."`), so that
// an upstream's words are never the answer line itself and cannot leave
// their quotes; other text is the result's "text" (a JSON string where
// the model reads it), with truncated and total_bytes when it was cut.
func outcome(e *entry, text string, truncated bool, total int) *manglecp.Outcome {
	if !truncated && text != "" && len(text) <= maxSummaryText && !strings.Contains(text, "\n") {
		return &manglecp.Outcome{Summary: e.original + ": " + strconv.Quote(text), Result: map[string]any{}}
	}
	out := &manglecp.Outcome{Summary: e.original + ":", Result: map[string]any{"text": text}}
	if truncated {
		out.Result["truncated"] = true
		out.Result["total_bytes"] = total
	}
	return out
}
