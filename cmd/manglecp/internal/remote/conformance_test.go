package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/conformance"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/transport"
)

// conformanceServer serves the default domain over HTTP; mw, when given,
// sits in front of it.
func conformanceServer(t *testing.T, mw func(http.Handler) http.Handler) string {
	t.Helper()
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), nil)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = transport.NewHTTPHandler(srv, nil)
	if mw != nil {
		h = mw(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

func runConformance(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Conformance(context.Background(), nil, args, nil, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestConformanceCommand: the human report, the JSON report and the exit
// codes (0 no FAIL, 1 a FAIL, 2 usage, 3 unreachable).
func TestConformanceCommand(t *testing.T) {
	t.Parallel()
	url := conformanceServer(t, nil)

	code, out, errOut := runConformance(url, "--fixture", "browser")
	if code != cmdline.ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"PASS  manifest.delivered", "Spec 10 6.2", "evaluation.determinism", "0 FAIL", "fixture browser"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = runConformance("--json", "--level", "1", url, "--only", "manifest,errors.invalid_type")
	if code != cmdline.ExitOK {
		t.Fatalf("--json: exit %d\n%s", code, out)
	}
	var rep conformance.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if rep.Level != 1 || rep.Summary.Fail != 0 || rep.Check("errors.invalid_type") == nil || rep.Check("facts.int64") != nil {
		t.Errorf("JSON report: level %d, %+v", rep.Level, rep.Summary)
	}
	if c := rep.Check("manifest.facts_profile"); c == nil || c.Status != conformance.Skip {
		t.Errorf("a level 3 check at --level 1: %+v", c)
	}

	// A server that drops its caching headers fails a check: exit 1.
	noETag := conformanceServer(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("If-None-Match")
			next.ServeHTTP(etagDropper{w}, r)
		})
	})
	code, out, _ = runConformance(noETag, "--only", "transport")
	if code != cmdline.ExitProtocol || !strings.Contains(out, "FAIL  transport.http.caching") {
		t.Errorf("broken server: exit %d\n%s", code, out)
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no target", nil, cmdline.ExitUsage, "TARGET is missing"},
		{"bad level", []string{url, "--level", "4"}, cmdline.ExitUsage, "--level 4"},
		{"unknown fixture", []string{url, "--fixture", "nope"}, cmdline.ExitUsage, "no built-in fixture"},
		{"unknown check", []string{url, "--only", "errors.nope"}, cmdline.ExitUsage, "errors.nope"},
		{"unknown flag", []string{url, "--colour"}, cmdline.ExitUsage, "colour"},
		{"unreachable", []string{"http://127.0.0.1:1"}, cmdline.ExitTransport, "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runConformance(tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant %q", code, tc.code, out, errOut, tc.want)
			}
		})
	}
	code, out, _ = runConformance("--json", "http://127.0.0.1:1")
	if code != cmdline.ExitTransport || !strings.Contains(out, `"type":"error"`) {
		t.Errorf("unreachable --json: exit %d %s", code, out)
	}
}

// etagDropper removes the manifest's caching headers.
type etagDropper struct{ http.ResponseWriter }

func (e etagDropper) WriteHeader(code int) {
	e.Header().Del("ETag")
	e.Header().Del("Cache-Control")
	e.ResponseWriter.WriteHeader(code)
}
