package testapp

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// JobNames returns the names of the apps of the multi-step jobs of
// issue 28, each a directory under domains/browser/testdata/jobs that
// [Dir] finds and [Serve] serves; the token measurement (tools/tokens,
// serveDir in lib.mjs) serves the same directories. The slice is new at
// each call.
func JobNames() []string {
	return []string{"login", "signup", "docs", "catalog", "orders"}
}

// Route is a path an app's app.json declares the server answers
// specially (for example a data request that fails): the status, the
// Content-Type and the body of every answer to it, whatever the method.
type Route struct {
	Status int    `json:"status"`
	Type   string `json:"type"`
	Body   string `json:"body"`
}

// Dir returns the directory of the job app name
// (domains/browser/testdata/jobs/name of the module), found from this
// package's source file, or from the working directory upwards when the
// build trimmed source paths, so it works from any test's working
// directory. It does not check that the app exists.
func Dir(name string) string {
	return filepath.Join(moduleRoot(), "domains", "browser", "testdata", "jobs", name)
}

// moduleRoot is the module's root directory: three levels above this
// file (domains/browser/internal/testapp), or the nearest directory
// holding go.mod above the working directory.
func moduleRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
	}
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// Serve serves the static app of dir on a loopback httptest server,
// closed when the test ends. It answers GET and HEAD with the files of dir
// and its subdirectories ("/" is index.html), by their extension's
// Content-Type; the routes of dir/app.json (`{"routes": {"/path":
// Route}}`) with their fixed answer. An HTML page may name a layout it is
// served in (withLayout). A directory, app.json itself, a
// path with "." or ".." elements and a path leaving dir (also through a
// symbolic link) answer 404; other methods 405. A missing dir or a bad
// app.json fails the test at once.
func Serve(t testing.TB, dir string) *httptest.Server {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatalf("testapp: %v", err)
	}
	h, err := handler(root)
	if err != nil {
		root.Close()
		t.Fatalf("testapp: %s: %v", dir, err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		root.Close()
	})
	return ts
}

// handler builds the handler of [Serve] on root, which must stay open
// as long as the handler is used.
func handler(root *os.Root) (http.Handler, error) {
	var cfg struct {
		Routes map[string]Route `json:"routes"`
	}
	switch b, err := root.ReadFile("app.json"); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, errors.New("app.json: " + err.Error())
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt, ok := cfg.Routes[r.URL.Path]; ok {
			w.Header().Set("Content-Type", rt.Type)
			w.WriteHeader(rt.Status)
			_, _ = w.Write([]byte(rt.Body))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name == "" {
			name = "index.html"
		}
		if !fs.ValidPath(name) || name == "app.json" || strings.Contains(name, `\`) {
			http.NotFound(w, r)
			return
		}
		b, err := fs.ReadFile(root.FS(), name)
		if err == nil {
			b, err = withLayout(root.FS(), name, b)
		}
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType(name))
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	}), nil
}

// layoutLine starts a page that is served inside a layout.
const layoutLine = "<!-- layout: "

// withLayout is page name as served: a page whose first line is
// "<!-- layout: FILE -->" (FILE in the same directory) is FILE with
// {{title}} replaced by the page's second line, {{content}} by the rest
// (without its last newline), and the page's own link in the layout's
// <nav> (href="NAME", NAME the page's file name) marked
// aria-current="page", as a site generator writes every page of a site
// with one navigation. Any other file is served as it is. serveDir in
// tools/tokens/lib.mjs does the same.
func withLayout(fsys fs.FS, name string, page []byte) ([]byte, error) {
	first, rest, ok := strings.Cut(string(page), "\n")
	file, isPage := strings.CutPrefix(first, layoutLine)
	file, closed := strings.CutSuffix(file, " -->")
	if !ok || !isPage || !closed {
		return page, nil
	}
	layout, err := fs.ReadFile(fsys, path.Join(path.Dir(name), file))
	if err != nil {
		return nil, err
	}
	title, content, _ := strings.Cut(rest, "\n")
	out := string(layout)
	link := `<a href="` + path.Base(name) + `">`
	if nav := strings.Index(out, "<nav"); nav >= 0 {
		if i := strings.Index(out[nav:], link); i >= 0 {
			i += nav + len(link) - 1
			out = out[:i] + ` aria-current="page"` + out[i:]
		}
	}
	out = strings.Replace(out, "{{title}}", title, 1)
	return []byte(strings.Replace(out, "{{content}}", strings.TrimSuffix(content, "\n"), 1)), nil
}

// contentType is the Content-Type of an app file by its extension.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".json":
		return "application/json"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".ico":
		return "image/x-icon"
	}
	return "application/octet-stream"
}
