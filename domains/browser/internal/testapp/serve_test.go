package testapp_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/domains/browser/internal/testapp"
)

// get sends one raw request for target (sent as written: no cleaning,
// no escaping) to the test server and returns the status, Content-Type
// and body.
func get(t *testing.T, base, method, target string) (int, string, string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", method, target, u.Host); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestServeJobs: each job app serves its entry page and data, with the
// Content-Type of the file's extension.
func TestServeJobs(t *testing.T) {
	for _, tc := range []struct {
		app, path, ctype, want string
	}{
		{"login", "/login.html", "text/html; charset=utf-8", "<label for=\"email\">Email</label>"},
		{"login", "/dashboard.js", "text/javascript; charset=utf-8", "Failed to load notifications: "},
		{"login", "/api/accounts.json", "application/json", `"account": "Globex"`},
		{"signup", "/signup.html", "text/html; charset=utf-8", "Step 1 of 2"},
		{"docs", "/", "text/html; charset=utf-8", "<title>Relay documentation"},
		{"docs", "/session-limits.html", "text/html; charset=utf-8", "max_sessions_per_identity defaults to 2"},
		{"catalog", "/products.html", "text/html; charset=utf-8", "Search products"},
		{"catalog", "/api/products.json", "application/json", `"name": "Trail Runner 2", "category": "Footwear"`},
		{"orders", "/orders.html", "text/html; charset=utf-8", "<caption>Orders</caption>"},
		{"orders", "/style.css", "text/css; charset=utf-8", "border-collapse"},
	} {
		t.Run(tc.app+tc.path, func(t *testing.T) {
			ts := testapp.Serve(t, testapp.Dir(tc.app))
			status, ctype, body := get(t, ts.URL, "GET", tc.path)
			if status != http.StatusOK || ctype != tc.ctype || !strings.Contains(body, tc.want) {
				t.Fatalf("GET %s: %d %q, body has %q: %v", tc.path, status, ctype, tc.want, strings.Contains(body, tc.want))
			}
		})
	}
}

// TestServeRoute: the route app.json declares answers with its status,
// type and body whatever the method; HEAD of a file has no body.
func TestServeRoute(t *testing.T) {
	ts := testapp.Serve(t, testapp.Dir("login"))
	for _, method := range []string{"GET", "POST"} {
		status, ctype, body := get(t, ts.URL, method, "/api/notifications")
		if status != http.StatusInternalServerError || ctype != "application/json" || body != `{"error":"notification service timed out"}` {
			t.Fatalf("%s /api/notifications: %d %q %q", method, status, ctype, body)
		}
	}
	if status, _, body := get(t, ts.URL, "HEAD", "/login.html"); status != http.StatusOK || body != "" {
		t.Fatalf("HEAD /login.html: %d %q", status, body)
	}
}

// TestServeRefuses: no path leaves the app's directory, none lists a
// directory or shows app.json, and files answer only GET and HEAD.
func TestServeRefuses(t *testing.T) {
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	for name, content := range map[string]string{
		"secret.txt":     "outside the app",
		"app/index.html": "<title>in</title>",
		"app/app.json":   `{"routes": {}}`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(app, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(app, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	ts := testapp.Serve(t, app)
	if status, _, body := get(t, ts.URL, "GET", "/"); status != http.StatusOK || body != "<title>in</title>" {
		t.Fatalf("GET /: %d %q", status, body)
	}
	for _, tc := range []struct {
		method, target string
		status         int
	}{
		{"GET", "/../secret.txt", http.StatusNotFound},
		{"GET", "/%2e%2e/secret.txt", http.StatusNotFound},
		{"GET", "/sub/../../secret.txt", http.StatusNotFound},
		{"GET", "/sub%2f..%2f..%2fsecret.txt", http.StatusNotFound},
		{"GET", "/link.txt", http.StatusNotFound},
		{"GET", "/./index.html", http.StatusNotFound},
		{"GET", "//index.html", http.StatusNotFound},
		{"GET", `/..\secret.txt`, http.StatusNotFound},
		{"GET", "/sub", http.StatusNotFound},
		{"GET", "/sub/", http.StatusNotFound},
		{"GET", "/app.json", http.StatusNotFound},
		{"GET", "/missing.html", http.StatusNotFound},
		{"POST", "/index.html", http.StatusMethodNotAllowed},
		{"DELETE", "/index.html", http.StatusMethodNotAllowed},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			status, _, body := get(t, ts.URL, tc.method, tc.target)
			if status != tc.status || strings.Contains(body, "outside the app") || strings.Contains(body, "routes") {
				t.Fatalf("%d %q, want %d", status, body, tc.status)
			}
		})
	}
}

// refs finds the local references of an app's pages and scripts: href
// and src attributes, and the string literal a fetch asks for.
var refs = regexp.MustCompile(`(?:href|src)="([^"]*)"|fetch\("([^"]*)"\)`)

// TestJobLinksResolve: every local link, script, style sheet and fetch
// of every job app answers (a broken link would leave a job undoable);
// the fetch that fails on purpose is the route of app.json.
func TestJobLinksResolve(t *testing.T) {
	for _, name := range testapp.JobNames() {
		t.Run(name, func(t *testing.T) {
			dir := testapp.Dir(name)
			ts := testapp.Serve(t, dir)
			files, err := filepath.Glob(filepath.Join(dir, "*.*"))
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, f := range files {
				if ext := filepath.Ext(f); ext != ".html" && ext != ".js" {
					continue
				}
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range refs.FindAllStringSubmatch(string(b), -1) {
					ref := m[1] + m[2]
					if strings.Contains(ref, ":") {
						t.Errorf("%s: %q is not a local reference", filepath.Base(f), ref)
						continue
					}
					if ref == "" || strings.HasPrefix(ref, "#") {
						continue
					}
					ref, _, _ = strings.Cut(ref, "#")
					ref, _, _ = strings.Cut(ref, "?")
					seen++
					want := http.StatusOK
					if ref == "api/notifications" {
						want = http.StatusInternalServerError
					}
					if status, _, _ := get(t, ts.URL, "GET", "/"+ref); status != want {
						t.Errorf("%s: %s: %d, want %d", filepath.Base(f), ref, status, want)
					}
				}
			}
			if seen == 0 {
				t.Fatal("no references found")
			}
		})
	}
}

// TestServeLayout: a page naming a layout is served inside it, its title
// and content in place and its own link in the layout's <nav> marked
// current (the docs app's pages share one navigation this way); other
// files are served as they are; a layout that is missing or outside the
// app's directory answers 404.
func TestServeLayout(t *testing.T) {
	app := t.TempDir()
	layout := "<html>{{title}}<a href=\"a.html\">home</a><nav><a href=\"b.html\">B</a><a href=\"a.html\">A</a></nav>\n{{content}}\n</html>\n"
	for name, content := range map[string]string{
		"_layout.html":     layout,
		"a.html":           "<!-- layout: _layout.html -->\n<title>A</title>\n<main>a\n</main>\n",
		"b.html":           "<p>plain</p>\n",
		"sub/_layout.html": "<nav><a href=\"c.html\">C</a></nav>{{content}}",
		"sub/c.html":       "<!-- layout: _layout.html -->\n\nc",
		"missing.html":     "<!-- layout: none.html -->\n<title>x</title>\n",
		"escape.html":      "<!-- layout: ../secret.html -->\n<title>x</title>\n",
	} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(app, name)), 0o755)
		if err := os.WriteFile(filepath.Join(app, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(filepath.Dir(app), "secret.html"), []byte("{{content}}"), 0o644)
	ts := testapp.Serve(t, app)
	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/a.html", 200, "<html><title>A</title><a href=\"a.html\">home</a><nav><a href=\"b.html\">B</a><a href=\"a.html\" aria-current=\"page\">A</a></nav>\n<main>a\n</main>\n</html>\n"},
		{"/b.html", 200, "<p>plain</p>\n"},
		{"/sub/c.html", 200, "<nav><a href=\"c.html\" aria-current=\"page\">C</a></nav>c"},
		{"/missing.html", 404, ""},
		{"/escape.html", 404, ""},
	} {
		status, _, body := get(t, ts.URL, "GET", tc.path)
		if status != tc.status || (status == 200 && body != tc.body) {
			t.Errorf("GET %s: %d %q, want %d %q", tc.path, status, body, tc.status, tc.body)
		}
	}
	docs := testapp.Serve(t, testapp.Dir("docs"))
	_, _, body := get(t, docs.URL, "GET", "/faq.html")
	if strings.Count(body, "aria-current") != 1 || !strings.Contains(body, `<li><a href="faq.html" aria-current="page">FAQ</a></li>`) ||
		!strings.HasPrefix(body, "<!doctype html>\n") || !strings.Contains(body, "<title>FAQ - Relay docs</title>\n<link") {
		t.Errorf("docs faq.html served as\n%s", body)
	}
}
