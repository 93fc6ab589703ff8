package inspector_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/inspector"
	"github.com/manglecp/manglecp/protocol"
)

// reply mirrors the API's answer to evaluate and invoke calls.
type reply struct {
	OK        bool            `json:"ok"`
	HistoryID int             `json:"history_id"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Envelope  *protocol.Envelope       `json:"envelope"`
		Error     *protocol.Error          `json:"error"`
		Status    int                      `json:"status"`
		Registry  *inspector.RegistryEntry `json:"registry"`
		RequestID string                   `json:"request_id"`
		Local     bool                     `json:"local"`
		Transport bool                     `json:"transport"`
	} `json:"error"`
}

func (r *reply) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Result, v); err != nil {
		t.Fatalf("result: %v\n%s", err, r.Result)
	}
}

func evaluateRequest(facts []protocol.Fact, opts *protocol.Options) map[string]any {
	return map[string]any{"request": &protocol.IntentRequest{
		Intent: protocol.Intent{Name: "diagnose_error"}, Facts: facts, EvalTime: evalTime(), Options: opts,
	}}
}

var fullOptions = &protocol.Options{DisclosurePreference: protocol.DisclosureFull, IncludeProofHints: true, IncludeRuleCoverage: true}

// evaluate runs the README's evaluation through the API.
func (f *fixture) evaluate(t *testing.T) *inspector.EvaluateView {
	t.Helper()
	var r reply
	if code := f.call(t, "POST", "/api/evaluate", evaluateRequest(diagnoseFacts(), fullOptions), &r); code != 200 || !r.OK {
		t.Fatalf("evaluate: HTTP %d, %+v", code, r.Error)
	}
	var v inspector.EvaluateView
	r.decode(t, &v)
	return &v
}

func macroID(t *testing.T, v *inspector.EvaluateView, name string) string {
	t.Helper()
	for _, g := range v.Groups {
		for _, c := range g.Cards {
			if c.Tool.Name == name {
				return c.Tool.MacroID
			}
		}
	}
	t.Fatalf("no macro-tool %s", name)
	return ""
}

// TestSecurity: the session token guards every API call, the Host header
// must be loopback, cross-origin requests and CORS preflights are refused,
// and the page carries a strict CSP.
func TestSecurity(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name    string
		method  string
		path    string
		header  map[string]string
		host    string
		want    int
		checkFn func(t *testing.T, resp *http.Response)
	}{
		{name: "no token", method: "GET", path: "/api/session", want: 403},
		{name: "wrong token", method: "GET", path: "/api/session", header: map[string]string{inspector.TokenHeader: wrongToken(f.in.Token())}, want: 403},
		{name: "token in the query is not enough", method: "GET", path: "/api/session?token=" + f.in.Token(), want: 403},
		{name: "right token", method: "GET", path: "/api/session", header: map[string]string{inspector.TokenHeader: f.in.Token()}, want: 200},
		{name: "script needs the token", method: "GET", path: "/api/history/script", want: 403},
		{name: "unknown API", method: "GET", path: "/api/nope", header: map[string]string{inspector.TokenHeader: f.in.Token()}, want: 404},
		{name: "foreign Host (DNS rebinding)", method: "GET", path: "/", host: "attacker.example:80", want: http.StatusMisdirectedRequest},
		{name: "foreign Host on the API", method: "GET", path: "/api/session", host: "attacker.example", header: map[string]string{inspector.TokenHeader: f.in.Token()}, want: http.StatusMisdirectedRequest},
		{name: "localhost Host", method: "GET", path: "/", host: "localhost:1234", want: 200},
		{name: "cross-origin call", method: "GET", path: "/api/session", header: map[string]string{inspector.TokenHeader: f.in.Token(), "Origin": "http://attacker.example"}, want: 403},
		{name: "same-origin call", method: "GET", path: "/api/session", header: map[string]string{inspector.TokenHeader: f.in.Token(), "Origin": f.http.URL}, want: 200},
		{name: "cross-site fetch", method: "GET", path: "/api/session", header: map[string]string{inspector.TokenHeader: f.in.Token(), "Sec-Fetch-Site": "cross-site"}, want: 403},
		{name: "CORS preflight", method: "OPTIONS", path: "/api/evaluate", header: map[string]string{"Origin": "http://attacker.example", "Access-Control-Request-Method": "POST"}, want: 403,
			checkFn: func(t *testing.T, resp *http.Response) {
				for k := range resp.Header {
					if strings.HasPrefix(k, "Access-Control-") {
						t.Errorf("preflight answered with %s", k)
					}
				}
			}},
		{name: "page without token", method: "GET", path: "/", want: 200,
			checkFn: func(t *testing.T, resp *http.Response) {
				csp := resp.Header.Get("Content-Security-Policy")
				for _, want := range []string{"script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
					if !strings.Contains(csp, want) {
						t.Errorf("CSP %q lacks %q", csp, want)
					}
				}
				if resp.Header.Get("Access-Control-Allow-Origin") != "" {
					t.Error("the page sets Access-Control-Allow-Origin")
				}
			}},
		{name: "script asset", method: "GET", path: "/app.js", want: 200},
		{name: "unknown asset", method: "GET", path: "/secret.txt", want: 404},
		{name: "POST to the page", method: "POST", path: "/", want: 405},
		{name: "GET on a POST call", method: "GET", path: "/api/evaluate", header: map[string]string{inspector.TokenHeader: f.in.Token()}, want: 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, f.http.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.want {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.checkFn != nil {
				tc.checkFn(t, resp)
			}
		})
	}
}

// TestAllowedHosts: with explicit hosts (--allow-remote), only those pass.
func TestAllowedHosts(t *testing.T) {
	f := newFixture(t, &inspector.Options{AllowedHosts: []string{"inspector.lan:8000", "10.0.0.5"}})
	for host, want := range map[string]int{"inspector.lan:8000": 200, "10.0.0.5:9": 200, "inspector.lan:9": 421, "127.0.0.1:1": 421} {
		req, _ := http.NewRequest("GET", f.http.URL+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: HTTP %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// TestListen: loopback only unless remote access is allowed.
func TestListen(t *testing.T) {
	tests := []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:0", false, true},
		{"localhost:0", false, true},
		{"0.0.0.0:0", false, false},
		{":0", false, false},
		{"192.0.2.10:0", false, false},
		{"example.com:0", false, false},
		{"0.0.0.0:0", true, true},
		{"no-port", false, false},
	}
	for _, tc := range tests {
		ln, err := inspector.Listen(tc.addr, tc.remote)
		if (err == nil) != tc.ok {
			t.Errorf("Listen(%q, %v): %v, want ok %v", tc.addr, tc.remote, err, tc.ok)
		}
		if ln != nil {
			ln.Close()
		}
	}
}

// TestSessionView: the page's first call describes the server and shapes
// the facts profile into forms.
func TestSessionView(t *testing.T) {
	f := newFixture(t, &inspector.Options{Target: ""})
	var v inspector.SessionView
	if code := f.call(t, "GET", "/api/session", nil, &v); code != 200 {
		t.Fatalf("HTTP %d", code)
	}
	if v.Manifest == nil || v.Manifest.Domain.ID != "browser_diagnostics" || v.Transport != "conn" || !v.ConfirmationKey {
		t.Fatalf("session view: %+v", v)
	}
	var console *inspector.PredicateForm
	for i := range v.Predicates {
		if v.Predicates[i].Predicate == "console_event" {
			console = &v.Predicates[i]
		}
	}
	if console == nil || !console.Temporal || len(console.Args) != 4 || console.Args[3].Type != "number" || console.Args[1].Name != "level" {
		t.Errorf("console_event form: %+v", console)
	}
	if len(v.Registry) != len(protocol.Codes()) {
		t.Errorf("registry has %d codes, want %d", len(v.Registry), len(protocol.Codes()))
	}
}

// TestEvaluate: cards by disclosure level, a proof tree per tool, rule
// coverage, output-only facts kept out, and a history entry.
func TestEvaluate(t *testing.T) {
	f := newFixture(t, nil)
	facts := append(diagnoseFacts(), protocol.NewFact("diagnosed_error", "r1", "earlier cause"))
	var r reply
	f.call(t, "POST", "/api/evaluate", evaluateRequest(facts, fullOptions), &r)
	if !r.OK {
		t.Fatalf("evaluate failed: %+v", r.Error.Error)
	}
	var v inspector.EvaluateView
	r.decode(t, &v)
	if len(v.Groups) != 1 || v.Groups[0].Level != "full" || len(v.Groups[0].Cards) != 3 {
		t.Fatalf("groups: %+v", v.Groups)
	}
	for _, c := range v.Groups[0].Cards {
		if !c.HasProof || v.Proofs[c.Tool.MacroID] == nil || v.Proofs[c.Tool.MacroID].Root == nil {
			t.Errorf("%s has no proof tree", c.Tool.Name)
		}
		if c.NeedsConfirmation != (c.Tool.Name == "write_diagnosis_report") {
			t.Errorf("%s: needs confirmation %v", c.Tool.Name, c.NeedsConfirmation)
		}
	}
	if v.Coverage == nil || v.Coverage.Total == 0 || len(v.Coverage.Rows) == 0 {
		t.Errorf("coverage: %+v", v.Coverage)
	}
	if len(v.Dropped) != 1 || v.Dropped[0].Pred != "diagnosed_error" {
		t.Errorf("dropped %+v, want the output-only diagnosed_error fact", v.Dropped)
	}
	for _, fact := range v.Request.Facts {
		if fact.Pred == "diagnosed_error" {
			t.Error("an output-only fact was sent")
		}
	}
	var hist []map[string]any
	f.call(t, "GET", "/api/history", nil, &hist)
	if len(hist) != 1 || hist[0]["kind"] != "evaluate" || hist[0]["ok"] != true || hist[0]["eval_time_used"] == nil {
		t.Errorf("history: %v", hist)
	}
}

// TestInvokeConfirmation: a tool that needs confirmation is refused
// without it (the error with its registry entry), runs with a token the
// inspector signs, or with a pasted one; the token never enters the
// history.
func TestInvokeConfirmation(t *testing.T) {
	f := newFixture(t, nil)
	id := macroID(t, f.evaluate(t), "write_diagnosis_report")
	args := map[string]any{"request_id": "r42"}

	var r reply
	f.call(t, "POST", "/api/invoke", map[string]any{"request": &protocol.InvokeRequest{MacroID: id, Args: args}}, &r)
	if r.OK || r.Error == nil || r.Error.Error.Code != protocol.CodeConfirmationRequired {
		t.Fatalf("unconfirmed invoke: %+v", r)
	}
	if r.Error.Status != 403 || r.Error.Registry == nil || r.Error.Registry.Category != "invocation" || r.Error.Envelope.Type != protocol.TypeError || r.Error.Local {
		t.Errorf("error view: status %d, registry %+v, envelope %+v", r.Error.Status, r.Error.Registry, r.Error.Envelope)
	}

	r = reply{}
	f.call(t, "POST", "/api/invoke", map[string]any{"request": &protocol.InvokeRequest{MacroID: id, Args: args}, "confirm": true}, &r)
	if !r.OK {
		t.Fatalf("confirmed invoke: %+v", r.Error.Error)
	}
	var v inspector.InvokeView
	r.decode(t, &v)
	if !v.Confirmed || v.Request.ConfirmationToken != "(signed by the inspector)" || v.Response == nil {
		t.Errorf("invoke view: %+v", v)
	}

	// A pasted token, minted by the host that holds the key.
	r = reply{}
	tok := client.ConfirmationToken(testKey, id, time.Minute)
	f.call(t, "POST", "/api/invoke", map[string]any{"request": &protocol.InvokeRequest{MacroID: id, Args: args, ConfirmationToken: tok}}, &r)
	if !r.OK {
		t.Fatalf("invoke with a pasted token: %+v", r.Error.Error)
	}

	req, _ := http.NewRequest("GET", f.http.URL+"/api/history", nil)
	req.Header.Set(inspector.TokenHeader, f.in.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(raw, []byte("v1.")) || bytes.Contains(raw, []byte(tok)) {
		t.Errorf("the history holds a confirmation token: %s", raw)
	}
}

// TestInvokeWithoutKey: without a confirmation key the inspector cannot
// confirm by itself and says so.
func TestInvokeWithoutKey(t *testing.T) {
	f := newFixture(t, &inspector.Options{ConfirmationKey: []byte{}})
	id := macroID(t, f.evaluate(t), "write_diagnosis_report")
	var e struct {
		Error string `json:"error"`
	}
	code := f.call(t, "POST", "/api/invoke", map[string]any{"request": &protocol.InvokeRequest{MacroID: id, Args: map[string]any{"request_id": "r42"}}, "confirm": true}, &e)
	if code != 400 || !strings.Contains(e.Error, "confirmation key") {
		t.Errorf("HTTP %d %q", code, e.Error)
	}
}

// TestErrorViews: every error answer comes back as an envelope with its
// registry entry, status and details.
func TestErrorViews(t *testing.T) {
	f := newFixture(t, nil)
	id := macroID(t, f.evaluate(t), "diagnose_causal_chain")
	tests := []struct {
		name     string
		path     string
		body     any
		code     protocol.Code
		status   int
		local    bool
		category string
		check    func(t *testing.T, d *protocol.ErrorDetails)
	}{
		{
			name: "arity, found by the client", path: "/api/evaluate",
			body: evaluateRequest([]protocol.Fact{protocol.NewFact("current_url", "a", "b")}, nil),
			code: protocol.CodeArityMismatch, status: 400, local: true, category: "fact_validation",
			check: func(t *testing.T, d *protocol.ErrorDetails) {
				if d == nil || len(d.Violations) != 1 || d.Violations[0].Predicate != "current_url" {
					t.Errorf("violations: %+v", d)
				}
			},
		},
		{
			name: "schema", path: "/api/invoke",
			body: map[string]any{"request": &protocol.InvokeRequest{MacroID: id, Args: map[string]any{"request_id": "nope"}}},
			code: protocol.CodeSchemaValidationFailed, status: 400, category: "invocation",
			check: func(t *testing.T, d *protocol.ErrorDetails) {
				if d == nil || len(d.SchemaErrors) == 0 {
					t.Errorf("schema errors: %+v", d)
				}
			},
		},
		{
			name: "unknown macro", path: "/api/invoke",
			body: map[string]any{"request": &protocol.InvokeRequest{MacroID: "nope-0000", Args: map[string]any{}}},
			code: protocol.CodeMacroNotFound, status: 404, category: "invocation",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r reply
			f.call(t, "POST", tc.path, tc.body, &r)
			if r.OK || r.Error == nil {
				t.Fatalf("no error: %s", r.Result)
			}
			e := r.Error
			if e.Error.Code != tc.code || e.Status != tc.status || e.Local != tc.local {
				t.Errorf("code %s status %d local %v, want %s %d %v", e.Error.Code, e.Status, e.Local, tc.code, tc.status, tc.local)
			}
			if e.Registry == nil || e.Registry.Category != tc.category || e.Registry.HTTPStatus != tc.status {
				t.Errorf("registry %+v", e.Registry)
			}
			var payload protocol.Error
			if err := json.Unmarshal(e.Envelope.Payload, &payload); err != nil || payload.Code != tc.code {
				t.Errorf("envelope payload %s: %v", e.Envelope.Payload, err)
			}
			if tc.check != nil {
				tc.check(t, e.Error.Details)
			}
		})
	}
}

// TestTransportError: a call on a broken session is x-transport_error.
func TestTransportError(t *testing.T) {
	f := newFixture(t, nil)
	_ = f.sess.Close()
	var r reply
	f.call(t, "POST", "/api/evaluate", evaluateRequest(diagnoseFacts(), nil), &r)
	if r.OK || r.Error == nil || !r.Error.Transport || r.Error.Error.Code != "x-transport_error" || r.Error.Registry != nil {
		t.Fatalf("%+v", r.Error)
	}
}

// TestApply: a state delta applies to the editor's facts with the
// client's working-state rules.
func TestApply(t *testing.T) {
	f := newFixture(t, nil)
	facts := []protocol.Fact{
		protocol.NewFact("current_url", "https://a.example"),
		protocol.NewFact("diagnosed_error", "r42", "old"),
		protocol.NewFact("diagnosed_error", "r7", "other"),
	}
	delta := protocol.StateDelta{
		Retract: []protocol.Fact{protocol.NewFact("diagnosed_error", "r42", nil)},
		Assert:  []protocol.Fact{protocol.NewFact("diagnosed_error", "r42", "new"), protocol.NewFact("current_url", "https://a.example")},
	}
	var v inspector.ApplyView
	if code := f.call(t, "POST", "/api/apply", map[string]any{"facts": facts, "delta": delta}, &v); code != 200 {
		t.Fatalf("HTTP %d", code)
	}
	if v.Retracted != 1 || v.Asserted != 1 || len(v.Facts) != 3 {
		t.Fatalf("apply: %+v", v)
	}
	if got := v.Facts[2].Args[1]; got != "new" {
		t.Errorf("asserted fact %v", v.Facts[2])
	}
}

// TestBadCalls: calls the API cannot make are 4xx with a reason.
func TestBadCalls(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name string
		path string
		body string
		want int
	}{
		{"not JSON", "/api/evaluate", "{", 400},
		{"unknown field", "/api/evaluate", `{"request": {"intent": {"name": "x"}, "facts": []}, "extra": 1}`, 400},
		{"no intent", "/api/evaluate", `{"request": {"intent": {"name": ""}, "facts": []}}`, 400},
		{"no macro_id", "/api/invoke", `{"request": {"macro_id": "", "args": {}}}`, 400},
		{"two values", "/api/apply", `{"facts": []} {}`, 400},
		{"too large", "/api/evaluate", `{"request": "` + strings.Repeat("x", 17<<20) + `"}`, 413},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", f.http.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set(inspector.TokenHeader, f.in.Token())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error string `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != tc.want || e.Error == "" {
				t.Errorf("HTTP %d %q, want %d with a reason", resp.StatusCode, e.Error, tc.want)
			}
		})
	}
}

// TestRefresh: refreshing the manifest is a history entry too.
func TestRefresh(t *testing.T) {
	f := newFixture(t, nil)
	var r reply
	f.call(t, "POST", "/api/manifest/refresh", nil, &r)
	if !r.OK || r.HistoryID != 1 {
		t.Fatalf("%+v", r)
	}
}

// TestTokensDiffer: every inspector has its own random session token.
func TestTokensDiffer(t *testing.T) {
	a, b := newFixture(t, nil), newFixture(t, nil)
	if a.in.Token() == b.in.Token() || len(a.in.Token()) < 40 {
		t.Errorf("tokens %q and %q", a.in.Token(), b.in.Token())
	}
	// One inspector's token does not open the other.
	req, _ := http.NewRequest("GET", b.http.URL+"/api/session", nil)
	req.Header.Set(inspector.TokenHeader, a.in.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("HTTP %d", resp.StatusCode)
	}
}

// wrongToken is token with its first character changed (always: a token
// may start with any character).
func wrongToken(token string) string {
	if token[0] == 'x' {
		return "y" + token[1:]
	}
	return "x" + token[1:]
}
