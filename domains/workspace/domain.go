// Package workspace is a MangleCP domain for working on files: it does the
// jobs of the reference MCP filesystem server (list, tree, find by name or
// content, file info, read text, several files or media, write, edit with
// a diff first, create directories, move, list the roots) inside a set of
// root directories the server is configured with.
//
// Clients declare an intent (explore, find, read, edit, reorganize) with
// facts about their situation: the focus path, the files mentioned, the
// kind of change wanted, the edit previews they saw. The rules (embedded,
// under rules/policy and rules/domain) decide which tools fit and bind
// their parameters to those paths; an external predicate tells the rules
// what each path is on disk (directory, text, media, binary, missing,
// outside every root).
//
// Every file access goes through [os.Root], so no path, "..", absolute
// path or symbolic link reaches outside a root. Paths are relative to
// their root and the server never shows its own absolute paths. Writes,
// edits, moves and new directories have side effect "filesystem", which
// the policy puts behind user confirmation; an edit is previewed as a
// unified diff before it is applied, and applied only if the file still
// has the digest the client saw. Failures are the domain's own error codes
// (see [Codes]), registered with the server's one registry.
package workspace

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/manglecp/manglecp"
)

//go:embed rules
var rules embed.FS

// ID is the domain id advertised in the manifest; domain error codes are
// listed under it in docs/errors.md.
const ID = "workspace"

// Default limits.
const (
	DefaultMaxReadBytes   = 256 << 10
	DefaultMaxMediaBytes  = 4 << 20
	DefaultMaxWriteBytes  = 4 << 20
	DefaultMaxEntries     = 1000
	DefaultMaxMatches     = 100
	DefaultMaxScanFiles   = 20000
	DefaultMaxWalkDepth   = 64
	DefaultMaxSearchBytes = 64 << 20
	DefaultMaxSearchTime  = 5 * time.Second
	DefaultEditTTL        = 10 * time.Minute
	DefaultMaxEditFiles   = 100
)

// Config configures the domain.
type Config struct {
	// Roots are the directories clients may access (at least one). A root
	// is named by its base name ("project" for /home/u/project); equal
	// base names get "-2", "-3" in order.
	Roots []string
	// MaxReadBytes caps the text one read returns per file (reads beyond
	// it are truncated and say so) and the size of a file an edit may
	// change. Default [DefaultMaxReadBytes].
	MaxReadBytes int64
	// MaxMediaBytes caps the size of a media file read as base64. Default
	// [DefaultMaxMediaBytes].
	MaxMediaBytes int64
	// MaxWriteBytes caps the content of a write. Default
	// [DefaultMaxWriteBytes].
	MaxWriteBytes int64
	// MaxEntries caps the entries a listing, tree or file search returns.
	// Default [DefaultMaxEntries].
	MaxEntries int
	// MaxMatches caps the lines a content search returns. Default
	// [DefaultMaxMatches].
	MaxMatches int
	// MaxScanFiles caps the entries (files and directories) a search or
	// tree visits. Default [DefaultMaxScanFiles].
	MaxScanFiles int
	// MaxWalkDepth caps the directory levels a search or tree descends
	// below its start: deeper directories are not entered and the answer
	// says truncated. Default [DefaultMaxWalkDepth].
	MaxWalkDepth int
	// MaxSearchBytes caps the bytes one content search reads in all; the
	// search stops before the file that would exceed it and says so.
	// Default [DefaultMaxSearchBytes].
	MaxSearchBytes int64
	// MaxSearchTime caps the wall time of one content search; it then
	// stops reading and answers with what it found, saying so. Default
	// [DefaultMaxSearchTime].
	MaxSearchTime time.Duration
	// EditKey signs the edit ids preview_edit issues (HMAC-SHA256): only
	// an id signed with it lets apply_edit write. Empty: a random key made
	// by Open, so ids do not survive a restart. Replicas serving the same
	// roots behind one address must share it (e.g. the server's
	// confirmation key).
	EditKey []byte
	// EditTTL is how long an edit id stays valid after its preview, by
	// the server's clock. Default [DefaultEditTTL].
	EditTTL time.Duration
	// MaxEditFiles caps the files one edit plan (a multi-file preview,
	// a replace across a glob, [Workspace.Preview]) may change. Default
	// [DefaultMaxEditFiles].
	MaxEditFiles int
}

// Workspace holds the open roots. Its methods are safe for concurrent use.
type Workspace struct {
	cfg     Config
	roots   []*root
	editKey []byte
	now     func() time.Time // the server's clock for edit ids
	plans   planStore        // previewed plans waiting for apply_edit
}

type root struct {
	name string
	fs   *os.Root
}

// Rules returns the embedded rule files (policy/ and domain/).
func Rules() fs.FS {
	sub, _ := fs.Sub(rules, "rules")
	return sub
}

// Open opens the roots of cfg. It fails, naming the root, when one is not
// an existing directory.
func Open(cfg Config) (*Workspace, error) {
	if len(cfg.Roots) == 0 {
		return nil, errors.New("workspace: at least one root directory is needed")
	}
	if cfg.MaxReadBytes <= 0 {
		cfg.MaxReadBytes = DefaultMaxReadBytes
	}
	if cfg.MaxMediaBytes <= 0 {
		cfg.MaxMediaBytes = DefaultMaxMediaBytes
	}
	if cfg.MaxWriteBytes <= 0 {
		cfg.MaxWriteBytes = DefaultMaxWriteBytes
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.MaxMatches <= 0 {
		cfg.MaxMatches = DefaultMaxMatches
	}
	if cfg.MaxScanFiles <= 0 {
		cfg.MaxScanFiles = DefaultMaxScanFiles
	}
	if cfg.MaxWalkDepth <= 0 {
		cfg.MaxWalkDepth = DefaultMaxWalkDepth
	}
	if cfg.MaxSearchBytes <= 0 {
		cfg.MaxSearchBytes = DefaultMaxSearchBytes
	}
	if cfg.MaxSearchTime <= 0 {
		cfg.MaxSearchTime = DefaultMaxSearchTime
	}
	if cfg.MaxEditFiles <= 0 {
		cfg.MaxEditFiles = DefaultMaxEditFiles
	}
	if cfg.EditTTL <= 0 {
		cfg.EditTTL = DefaultEditTTL
	}
	w := &Workspace{cfg: cfg, now: time.Now, editKey: append([]byte(nil), cfg.EditKey...)}
	if len(w.editKey) == 0 {
		w.editKey = make([]byte, 32)
		rand.Read(w.editKey)
	}
	used := map[string]bool{}
	for _, dir := range cfg.Roots {
		st, err := os.Stat(dir)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace: root %s: %w", dir, err)
		}
		if !st.IsDir() {
			w.Close()
			return nil, fmt.Errorf("workspace: root %s is not a directory", dir)
		}
		r, err := os.OpenRoot(dir)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace: root %s: %w", dir, err)
		}
		name := rootName(dir)
		for i := 2; used[name]; i++ {
			name = fmt.Sprintf("%s-%d", rootName(dir), i)
		}
		used[name] = true
		w.roots = append(w.roots, &root{name: name, fs: r})
	}
	return w, nil
}

// rootName is the name clients use for a root directory.
func rootName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	name := filepath.Base(abs)
	if name == "" || name == "." || name == string(filepath.Separator) || strings.ContainsAny(name, "/\\") {
		return "root"
	}
	return name
}

// RootNames returns the names clients use for the roots, in configuration
// order.
func (w *Workspace) RootNames() []string {
	out := make([]string, len(w.roots))
	for i, r := range w.roots {
		out[i] = r.name
	}
	return out
}

// Close closes the roots.
func (w *Workspace) Close() error {
	var errs []error
	for _, r := range w.roots {
		errs = append(errs, r.fs.Close())
	}
	return errors.Join(errs...)
}

// Domain returns the workspace domain with its embedded rules, actions,
// external predicate and error codes. Replace Domain.Rules (e.g. with
// os.DirFS) to serve edited rules.
func (w *Workspace) Domain() manglecp.Domain {
	a := &actions{w: w}
	return manglecp.Domain{
		ID:          ID,
		Description: "Files in the server's root directories: explore, find, read, edit with a diff first, and reorganize, confined to the roots.",
		Categories:  []string{"filesystem", "coding"},
		Rules:       Rules(),
		RulesName:   "workspace",
		Actions: map[string]manglecp.ActionSpec{
			"list_roots":    {Run: a.listRoots},
			"list_dir":      {Run: a.listDir},
			"tree":          {Run: a.tree},
			"file_info":     {Run: a.fileInfo},
			"search":        {Run: a.search},
			"read_file":     {Run: a.readFile},
			"read_files":    {Run: a.readFiles},
			"read_media":    {Run: a.readMedia},
			"preview_edit":  {Run: a.previewEdit},
			"apply_edit":    {Run: a.applyEdit},
			"preview_edits": {Run: a.previewEdits},
			"replace":       {Run: a.replaceAcross},
			"write_file":    {Run: a.writeFile},
			"move":          {Run: a.move},
			"create_dir":    {Run: a.createDir},
		},
		External: map[string]manglecp.External{
			"entry": {
				Arity:         2,
				Description:   "entry(Path, Kind): what a path of a focus, mentioned or previewed fact is on disk: dir, text, media, binary, missing or outside (not a valid path inside a root). Reads the file system, so it is not deterministic.",
				Deterministic: false,
				Compute:       a.entries,
			},
			"signed_edit": {
				Arity:         4,
				Description:   "signed_edit(Edit, Path, Diff, Until): a previewed fact whose edit id this server issued for that path, change and diff, unexpired by the server's clock; Until is its expiry in Unix nanoseconds. A previewed fact a client made itself gives none.",
				Deterministic: false,
				Compute:       a.signedEdits,
			},
			"root_count": {
				Arity:         1,
				Description:   "root_count(N): the number of root directories the server may access.",
				Deterministic: true,
				Compute: func(context.Context, *manglecp.ExternalInput) ([][]any, error) {
					return [][]any{{int64(len(w.roots))}}, nil
				},
			},
		},
		Codes: Codes(),
	}
}
