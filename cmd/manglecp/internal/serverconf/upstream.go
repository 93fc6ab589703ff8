package serverconf

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/gateway"
	"github.com/manglecp/manglecp/upstream"
)

// UpstreamFlags are serve's flags for upstream MCP servers (a stable
// contract): --upstream NAME=COMMAND or NAME=URL (repeatable),
// --upstream-config FILE (the same with environment, working directory,
// pack and laziness per upstream), --upstream-lazy, --upstream-timeout,
// --upstream-max-result. With any upstream, serve serves the gateway
// domain and --rules DIR is its rule pack.
type UpstreamFlags struct {
	specs       upstreamList
	file        string
	lazy        bool
	callTimeout time.Duration
	maxResult   int

	gw *gateway.Gateway // set by Gateway
}

// upstreamList collects repeated --upstream flags.
type upstreamList []string

func (l *upstreamList) String() string { return strings.Join(*l, " ") }

// Set adds an --upstream.
func (l *upstreamList) Set(s string) error {
	if _, _, ok := strings.Cut(s, "="); !ok {
		return fmt.Errorf("want NAME=COMMAND or NAME=URL")
	}
	*l = append(*l, s)
	return nil
}

// AddUpstreamFlags registers the upstream flags on fs.
func AddUpstreamFlags(fs *flag.FlagSet) *UpstreamFlags {
	u := &UpstreamFlags{}
	fs.Var(&u.specs, "upstream", "an upstream MCP server served through the gateway domain: NAME=COMMAND ARGS... (stdio; arguments split at spaces) or NAME=http(s)://URL (streamable HTTP); repeat for several")
	fs.StringVar(&u.file, "upstream-config", "", "JSON file of upstream MCP servers with env, dir, pack and lazy per upstream (docs/gateway.md)")
	fs.BoolVar(&u.lazy, "upstream-lazy", false, "start --upstream commands on their first call (their tools are listed at start, then they stop)")
	fs.DurationVar(&u.callTimeout, "upstream-timeout", upstream.DefaultCallTimeout, "how long one upstream tool call may take")
	fs.IntVar(&u.maxResult, "upstream-max-result", gateway.DefaultMaxResultBytes, "bytes of an upstream tool's answer passed on; the rest is cut, saying so")
	return u
}

// Enabled reports whether any upstream is configured.
func (u *UpstreamFlags) Enabled() bool { return len(u.specs) > 0 || u.file != "" }

// UpstreamFile is the --upstream-config file.
type UpstreamFile struct {
	Upstreams []UpstreamEntry `json:"upstreams"`
}

// UpstreamEntry is one upstream of the --upstream-config file.
type UpstreamEntry struct {
	Name    string            `json:"name"`
	Command []string          `json:"command,omitempty"`
	URL     string            `json:"url,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Dir     string            `json:"dir,omitempty"`
	Lazy    *bool             `json:"lazy,omitempty"`
	Pack    string            `json:"pack,omitempty"`
	// PassEnv names variables of the server's environment the command
	// gets beside the base ones (upstream.BaseEnv) and Env.
	PassEnv []string `json:"pass_env,omitempty"`
	// Shared declares the upstream stateless: one session serves every
	// identity (by default each identity has its own).
	Shared bool `json:"shared,omitempty"`
	// MaxSessions and IdleTimeout (a Go duration) bound the identities'
	// sessions of a per-identity upstream.
	MaxSessions int    `json:"max_sessions,omitempty"`
	IdleTimeout string `json:"idle_timeout,omitempty"`
	// CallTimeout is a Go duration ("30s"); default --upstream-timeout.
	CallTimeout string `json:"call_timeout,omitempty"`
}

// Upstreams returns the upstreams the flags and the file configure.
func (u *UpstreamFlags) Upstreams() ([]gateway.Upstream, error) {
	var out []gateway.Upstream
	for _, s := range u.specs {
		name, target, _ := strings.Cut(s, "=")
		c := upstream.Config{Name: name, Lazy: u.lazy, CallTimeout: u.callTimeout}
		if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
			c.URL = target
		} else {
			c.Command = strings.Fields(target)
		}
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("--upstream: %w", err)
		}
		out = append(out, gateway.Upstream{Config: c})
	}
	if u.file != "" {
		raw, err := os.ReadFile(u.file)
		if err != nil {
			return nil, fmt.Errorf("--upstream-config: %w", err)
		}
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		var f UpstreamFile
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("--upstream-config %s: %w", u.file, err)
		}
		for _, e := range f.Upstreams {
			c := upstream.Config{Name: e.Name, Command: e.Command, URL: e.URL, Dir: e.Dir, Lazy: u.lazy, CallTimeout: u.callTimeout,
				PassEnv: e.PassEnv, Shared: e.Shared, MaxSessions: e.MaxSessions}
			if e.MaxSessions < 0 {
				return nil, fmt.Errorf("--upstream-config %s: upstream %s: max_sessions %d is negative", u.file, e.Name, e.MaxSessions)
			}
			if e.IdleTimeout != "" {
				d, err := time.ParseDuration(e.IdleTimeout)
				if err != nil || d <= 0 {
					return nil, fmt.Errorf("--upstream-config %s: upstream %s: idle_timeout %q is not a positive duration", u.file, e.Name, e.IdleTimeout)
				}
				c.IdleTimeout = d
			}
			if e.Lazy != nil {
				c.Lazy = *e.Lazy
			}
			if e.CallTimeout != "" {
				d, err := time.ParseDuration(e.CallTimeout)
				if err != nil || d <= 0 {
					return nil, fmt.Errorf("--upstream-config %s: upstream %s: call_timeout %q is not a positive duration", u.file, e.Name, e.CallTimeout)
				}
				c.CallTimeout = d
			}
			keys := make([]string, 0, len(e.Env))
			for k := range e.Env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				c.Env = append(c.Env, k+"="+e.Env[k])
			}
			if err := c.Check(); err != nil {
				return nil, fmt.Errorf("--upstream-config %s: %w", u.file, err)
			}
			out = append(out, gateway.Upstream{Config: c, Pack: e.Pack})
		}
	}
	return out, nil
}

// Gateway starts the upstreams and returns the gateway domain serving
// them, with the rule pack of *rulesDir (then cleared: the gateway
// assembles its rules itself, and SIGHUP reloads them as assembled).
func (u *UpstreamFlags) Gateway(ctx context.Context, rulesDir *string, logger *slog.Logger) (manglecp.Domain, error) {
	ups, err := u.Upstreams()
	if err != nil {
		return manglecp.Domain{}, err
	}
	cfg := gateway.Config{Upstreams: ups, MaxResultBytes: u.maxResult, Logger: logger}
	if *rulesDir != "" {
		cfg.Rules, cfg.RulesName = os.DirFS(*rulesDir), *rulesDir
		*rulesDir = ""
	}
	g, err := gateway.Open(ctx, cfg)
	if err != nil {
		return manglecp.Domain{}, err
	}
	u.gw = g
	return g.Domain(), nil
}

// Loaded connects the gateway to the loaded server: an upstream down at
// start joins with its tools when it comes up (the rules reloaded).
func (u *UpstreamFlags) Loaded(srv *manglecp.Server) {
	if u != nil && u.gw != nil {
		u.gw.SetReload(srv.Reload)
	}
}
