package browser_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/protocol"
)

// TestSessionNotOpenOffersNothing: issue 35 item 24 (second half). A
// browser_session the client names that this server does not have open
// (it ended, or lives on another replica) was offered the live page's
// tools, which then failed with x-browser_session_gone. The rules now see
// which sessions are open (browser_session_open): the same facts naming
// a session that is not open offer none of them, and after close_session
// neither does the session that was.
func TestSessionNotOpenOffersNothing(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>Form</title><h1>Form</h1><label for="n">Name</label> <input id="n"><button>Save</button>`))
	})
	app := httptest.NewServer(mux)
	t.Cleanup(app.Close)
	j := openJob(t, browser.Config{}, app.URL, "")
	live := []string{"fill_form", "find_on_page", "press_key", "close_session"}
	if got := j.offers("automate"); !containsAll(got, live) {
		t.Fatalf("the open session offers %v, want %v", got, live)
	}

	// The same facts, naming a session this server does not have.
	var forged []protocol.Fact
	for _, f := range j.st.Facts() {
		if f.Pred == "browser_session" {
			f = protocol.NewFact("browser_session", "bs-0123456789abcdef", f.Args[1])
		}
		forged = append(forged, f)
	}
	resp, err := j.c.Evaluate(j.ctx, &protocol.IntentRequest{Intent: protocol.Intent{Name: "automate"}, Facts: forged})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.MacroTools {
		if slices.Contains(live, m.Name) {
			t.Errorf("a session that is not open offers %s", m.Name)
		}
	}

	// The session itself, once closed, while the client still names it.
	before := j.st.Facts()
	j.do("automate", "close_session", map[string]any{})
	resp, err = j.c.Evaluate(j.ctx, &protocol.IntentRequest{Intent: protocol.Intent{Name: "automate"}, Facts: before})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.MacroTools {
		if slices.Contains(live, m.Name) {
			t.Errorf("a closed session offers %s", m.Name)
		}
	}
}

func containsAll(got, want []string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}
