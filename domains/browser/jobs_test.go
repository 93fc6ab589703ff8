package browser_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/internal/testapp"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// job drives the browser domain over HTTP as a client does for the
// multi-step jobs of issue 28: each step evaluates an intent with the
// client's state (which carries the live session and the page's facts)
// and invokes a tool the rules offered.
type job struct {
	t   *testing.T
	ctx context.Context
	c   *client.Session
	st  *client.State
	app string // the app's base URL
}

// newJob serves the job app name and a server with the browser domain,
// and opens its page (observe, then open_page).
func newJob(t *testing.T, name, page string) *job {
	t.Helper()
	app := testapp.Serve(t, testapp.Dir(name))
	return openJob(t, browser.Config{}, app.URL, page)
}

// openJob starts a server with the browser domain (cfg, with Chromium and
// a report directory) and opens base/page in it.
func openJob(t *testing.T, cfg browser.Config, base, page string) *job {
	t.Helper()
	cfg.Path, cfg.ReportDir = needChromium(t), t.TempDir()
	cfg, opts := budgeted(cfg, &manglecp.Options{ConfirmationKey: sessionKey})
	srv, err := manglecp.NewServer(browser.Domain(cfg), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	c, err := client.Dial(context.Background(), hs.URL, &client.Options{MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	j := &job{t: t, ctx: context.Background(), c: c, app: base}
	url := base + "/" + page
	j.st = c.NewState(protocol.NewFact("current_url", url))
	j.do("observe", "open_page", map[string]any{"url": url})
	return j
}

// offered evaluates intent with the state and returns the tool the rules
// offered (failing the test when they did not).
func (j *job) offered(intent, tool string) *protocol.MacroTool {
	j.t.Helper()
	resp, err := j.c.Evaluate(j.ctx, j.st.Request(protocol.Intent{Name: intent}))
	if err != nil {
		j.t.Fatalf("%s: %v", intent, err)
	}
	m := find(resp, tool)
	if m == nil {
		j.t.Fatalf("%s offers %v, no %s", intent, names(resp), tool)
	}
	return m
}

// do invokes tool as intent offers it, applies the answer's state delta
// and returns the answer.
func (j *job) do(intent, tool string, args map[string]any) *protocol.InvokeResponse {
	j.t.Helper()
	m := j.offered(intent, tool)
	res, err := j.c.Invoke(j.ctx, &protocol.InvokeRequest{MacroID: m.MacroID, Args: args}, client.WithConfirmation(sessionKey, time.Minute))
	if err != nil {
		j.t.Fatalf("%s %v: %v", tool, args, err)
	}
	if res.Result["ok"] == false {
		j.t.Fatalf("%s %v: %v", tool, args, res.Result)
	}
	j.st.Apply(res)
	return res
}

// result is an answer's result as JSON, to look for texts in.
func result(res *protocol.InvokeResponse) string {
	raw, _ := json.Marshal(res.Result)
	return res.Observability.Summary + " " + string(raw)
}

// wantIn fails the test unless every text is in s.
func (j *job) wantIn(what, s string, texts ...string) {
	j.t.Helper()
	for _, x := range texts {
		if !strings.Contains(s, x) {
			j.t.Errorf("%s lacks %q: %s", what, x, s)
		}
	}
}

// params are the parameter names of a macro-tool's input schema.
func params(m *protocol.MacroTool) []string {
	props, _ := m.InputSchema["properties"].(map[string]any)
	var out []string
	for k := range props {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// instructions are the rules' instructions of a macro-tool.
func instructions(m *protocol.MacroTool) string {
	if m.ContextInjection == nil {
		return ""
	}
	return m.ContextInjection.Instructions
}

// TestJobLogin is job 1 of issue 28: sign in, read a value of the
// dashboard's table, find which data request fails and why.
func TestJobLogin(t *testing.T) {
	t.Parallel()
	j := newJob(t, "login", "login.html")
	form := j.offered("automate", "fill_form")
	if got := params(form); !slices.Equal(got, []string{"Email", "Password", "submit"}) {
		t.Errorf("fill_form's parameters are %v, want the form's fields and submit", got)
	}
	res := j.do("automate", "fill_form", map[string]any{"Email": "ada@example.com", "Password": "s3cret", "submit": "Sign in"})
	j.wantIn("the answer of Sign in", result(res), "Dashboard - Ledgerly", "GET /api/notifications 500", "notification service timed out")
	find := j.offered("automate", "find_on_page")
	j.wantIn("find_on_page's instructions", instructions(find), `Alert: "Notifications unavailable".`, `Table "Accounts": `)
	res = j.do("automate", "find_on_page", map[string]any{"text": "Globex"})
	j.wantIn("the Globex row", result(res), `"Balance":"$12,480.00"`)
}

// TestJobSignup is job 2: a two-step form whose validation errors are
// corrected.
func TestJobSignup(t *testing.T) {
	t.Parallel()
	j := newJob(t, "signup", "signup.html")
	j.do("automate", "fill_form", map[string]any{"Name": "Ada Lovelace", "Email": "ada@example", "Plan": "Team", "submit": "Next"})
	form := j.offered("automate", "fill_form")
	j.wantIn("fill_form's instructions after a bad email", instructions(form), `"Email" is invalid.`)
	j.do("automate", "fill_form", map[string]any{"Email": "ada@example.com", "submit": "Next"})
	form = j.offered("automate", "fill_form")
	if got := params(form); !slices.Contains(got, "Country") || !slices.Contains(got, "Accept the terms") {
		t.Fatalf("step 2's fill_form has %v", got)
	}
	res := j.do("automate", "fill_form", map[string]any{"Country": "France", "Accept the terms": true, "submit": "Create account"})
	res = j.do("automate", "find_on_page", map[string]any{"text": "Welcome"})
	j.wantIn("the welcome", result(res), "Welcome, Ada Lovelace! Account #1042 on the Team plan")
}

// TestJobDocs is job 3: an answer three links deep in a documentation
// site.
func TestJobDocs(t *testing.T) {
	t.Parallel()
	j := newJob(t, "docs", "index.html")
	for _, link := range []string{"Guides", "Configuration", "Session limits"} {
		j.do("automate", "click_element", map[string]any{"element_id": link})
	}
	res := j.do("automate", "find_on_page", map[string]any{"text": "max_sessions_per_identity"})
	j.wantIn("the answer", result(res), `"Default":"2"`)
}

// TestJobCatalog is job 4: search and filter a list, open a detail page,
// read a field.
func TestJobCatalog(t *testing.T) {
	t.Parallel()
	j := newJob(t, "catalog", "products.html")
	j.do("automate", "fill_form", map[string]any{"Search products": "Trail Runner 2", "Category": "Footwear"})
	j.do("automate", "click_element", map[string]any{"element_id": "Trail Runner 2"})
	res := j.do("automate", "find_on_page", map[string]any{"text": "Warranty"})
	j.wantIn("the warranty", result(res), "3 years")
}

// TestJobOrders is job 5: a confirm dialog, then a second tab.
func TestJobOrders(t *testing.T) {
	t.Parallel()
	j := newJob(t, "orders", "orders.html")
	res := j.do("automate", "click_element", map[string]any{"element_id": "Delete order #7"})
	j.wantIn("the click's answer", result(res), `"dialog"`, "Delete order #7?")
	dialog := j.offered("automate", "answer_dialog")
	j.wantIn("answer_dialog's instructions", instructions(dialog), "Delete order #7?")
	res = j.do("automate", "answer_dialog", map[string]any{"accept": true})
	res = j.do("automate", "click_element", map[string]any{"element_id": "Open invoice of order #8"})
	j.wantIn("the invoice link's answer", result(res), `"tab_opened":2`)
	j.do("automate", "switch_tab", map[string]any{"tab": 2})
	res = j.do("automate", "find_on_page", map[string]any{"text": "Total"})
	j.wantIn("the invoice total", result(res), "Total: $42.00")
}

// TestGoalNamesRowsAndLinks: with an automation_goal that names a row of
// a table (by its first cell) or a link, the rules put that row, or that
// link, in the answer without a find_on_page.
func TestGoalNamesRowsAndLinks(t *testing.T) {
	t.Parallel()
	j := newJob(t, "login", "login.html")
	j.do("automate", "fill_form", map[string]any{"Email": "ada@example.com", "Password": "s3cret", "submit": "Sign in"})
	j.st.Add(protocol.NewFact("automation_goal", "read the balance of Globex"))
	j.wantIn("find_on_page's instructions with the goal", instructions(j.offered("automate", "find_on_page")),
		`Table "Accounts" row 3, "Balance": "$12,480.00".`, `Table "Accounts" row 3, "Owner": `)
	j.st.Add(protocol.NewFact("automation_goal", "sign out of Ledgerly"))
	j.wantIn("click_element's instructions with the goal", instructions(j.offered("automate", "click_element")), `The goal names the link "Ledgerly".`)
}
