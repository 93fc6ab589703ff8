package inspector_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/inspector"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestReplayCurlScript: a session explored in the inspector (an
// evaluation without eval_time, an invocation, a confirmed invocation)
// exports as a curl script that replays against a fresh HTTP server with
// real curl: the pinned eval_time gives the same macro_ids, so every
// invocation finds its tool.
func TestReplayCurlScript(t *testing.T) {
	curl := testenv.LookPath(t, "curl")
	sh := testenv.LookPath(t, "sh")
	f := newFixture(t, nil)

	var r reply
	f.call(t, "POST", "/api/evaluate", map[string]any{"request": &protocol.IntentRequest{
		Intent: protocol.Intent{Name: "diagnose_error"}, Facts: diagnoseFacts(),
		Options: &protocol.Options{DisclosurePreference: protocol.DisclosureFull},
	}}, &r)
	if !r.OK {
		t.Fatalf("evaluate: %+v", r.Error.Error)
	}
	var v inspector.EvaluateView
	r.decode(t, &v)
	chain, report := macroID(t, &v, "diagnose_causal_chain"), macroID(t, &v, "write_diagnosis_report")
	for _, call := range []map[string]any{
		{"request": &protocol.InvokeRequest{MacroID: chain, Args: map[string]any{"request_id": "r42"}}},
		{"request": &protocol.InvokeRequest{MacroID: report, Args: map[string]any{"request_id": "r42", "title": "It's $HOME"}}, "confirm": true},
	} {
		r = reply{}
		if f.call(t, "POST", "/api/invoke", call, &r); !r.OK {
			t.Fatalf("invoke: %+v", r.Error.Error)
		}
	}

	req, _ := http.NewRequest("GET", f.http.URL+"/api/history/script?format=curl", nil)
	req.Header.Set(inspector.TokenHeader, f.in.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	script, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	// A fresh server: an empty macro cache, the same confirmation key.
	reports := t.TempDir()
	srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: reports}), &manglecp.Options{ConfirmationKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	defer hs.Close()

	cmd := exec.Command(sh, "-c", string(script))
	cmd.Env = append(os.Environ(),
		"BASE="+hs.URL,
		"CONFIRMATION_TOKEN="+client.ConfirmationToken(testKey, report, time.Minute),
		"PATH="+dirOf(curl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	text := string(out)
	if strings.Count(text, `"type":"invoke_response"`) != 2 || strings.Count(text, `"type":"intent_response"`) != 1 || strings.Contains(text, `"type":"error"`) {
		t.Fatalf("replay output:\n%s", text)
	}
	if !strings.Contains(text, chain) || !strings.Contains(text, report) {
		t.Errorf("the replayed evaluation gave other macro_ids:\n%s", text)
	}
	if entries, _ := os.ReadDir(reports); len(entries) != 1 {
		t.Errorf("the replayed confirmed invocation wrote %d reports, want 1", len(entries))
	}

	// The CLI export is a valid shell script too.
	req, _ = http.NewRequest("GET", f.http.URL+"/api/history/script?format=cli", nil)
	req.Header.Set(inspector.TokenHeader, f.in.Token())
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if out, err := exec.Command(sh, "-n", "-c", string(cli)).CombinedOutput(); err != nil {
		t.Errorf("the CLI script does not parse: %v\n%s\n%s", err, out, cli)
	}
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "."
}
