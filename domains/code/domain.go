// Package code is a MangleCP domain for working on source code with real
// language servers (gopls for Go; pyright or python-lsp-server for
// Python): find a symbol and its references, rename a symbol across the
// project, move a Go package or a Python module with its imports updated,
// organise imports, and show diagnostics after an edit. It keeps every job
// of the workspace domain (list, search, read, edit, move files), whose
// rules and actions it composes with its own.
//
// A language server is started lazily, one per root and language, the
// first time a tool needs it; it is supervised by an [lsp.Pool] (started
// again after a crash, after a backoff), bounded (its memory, the time of
// each request, the number of files of the root) and killed with its
// process group when the domain closes. Without a server for a language
// the manifest says so (extension x-code) and the rules offer text search
// instead.
//
// A rename, move or import organisation is previewed as one unified diff
// over every file it changes; apply_code_edit, behind the user's
// confirmation, writes all of it or nothing, then shows the diagnostics
// of the changed files. Every file the domain reads or writes goes
// through os.Root: a language server's answer naming a file outside the
// root is never read nor edited.
package code

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/internal/lsp"
	"github.com/manglecp/manglecp/protocol"
)

//go:embed rules
var rules embed.FS

// ID is the domain id advertised in the manifest.
const ID = "code"

// Defaults of [Config].
const (
	DefaultMaxFiles        = 20000
	DefaultMaxServerMemory = 2 << 30
	DefaultRequestTimeout  = 30 * time.Second
	DefaultStartTimeout    = 60 * time.Second
	DefaultMaxEditFiles    = 200
	DefaultMaxFileBytes    = 1 << 20
	DefaultMaxResults      = 200
	DefaultEditTTL         = 10 * time.Minute
	DefaultDiagnosticsWait = 20 * time.Second
)

// Config configures the domain.
type Config struct {
	// Roots are the directories clients may access (at least one), named
	// as the workspace domain names them.
	Roots []string
	// Servers are the language servers by language (LangGo, LangPython).
	// Nil: [FindServers]. A language without one falls back to text.
	Servers map[string]Server
	// MaxFiles bounds the files (and directories) of a root a language
	// server is started on. Default [DefaultMaxFiles].
	MaxFiles int
	// MaxServerMemory bounds a server's resident memory: over it the
	// server is killed (and started again after a backoff); three
	// quarters of it is the server's own soft limit (GOMEMLIMIT for gopls,
	// Node's heap limit for pyright). Default [DefaultMaxServerMemory].
	MaxServerMemory int64
	// RequestTimeout bounds each request to a server. Default
	// [DefaultRequestTimeout].
	RequestTimeout time.Duration
	// StartTimeout bounds a server's start. Default [DefaultStartTimeout].
	StartTimeout time.Duration
	// MaxEditFiles bounds the files one previewed change may touch.
	// Default [DefaultMaxEditFiles].
	MaxEditFiles int
	// MaxFileBytes bounds the size of a file a change edits. Default
	// [DefaultMaxFileBytes].
	MaxFileBytes int64
	// MaxResults bounds the symbols, references and diagnostics one answer
	// lists. Default [DefaultMaxResults].
	MaxResults int
	// EditTTL is how long a previewed change can be applied. Default
	// [DefaultEditTTL].
	EditTTL time.Duration
	// DiagnosticsWait bounds the wait for a server's diagnostics after an
	// edit. Default [DefaultDiagnosticsWait].
	DiagnosticsWait time.Duration
	// Workspace configures the workspace domain's jobs (its Roots are
	// those above).
	Workspace workspace.Config
	// Logger logs what clients are not told (a server's failure). Nil:
	// slog.Default().
	Logger *slog.Logger
}

// Code is the open domain. Its methods are safe for concurrent use.
type Code struct {
	cfg     Config
	ws      *workspace.Workspace
	roots   []*croot
	langs   map[*croot]map[string]rootLang
	pool    lsp.Pool
	pending pendingEdits
	now     func() time.Time
	// after is the clock of a request's patience (see patience): tests
	// replace it to end a wait without waiting.
	after func(time.Duration) <-chan time.Time
}

// Rules returns the domain's rule files: the workspace domain's and the
// code domain's own (domain/code_*.mg).
func Rules() fs.FS {
	sub, _ := fs.Sub(rules, "rules")
	return overlay{workspace.Rules(), sub}
}

// Open opens the roots, finds the languages in each, and prepares (does
// not start) their language servers.
func Open(cfg Config) (*Code, error) {
	if len(cfg.Roots) == 0 {
		return nil, errors.New("code: at least one root directory is needed")
	}
	if cfg.Servers == nil {
		cfg.Servers = FindServers()
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
	}
	if cfg.MaxServerMemory <= 0 {
		cfg.MaxServerMemory = DefaultMaxServerMemory
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.MaxEditFiles <= 0 {
		cfg.MaxEditFiles = DefaultMaxEditFiles
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxResults <= 0 {
		cfg.MaxResults = DefaultMaxResults
	}
	if cfg.EditTTL <= 0 {
		cfg.EditTTL = DefaultEditTTL
	}
	if cfg.DiagnosticsWait <= 0 {
		cfg.DiagnosticsWait = DefaultDiagnosticsWait
	}
	wcfg := cfg.Workspace
	wcfg.Roots = cfg.Roots
	ws, err := workspace.Open(wcfg)
	if err != nil {
		return nil, err
	}
	c := &Code{cfg: cfg, ws: ws, langs: map[*croot]map[string]rootLang{}, now: time.Now, after: time.After}
	c.pool.Now = func() time.Time { return c.now() }
	for i, name := range ws.RootNames() {
		abs, err := filepath.Abs(cfg.Roots[i])
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("code: root %s: %w", cfg.Roots[i], err)
		}
		r, err := os.OpenRoot(abs)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("code: root %s: %w", cfg.Roots[i], err)
		}
		cr := &croot{name: name, dir: abs, fs: r}
		c.roots = append(c.roots, cr)
		c.langs[cr] = c.detect(cr)
	}
	return c, nil
}

// Close stops the language servers and closes the roots.
func (c *Code) Close() error {
	errs := []error{c.pool.Close()}
	for _, r := range c.roots {
		errs = append(errs, r.fs.Close())
	}
	if c.ws != nil {
		errs = append(errs, c.ws.Close())
	}
	return errors.Join(errs...)
}

func (c *Code) log(msg string, args ...any) {
	l := c.cfg.Logger
	if l == nil {
		l = slog.Default()
	}
	l.Warn("code: "+msg, args...)
}

// Domain returns the code domain: the workspace domain's rules, actions,
// external predicates and codes with the code domain's own.
func (c *Code) Domain() manglecp.Domain {
	d := c.ws.Domain()
	d.ID = ID
	d.Description = "Source code in the server's root directories on real language servers: symbols and references, renames, moves with imports updated, organised imports and diagnostics, plus every file job of the workspace domain."
	d.Categories = []string{"coding", "filesystem"}
	d.Rules = Rules()
	d.RulesName = "code"
	d.Codes = Codes()
	a := &actions{c: c}
	for name, spec := range map[string]manglecp.ActionSpec{
		"find_symbol":      {Run: a.findSymbol},
		"rename_symbol":    {Run: a.renameSymbol},
		"move_code":        {Run: a.moveCode},
		"organize_imports": {Run: a.organizeImports},
		"diagnostics":      {Run: a.diagnostics},
		"apply_code_edit":  {Run: a.applyCodeEdit},
	} {
		d.Actions[name] = spec
	}
	d.External["code_language"] = manglecp.External{
		Arity:       2,
		Description: "code_language(Language, State): a language with files in a root (go, python) and the state of its language server: running, available (installed, not started), missing (none installed), failed (waiting to start again) or too_many_files.",
		Compute:     a.codeLanguages,
	}
	d.External["code_entry"] = manglecp.External{
		Arity:       3,
		Description: "code_entry(Path, Language, Kind): for each path of a mentioned fact, its language (go, python or none) and kind (file, dir, missing, outside). A Go directory holds .go files; a Python directory holds .py files.",
		Compute:     a.codeEntries,
	}
	d.External["open_code_edit"] = manglecp.External{
		Arity:       3,
		Description: "open_code_edit(Handle, Diff, Until): a code_previewed fact whose handle this server issued with that diff, unexpired by the server's clock (Until in Unix nanoseconds).",
		Compute:     a.openCodeEdits,
	}
	d.Extensions = map[string]any{"x-code": c.manifestExtension()}
	inner := d.Close
	d.Close = func() error {
		err := c.Close()
		if inner != nil {
			err = errors.Join(err, inner())
		}
		return err
	}
	return d
}

// manifestExtension describes the languages found and their servers, so
// that a client learns at once when a language falls back to text.
func (c *Code) manifestExtension() map[string]any {
	langs := map[string]any{}
	var warnings []string
	for _, r := range c.roots {
		for _, l := range c.languages(r) {
			st := c.languageState(r, l)
			e := map[string]any{"state": st, "files": c.langs[r][l].files}
			if s, ok := c.cfg.Servers[l]; ok {
				e["server"] = s.Name
			}
			switch st {
			case stateMissing:
				w := fmt.Sprintf("no %s language server is installed: symbols, renames, moves and diagnostics fall back to text search; %s", l, installHint(l))
				e["warning"] = w
				warnings = append(warnings, w)
			case stateTooManyFile:
				w := fmt.Sprintf("the root holds more than %d files, the bound for starting a language server: %s falls back to text search", c.cfg.MaxFiles, l)
				e["warning"] = w
				warnings = append(warnings, w)
			}
			key := l
			if len(c.roots) > 1 {
				key = r.name + "/" + l
			}
			langs[key] = e
		}
	}
	out := map[string]any{"languages": langs}
	if len(warnings) > 0 {
		sort.Strings(warnings)
		out["warnings"] = warnings
	}
	return out
}

// Domain opens cfg and returns its domain; its Close closes it.
func Domain(cfg Config) (manglecp.Domain, error) {
	c, err := Open(cfg)
	if err != nil {
		return manglecp.Domain{}, err
	}
	return c.Domain(), nil
}

type actions struct {
	c *Code
}

// codeLanguages computes code_language for every language of every root.
func (a *actions) codeLanguages(_ context.Context, _ *manglecp.ExternalInput) ([][]any, error) {
	seen := map[[2]string]bool{}
	var out [][]any
	for _, r := range a.c.roots {
		for _, l := range a.c.languages(r) {
			k := [2]string{l, a.c.languageState(r, l)}
			if !seen[k] {
				seen[k] = true
				out = append(out, []any{k[0], k[1]})
			}
		}
	}
	return out, nil
}

// codeEntries computes code_entry for the paths of mentioned facts.
func (a *actions) codeEntries(_ context.Context, in *manglecp.ExternalInput) ([][]any, error) {
	var out [][]any
	seen := map[string]bool{}
	for _, f := range in.Facts {
		if f.Pred != "mentioned" || len(f.Args) != 1 {
			continue
		}
		p, ok := f.Args[0].(string)
		if !ok || seen[p] || len(seen) >= 64 {
			continue
		}
		seen[p] = true
		lang, kind := a.c.entry(p)
		out = append(out, []any{p, lang, kind})
	}
	return out, nil
}

// entry is a path's language and kind for code_entry.
func (c *Code) entry(p string) (lang, kind string) {
	l, err := c.resolve(p)
	if err != nil || l.root == nil {
		return "none", "outside"
	}
	st, err := l.root.fs.Stat(l.rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return orNone(langOf(l.rel)), "missing"
	case err != nil:
		return "none", "outside"
	case st.IsDir():
		return orNone(c.dirLang(l)), "dir"
	}
	return orNone(langOf(l.rel)), "file"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// dirLang is the language of the files directly in a directory: go when
// it holds a .go file, python when it holds a .py file.
func (c *Code) dirLang(l loc) string {
	f, err := l.root.fs.Open(l.rel)
	if err != nil {
		return ""
	}
	defer f.Close()
	names, _ := f.Readdirnames(1024)
	sort.Strings(names)
	lang := ""
	for _, n := range names {
		switch langOf(n) {
		case LangGo:
			return LangGo
		case LangPython:
			lang = LangPython
		}
	}
	return lang
}

// facts of a kind from a call.
func factsOf(facts []protocol.Fact, pred string) []protocol.Fact {
	var out []protocol.Fact
	for _, f := range facts {
		if f.Pred == pred {
			out = append(out, f)
		}
	}
	return out
}
