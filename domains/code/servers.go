package code

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/manglecp/manglecp/internal/lsp"
)

// The languages the domain knows and the servers that serve them.

// Languages, by the name rules and clients use.
const (
	LangGo     = "go"
	LangPython = "python"
)

// langOf is the language of a file name, "" for none.
func langOf(name string) string {
	switch path.Ext(name) {
	case ".go":
		return LangGo
	case ".py", ".pyi":
		return LangPython
	}
	return ""
}

// Server is how to run the language server of one language.
type Server struct {
	// Name is the server's name ("gopls", "pyright", "pylsp").
	Name string
	// Command is the program and its arguments.
	Command []string
}

// FindServers looks for the language servers the domain can use on PATH
// (and gopls in $GOPATH/bin): gopls for Go; pyright-langserver, else
// pylsp, for Python. A language whose server is missing is left out.
func FindServers() map[string]Server {
	out := map[string]Server{}
	if p, err := exec.LookPath("gopls"); err == nil {
		out[LangGo] = Server{Name: "gopls", Command: []string{p}}
	} else if gp, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(gp))) {
			if p := filepath.Join(dir, "bin", "gopls"); isExecutable(p) {
				out[LangGo] = Server{Name: "gopls", Command: []string{p}}
				break
			}
		}
	}
	if p, err := exec.LookPath("pyright-langserver"); err == nil {
		out[LangPython] = Server{Name: "pyright", Command: []string{p, "--stdio"}}
	} else if p, err := exec.LookPath("pylsp"); err == nil {
		out[LangPython] = Server{Name: "pylsp", Command: []string{p}}
	}
	return out
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// installHint says how to install a language's server.
func installHint(lang string) string {
	switch lang {
	case LangGo:
		return "install gopls (go install golang.org/x/tools/gopls@latest) and put it on PATH"
	case LangPython:
		return "install pyright (npm install -g pyright) or python-lsp-server (apt-get install python3-pylsp) and put it on PATH"
	}
	return "no language server is known for it"
}

// spec is the lsp.Spec of lang's server on the domain's bounds.
func (c *Code) spec(lang string) (lsp.Spec, bool) {
	srv, ok := c.cfg.Servers[lang]
	if !ok || len(srv.Command) == 0 {
		return lsp.Spec{}, false
	}
	s := lsp.Spec{Language: lang, Name: srv.Name, Command: srv.Command, MaxMemory: c.cfg.MaxServerMemory,
		RequestTimeout: c.cfg.RequestTimeout, StartTimeout: c.cfg.StartTimeout}
	soft := c.cfg.MaxServerMemory * 3 / 4
	switch {
	case srv.Name == "gopls":
		// gopls reads its settings from the initialization options.
		s.InitializationOptions = map[string]any{"symbolScope": "workspace", "pullDiagnostics": true}
		s.Env = []string{fmt.Sprintf("GOMEMLIMIT=%d", soft), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}
	case srv.Name == "pyright":
		s.Env = []string{fmt.Sprintf("NODE_OPTIONS=--max-old-space-size=%d", soft>>20)}
		s.ReadyMessage = "source file" // "Found 7 source files"

		s.Settings = map[string]any{
			"python":          map[string]any{"analysis": map[string]any{"diagnosticMode": "openFilesOnly", "autoSearchPaths": true}},
			"python.analysis": map[string]any{"diagnosticMode": "openFilesOnly", "autoSearchPaths": true},
		}
	}
	return s, true
}

// rootLang is what the domain found of a language in a root when it
// opened it.
type rootLang struct {
	files     int
	truncated bool // the root holds more files than MaxFiles
	// modules are the directories (relative, sorted) of the Go modules
	// (go.mod) or workspace (go.work) below the root when the root itself
	// has neither: gopls is told of each as a workspace folder.
	modules []string
}

// maxModuleFolders bounds the Go module directories one gopls is told of.
const maxModuleFolders = 32

// detect counts each language's files in r, up to cfg.MaxFiles entries.
func (c *Code) detect(r *croot) map[string]rootLang {
	out := map[string]rootLang{}
	var mods []string
	atRoot := false
	truncated, _ := walkFiles(r, ".", c.cfg.MaxFiles, func(rel string, _ fs.DirEntry) error {
		if l := langOf(rel); l != "" {
			rl := out[l]
			rl.files++
			out[l] = rl
		}
		if name := path.Base(rel); (name == "go.mod" || name == "go.work") && !strings.Contains("/"+rel, "/testdata/") {
			dir := path.Dir(rel)
			if dir == "." {
				atRoot = true
			} else if len(mods) < maxModuleFolders && (len(mods) == 0 || !within(dir, mods[len(mods)-1])) {
				mods = append(mods, dir) // the walk is in lexical order: a module's own nested modules follow it
			}
		}
		return nil
	})
	if rl, ok := out[LangGo]; ok && !atRoot {
		rl.modules = mods
		out[LangGo] = rl
	}
	if truncated {
		for l, rl := range out {
			rl.truncated = true
			out[l] = rl
		}
	}
	return out
}

// Server states, as the external predicate code_language gives them.
const (
	stateRunning     = "running"
	stateAvailable   = "available" // installed, not started yet
	stateMissing     = "missing"   // no server installed
	stateFailed      = "failed"    // exited or failed to start; waiting for its backoff
	stateTooManyFile = "too_many_files"
)

// languageState is the state of lang's server for r.
func (c *Code) languageState(r *croot, lang string) string {
	rl := c.langs[r][lang]
	if _, ok := c.spec(lang); !ok {
		return stateMissing
	}
	if rl.truncated {
		return stateTooManyFile
	}
	st, _ := c.pool.State(poolKey(r, lang))
	switch st {
	case "running":
		return stateRunning
	case "failed":
		return stateFailed
	}
	return stateAvailable
}

func poolKey(r *croot, lang string) string { return r.name + "\x00" + lang }

// errPatience ends the wait of a request for a language server that is
// starting or busy (see patience).
var errPatience = errors.New("code: the request's patience ran out")

// retryAfter is the wait suggested (retry_after_ms) to a request that a
// starting or busy language server could not answer in time.
const retryAfter = 5 * time.Second

// patience is how long a request waits for a language server that is
// starting, loading the project or busy: until a margin before the
// request's deadline (the server's invocation timeout), so the request
// answers x-language_server_unavailable with retry_after_ms rather than
// running out of time (execution_failed); at most StartTimeout.
func (c *Code) patience(ctx context.Context) time.Duration {
	d := c.cfg.StartTimeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		d = min(d, left-max(left/10, time.Second))
	}
	return max(d, 0)
}

// patient returns ctx ended with the cause errPatience when the request's
// patience runs out (by c.after, the clock tests control); stop releases
// it.
func (c *Code) patient(ctx context.Context) (pctx context.Context, stop func()) {
	pctx, cancel := context.WithCancelCause(ctx)
	fire := c.after(c.patience(ctx))
	go func() {
		select {
		case <-fire:
			cancel(errPatience)
		case <-pctx.Done():
		}
	}()
	return pctx, func() { cancel(context.Canceled) }
}

// notYet is the answer to a request whose patience ran out: the server
// of lang is starting (or loading the project) or busy; retry later.
func (c *Code) notYet(lang, state string) error {
	what := "is still starting and loading the project"
	if state == "busy" {
		what = "is busy (it may still be analysing the project)"
	}
	c.log("language server not ready in time", "language", lang, "state", state)
	return fail(CodeServerUnavailable, fmt.Sprintf("retry after %d s; meanwhile find text with search", int(retryAfter/time.Second)),
		map[string]any{"language": lang, "reason": state},
		"the %s language server %s; retry in a few seconds", lang, what).WithRetryAfter(retryAfter.Milliseconds())
}

// server returns lang's running server for r, starting it when needed. A
// start outlives the request: when the request's patience runs out first,
// it answers x-language_server_unavailable (retryable) and the server
// goes on starting for the next request.
func (c *Code) server(ctx context.Context, r *croot, lang string) (*lsp.Server, error) {
	data := map[string]any{"language": lang}
	spec, ok := c.spec(lang)
	if !ok {
		data["reason"] = "not installed"
		return nil, fail(CodeServerUnavailable, installHint(lang)+"; meanwhile find text with search", data,
			"no %s language server is installed", lang)
	}
	if c.langs[r][lang].truncated {
		data["reason"] = "too many files"
		data["limit"] = c.cfg.MaxFiles
		return nil, fail(CodeServerUnavailable, "find text with search", data,
			"the root holds more than %d files, the bound for starting a language server", c.cfg.MaxFiles)
	}
	if srv := c.pool.Running(poolKey(r, lang)); srv != nil {
		return srv, nil
	}
	for _, m := range c.langs[r][lang].modules {
		spec.Folders = append(spec.Folders, r.dir+"/"+m)
	}
	pctx, stop := c.patient(ctx)
	srv, err := c.pool.Get(pctx, poolKey(r, lang), spec, r.dir)
	patienceOut := context.Cause(pctx) == errPatience
	stop()
	if err != nil {
		if patienceOut && ctx.Err() == nil {
			return nil, c.notYet(lang, "starting")
		}
		var be *lsp.BackoffError
		if errors.As(err, &be) {
			data["reason"] = "failed"
			return nil, fail(CodeServerUnavailable, "try again after "+be.Until.UTC().Format(time.RFC3339)+", or find text with search", data,
				"the %s language server failed and is started again after %s", lang, be.Until.UTC().Format(time.RFC3339))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		c.log("language server start failed", "language", lang, "error", err)
		data["reason"] = "start failed"
		return nil, fail(CodeServerUnavailable, "find text with search meanwhile", data, "the %s language server did not start", lang)
	}
	return srv, nil
}

// call makes a request to a server, turning its failures into the
// domain's error.
func (c *Code) call(ctx context.Context, r *croot, lang string, srv *lsp.Server, method string, params, result any) error {
	pctx, stop := c.patient(ctx)
	err := srv.Call(pctx, method, params, result)
	patienceOut := context.Cause(pctx) == errPatience
	stop()
	if err == nil {
		c.pool.Healthy(poolKey(r, lang))
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if patienceOut {
		return c.notYet(lang, "busy")
	}
	c.log("language server request failed", "language", lang, "method", method, "error", err)
	var re *lsp.ResponseError
	if errors.As(err, &re) {
		return &serverError{re: re, method: method, lang: lang}
	}
	return fail(CodeServerFailed, "try again; if it persists, find text with search", map[string]any{"language": lang, "method": method},
		"the %s language server did not answer %s", lang, method)
}

// serverError is an error a server answered; callers that know what it
// means (a refused rename) turn it into their own code.
type serverError struct {
	re     *lsp.ResponseError
	method string
	lang   string
}

func (e *serverError) Error() string { return e.re.Error() }

// asFailure is the domain error of a server's answer error.
func (e *serverError) asFailure() error {
	return fail(CodeServerFailed, "check the arguments; the language server refused them", map[string]any{"language": e.lang, "method": e.method, "reason": bounded(e.re.Message)},
		"the %s language server answered %s with an error: %s", e.lang, e.method, quote(e.re.Message))
}

// languages lists the languages found in r, sorted.
func (c *Code) languages(r *croot) []string {
	var out []string
	for l := range c.langs[r] {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

var (
	fileURI = lsp.FileURI
	uriPath = lsp.URIPath
)
