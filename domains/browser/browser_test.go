package browser_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// needChromium returns the Chromium binary, or skips (plain go test) /
// fails (scripts/test.sh, CI) when there is none. MANGLECP_NO_BROWSER=1
// opts out explicitly; CI never sets it.
func needChromium(t *testing.T) string {
	t.Helper()
	if os.Getenv("MANGLECP_NO_BROWSER") == "1" {
		t.Skip("MANGLECP_NO_BROWSER=1: browser tests are turned off")
	}
	return testenv.LookPath(t, chrome.DefaultNames...)
}

// ordersApp is the local web app of the job (docs/browser.md): the page
// (testdata/orders.html) fetches
// /api/orders, which answers 404, and then logs a console error; its
// form's button changes the page.
func ordersApp(t *testing.T) *httptest.Server {
	t.Helper()
	page, err := os.ReadFile("testdata/orders.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

type env struct {
	srv  *manglecp.Server
	sess *client.Session
}

func newEnv(t *testing.T, cfg browser.Config) *env {
	t.Helper()
	cfg.ReportDir = t.TempDir()
	cfg, opts := budgeted(cfg, &manglecp.Options{ConfirmationKey: []byte("browser test confirmation key")})
	srv, err := manglecp.NewServer(browser.Domain(cfg), opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	sess, err := client.Dial(context.Background(), hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &env{srv: srv, sess: sess}
}

func (e *env) evaluate(t *testing.T, intent string, facts []protocol.Fact) *protocol.IntentResponse {
	t.Helper()
	return e.evaluateRequest(t, &protocol.IntentRequest{Intent: protocol.Intent{Name: intent}, Facts: facts})
}

func (e *env) evaluateRequest(t *testing.T, req *protocol.IntentRequest) *protocol.IntentResponse {
	t.Helper()
	intent := req.Intent.Name
	resp, err := e.sess.Evaluate(context.Background(), req)
	if err != nil {
		t.Fatalf("evaluate %s: %v", intent, err)
	}
	return resp
}

func (e *env) invoke(t *testing.T, tool *protocol.MacroTool, args map[string]any) *protocol.InvokeResponse {
	t.Helper()
	resp, err := e.sess.Invoke(context.Background(), &protocol.InvokeRequest{MacroID: tool.MacroID, Args: args})
	if err != nil {
		t.Fatalf("invoke %s: %v", tool.Name, err)
	}
	return resp
}

func find(resp *protocol.IntentResponse, name string) *protocol.MacroTool {
	for i := range resp.MacroTools {
		if resp.MacroTools[i].Name == name {
			return &resp.MacroTools[i]
		}
	}
	return nil
}

func names(resp *protocol.IntentResponse) []string {
	var out []string
	for _, m := range resp.MacroTools {
		out = append(out, m.Name)
	}
	return out
}

// TestBrowserJob is the job of docs/browser.md end to end over HTTP with a
// real Chromium: observe -> open_page sees the 404 and the console error ->
// diagnose_error with those facts -> diagnose_causal_chain finds the
// chain -> automate -> click_element changes the page. Then the server
// closes and no Chromium process is left.
func TestBrowserJob(t *testing.T) {
	needChromium(t)
	app := ordersApp(t)
	e := newEnv(t, browser.Config{})
	page := app.URL + "/"
	m := e.sess.Manifest()
	if x, _ := m.Extensions["x-browser"].(map[string]any); x["available"] != true {
		t.Fatalf("x-browser %v", m.Extensions["x-browser"])
	}

	// The client keeps its working state (client.State): deltas applied,
	// output-only facts kept but not sent back.
	st := e.sess.NewState(protocol.NewFact("current_url", page))

	// observe: the rules offer open_page for a loopback URL.
	resp := e.evaluateRequest(t, st.Request(protocol.Intent{Name: "observe"}))
	open := find(resp, "open_page")
	if open == nil {
		t.Fatalf("observe offers %v, no open_page", names(resp))
	}
	if s := open.Safety; s == nil || s.RequiresUserConfirmation {
		t.Errorf("open_page safety %+v", s)
	}
	res := e.invoke(t, open, map[string]any{"url": page})
	if res.Result["ok"] != true {
		t.Fatalf("open_page result %v", res.Result)
	}
	var failedID string
	var sawError bool
	ordersID := map[string]bool{}
	for _, f := range res.StateDelta.Assert {
		if f.Pred == "net_request" && strings.HasSuffix(f.Args[3].(string), "/api/orders") {
			ordersID[f.Args[1].(string)] = true
		}
	}
	for _, f := range res.StateDelta.Assert {
		if f.Source == nil || f.Source.SourceType != protocol.SourceExternal || f.Source.SourceID != browser.BrowserSource {
			t.Errorf("fact %s has provenance %+v, want the browser", f.Pred, f.Source)
		}
		switch f.Pred {
		case "net_response":
			if id, _ := f.Args[1].(string); ordersID[id] && toInt(f.Args[2]) == 404 {
				failedID = id
			}
		case "console_event":
			sawError = sawError || (f.Args[1] == "error" && strings.Contains(f.Args[2].(string), "Failed to load orders: HTTP 404"))
		}
	}
	if failedID == "" || !sawError {
		t.Fatalf("open_page asserted no 404 (%q) or no console error (%v): %s", failedID, sawError, res.Observability.Summary)
	}
	t.Logf("open_page: %s", res.Observability.Summary)
	st.Apply(res)

	// diagnose_error with the browser's facts: the causal chain is offered
	// for the failed request and finds the console error.
	resp = e.evaluateRequest(t, st.Request(protocol.Intent{Name: "diagnose_error"}))
	chain := find(resp, "diagnose_causal_chain")
	if chain == nil {
		t.Fatalf("diagnose_error offers %v", names(resp))
	}
	res = e.invoke(t, chain, map[string]any{"request_id": failedID})
	if n := toInt(res.Result["errors_explained"]); n < 1 || !strings.Contains(res.Result["root_cause"].(string), "404") {
		t.Fatalf("causal chain %v", res.Result)
	}
	t.Logf("diagnose_causal_chain: %s", res.Observability.Summary)
	st.Apply(res) // diagnosed_error: output-only, kept but not sent again

	// automate: click_element is offered for the observed button; the
	// click changes the page.
	resp = e.evaluateRequest(t, st.Request(protocol.Intent{Name: "automate"}, protocol.NewFact("automation_goal", "save the order")))
	click := find(resp, "click_element")
	if click == nil {
		t.Fatalf("automate offers %v", names(resp))
	}
	if s := click.Safety; s == nil || s.RequiresUserConfirmation || !contains(s.SideEffects, "browser") {
		t.Errorf("click_element safety %+v (loopback page: no confirmation, effect browser)", s)
	}
	if fill := find(resp, "fill_form"); fill == nil {
		t.Errorf("automate offers no fill_form: %v", names(resp))
	}
	// The live page's button, by its ref (its accessible name).
	res = e.invoke(t, click, map[string]any{"element_id": "Save order"})
	if got := fmt.Sprint(res.Result["appeared"]); res.Result["ok"] != true || !strings.Contains(got, "Saved order for 1") {
		t.Fatalf("click result %v", res.Result)
	}
	t.Logf("click_element: %s", res.Observability.Summary)

	// screenshot_page returns a PNG.
	shot := find(e.evaluate(t, "observe", []protocol.Fact{protocol.NewFact("current_url", page)}), "screenshot_page")
	if shot == nil {
		t.Fatal("no screenshot_page")
	}
	res = e.invoke(t, shot, map[string]any{"url": page})
	png, err := base64.StdEncoding.DecodeString(res.Result["data"].(string))
	if err != nil || res.Result["media_type"] != "image/png" || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Errorf("screenshot %v %v", res.Result["media_type"], err)
	}

	pids := testenv.ChildPIDs(t)
	if len(pids) == 0 {
		t.Error("no Chromium process while the server runs")
	}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids)
}

// TestBrowserPolicy: which URLs and elements the rules accept.
func TestBrowserPolicy(t *testing.T) {
	t.Parallel()
	needChromium(t)
	e := newEnv(t, browser.Config{})
	defer e.srv.Close()
	for _, u := range []string{"http://example.com/", "file:///etc/passwd", "http://10.1.2.3/", "ftp://127.0.0.1/"} {
		resp := e.evaluate(t, "observe", []protocol.Fact{protocol.NewFact("current_url", u)})
		if find(resp, "open_page") != nil || find(resp, "screenshot_page") != nil {
			t.Errorf("%s: browser tools offered: %v", u, names(resp))
		}
	}
	// A page on another allowed host: clicking needs confirmation; a
	// payment form: no click at all.
	e2 := newEnv(t, browser.Config{Config: chrome.Config{AllowedHosts: []string{"127.0.0.1", "shop.test"}}})
	defer e2.srv.Close()
	base := []protocol.Fact{protocol.NewFact("current_url", "http://shop.test/cart"), protocol.NewFact("automation_goal", "buy"),
		protocol.NewFact("interactive_element", "buy", "button", "Buy")}
	click := find(e2.evaluate(t, "automate", base), "click_element")
	if click == nil || !click.Safety.RequiresUserConfirmation {
		t.Errorf("remote host: click_element %+v", click)
	}
	pay := append(base, protocol.NewFact("interactive_element", "cc", "payment", "Card number"))
	if resp := e2.evaluate(t, "automate", pay); find(resp, "click_element") != nil {
		t.Errorf("payment form: click offered: %v", names(resp))
	}
}

// TestNoBrowser: without Chromium the server starts, the manifest says why
// the browser tools are absent, they are not offered, and the rest works.
func TestNoBrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, browser.Config{Config: chrome.Config{Path: "/nonexistent/chromium"}})
	defer e.srv.Close()
	x, _ := e.sess.Manifest().Extensions["x-browser"].(map[string]any)
	if x["available"] != false || !strings.Contains(x["reason"].(string), "browser_path") {
		t.Fatalf("x-browser %v", x)
	}
	resp := e.evaluate(t, "observe", []protocol.Fact{protocol.NewFact("current_url", "http://127.0.0.1:3000/")})
	if find(resp, "open_page") != nil {
		t.Fatalf("open_page offered without a browser: %v", names(resp))
	}
	sum := find(resp, "summarize_observation")
	if sum == nil || sum.ContextInjection == nil || !strings.Contains(sum.ContextInjection.Instructions, "cannot run") {
		t.Errorf("summarize_observation does not say why: %+v", sum)
	}
}

// TestClientGoneStopsPage: a page that never finishes loading is stopped
// when the client goes away, well before the invocation timeout. The
// client leaves once the page's request reached the server (on a loaded
// machine a fixed 4 s could end before the browser even sent it, and then
// nothing was ever there to drop).
func TestClientGoneStopsPage(t *testing.T) {
	t.Parallel()
	needChromium(t)
	arrived := make(chan struct{}, 1)
	released := make(chan time.Time, 10)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done()
		released <- time.Now()
	}))
	defer hang.Close()
	e := newEnv(t, browser.Config{})
	defer e.srv.Close()
	// Start the browser first: on a loaded machine its start alone can
	// take seconds.
	app := ordersApp(t)
	warm := find(e.evaluate(t, "observe", []protocol.Fact{protocol.NewFact("current_url", app.URL+"/")}), "open_page")
	e.invoke(t, warm, map[string]any{"url": app.URL + "/"})
	open := find(e.evaluate(t, "observe", []protocol.Fact{protocol.NewFact("current_url", hang.URL+"/")}), "open_page")
	if open == nil {
		t.Fatal("no open_page")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := make(chan time.Time, 1)
	go func() {
		select {
		case <-arrived:
		case <-time.After(testenv.Budget(30 * time.Second)):
		case <-ctx.Done():
		}
		left <- time.Now()
		cancel()
	}()
	_, err := e.sess.Invoke(ctx, &protocol.InvokeRequest{MacroID: open.MacroID, Args: map[string]any{"url": hang.URL + "/"}}, client.WithMaxAttempts(1))
	if err == nil {
		t.Fatal("a page that never loads was observed")
	}
	gone := <-left
	if d := time.Since(gone); d > testenv.Budget(10*time.Second) {
		t.Errorf("the invocation took %v after the client left", d)
	}
	t.Logf("invoke returned %v after the client left", time.Since(gone))
	select {
	case at := <-released:
		t.Logf("the browser dropped the request %v after the client left", at.Sub(gone))
	case <-time.After(testenv.Budget(10 * time.Second)):
		t.Errorf("the browser still loads the page %v after the client left (budget on this machine)", testenv.Budget(10*time.Second))
	}
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case json.Number:
		n, _ := x.Int64()
		return n
	case float64:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	}
	return -1
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// waitGone waits for pids to exit and checks that no child process is
// left.
func waitGone(t *testing.T, pids []string) {
	t.Helper()
	testenv.WaitGone(t, pids)
	if left := testenv.ChildPIDs(t); len(left) > 0 {
		t.Errorf("processes left after Close: %v", left)
	}
}
