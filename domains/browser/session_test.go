package browser_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/domains/browser/chrome"
	"github.com/manglecp/manglecp/domains/browser/internal/testapp"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

var sessionKey = []byte("browser session test confirmation key")

// TestLiveSessionLoginJob is the two-page job of issue 28 over the
// server, as separate calls on one live session: open_page, fill the
// email, fill the password, click Sign in; the dashboard shows its table
// (the cookie lasted). Another identity naming the session gets
// auth_insufficient; once the session is idle past its timeout, the
// answer is x-browser_session_gone (recoverable).
func TestLiveSessionLoginJob(t *testing.T) {
	t.Parallel()
	path := needChromium(t)
	ts := testapp.Login(t)
	// The idle timeout is a budget too: on a loaded machine the job's
	// own steps must not outlast it.
	idle := testenv.Budget(3 * time.Second)
	cfg, opts := budgeted(browser.Config{ReportDir: t.TempDir(), Config: chrome.Config{Path: path, SessionIdle: idle}},
		&manglecp.Options{ConfirmationKey: sessionKey, Identities: []manglecp.Identity{
			{Name: "ada", Token: "ada-token-0123456789abcdef0123", Permissions: []string{"*"}},
			{Name: "eve", Token: "eve-token-0123456789abcdef0123", Permissions: []string{"*"}},
		}})
	srv, err := manglecp.NewServer(browser.Domain(cfg), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hs := httptest.NewServer(transport.NewHTTPHandler(srv, nil))
	t.Cleanup(hs.Close)
	dial := func(token string) *client.Session {
		s, err := client.Dial(context.Background(), hs.URL, &client.Options{MaxAttempts: 1, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ada, eve := dial("ada-token-0123456789abcdef0123"), dial("eve-token-0123456789abcdef0123")
	ctx := context.Background()
	page := ts.URL + "/"

	st := ada.NewState(protocol.NewFact("current_url", page))
	resp, err := ada.Evaluate(ctx, st.Request(protocol.Intent{Name: "observe"}))
	if err != nil {
		t.Fatal(err)
	}
	open := find(resp, "open_page")
	if open == nil {
		t.Fatalf("observe offers %v", names(resp))
	}
	res, err := ada.Invoke(ctx, &protocol.InvokeRequest{MacroID: open.MacroID, Args: map[string]any{"url": page}})
	if err != nil {
		t.Fatal(err)
	}
	session := ""
	for _, f := range res.StateDelta.Assert {
		if f.Pred == "browser_session" {
			session, _ = f.Args[0].(string)
		}
	}
	if !strings.HasPrefix(session, "bs-") {
		t.Fatalf("open_page asserted no browser_session: %v", res.StateDelta.Assert)
	}
	st.Apply(res)

	// Each step is its own evaluate and invoke; the session fact travels
	// in the client's state.
	step := func(c *client.Session, st *client.State, tool string, args map[string]any) (*protocol.InvokeResponse, error) {
		t.Helper()
		resp, err := c.Evaluate(ctx, st.Request(protocol.Intent{Name: "automate"}, protocol.NewFact("automation_goal", "sign in and read the revenue")))
		if err != nil {
			t.Fatal(err)
		}
		m := find(resp, tool)
		if m == nil {
			t.Fatalf("automate offers %v, no %s", names(resp), tool)
		}
		return c.Invoke(ctx, &protocol.InvokeRequest{MacroID: m.MacroID, Args: args}, client.WithConfirmation(sessionKey, time.Minute))
	}
	// One call fills the form and presses Sign in; the next reads the
	// table of the dashboard the cookie opened.
	res, err = step(ada, st, "fill_form", map[string]any{"Email": "ada@example.com", "Password": "s3cret", "submit": "Sign in"})
	if err != nil {
		t.Fatalf("fill_form: %v", err)
	}
	st.Apply(res)
	res, err = step(ada, st, "find_on_page", map[string]any{"text": "North"})
	if err != nil {
		t.Fatalf("find_on_page: %v", err)
	}
	if text := result(res); !strings.Contains(text, "4,210") {
		t.Fatalf("the dashboard's table is not on the page after Sign in: %s", text)
	}
	facts := st.Facts()
	var url string
	for _, f := range facts {
		if f.Pred == "browser_session" {
			url, _ = f.Args[1].(string)
		}
	}
	if !strings.HasSuffix(url, "/dashboard") {
		t.Fatalf("browser_session after Sign in names %q, want the dashboard", url)
	}
	// A client that still names the old button reaches the session's
	// checks.
	st.Add(protocol.NewFact("page_element", "Sign in", "button", "Sign in"))
	facts = st.Facts()
	var pe *protocol.Error

	// Another identity with ada's session fact is refused.
	est := eve.NewState(facts...)
	if _, err := step(eve, est, "click_element", map[string]any{"element_id": "Sign in"}); !errors.As(err, &pe) || pe.Code != protocol.CodeAuthInsufficient {
		t.Errorf("another identity: %v", err)
	}

	// A click offered on the session before it ends (the session ends
	// between the evaluation and the call).
	offer := func(c *client.Session, st *client.State, tool string) *protocol.MacroTool {
		t.Helper()
		resp, err := c.Evaluate(ctx, st.Request(protocol.Intent{Name: "automate"}, protocol.NewFact("automation_goal", "sign in and read the revenue")))
		if err != nil {
			t.Fatal(err)
		}
		m := find(resp, tool)
		if m == nil {
			t.Fatalf("automate offers %v, no %s", names(resp), tool)
		}
		return m
	}
	replacedClick := offer(ada, ada.NewState(facts...), "click_element")

	// open_page again ends the caller's earlier session (its fact is
	// retracted from the state) and starts a new one. (The state's
	// current_url is the page the session shows now: the client states
	// the page it opens.)
	resp, err = ada.Evaluate(ctx, st.Request(protocol.Intent{Name: "observe"}, protocol.NewFact("current_url", page)))
	if err != nil {
		t.Fatal(err)
	}
	res, err = ada.Invoke(ctx, &protocol.InvokeRequest{MacroID: find(resp, "open_page").MacroID, Args: map[string]any{"url": page}})
	if err != nil {
		t.Fatal(err)
	}
	st.Apply(res)
	if _, err := ada.Invoke(ctx, &protocol.InvokeRequest{MacroID: replacedClick.MacroID, Args: map[string]any{"element_id": "Sign in"}}, client.WithConfirmation(sessionKey, time.Minute)); !errors.As(err, &pe) || pe.Code != browser.CodeBrowserSessionGone {
		t.Errorf("the session open_page replaced: %v", err)
	}
	idleClick := offer(ada, st, "click_element") // on the new session
	// Named again, it is not offered (issue 35 item 24: it is not open).
	if resp, err := ada.Evaluate(ctx, ada.NewState(facts...).Request(protocol.Intent{Name: "automate"}, protocol.NewFact("automation_goal", "sign in and read the revenue"))); err != nil || find(resp, "click_element") != nil {
		t.Errorf("the replaced session still offers click_element: %v", err)
	}

	// Idle past the timeout: the session is gone, recoverably.
	// (chrome's idle timer runs on the wall clock: there is no clock to
	// advance, so the test waits until the session is no longer open,
	// which evaluating shows without touching it: its tools are no longer
	// offered.)
	testenv.Eventually(t, idle+10*time.Second, "the idle session ended", func() bool {
		resp, err := ada.Evaluate(ctx, st.Request(protocol.Intent{Name: "automate"}, protocol.NewFact("automation_goal", "sign in and read the revenue")))
		return err == nil && find(resp, "click_element") == nil
	})
	_, err = ada.Invoke(ctx, &protocol.InvokeRequest{MacroID: idleClick.MacroID, Args: map[string]any{"element_id": "Sign in"}}, client.WithConfirmation(sessionKey, time.Minute))
	if !errors.As(err, &pe) || pe.Code != browser.CodeBrowserSessionGone || !pe.Recoverable || !strings.Contains(pe.Message, "open the page again") {
		t.Errorf("idle session: %v", err)
	}
}
