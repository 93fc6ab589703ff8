package inspector

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// Strings a hostile server (or a careless user) puts where an exported
// script interpolates a value: each would create a file in the working
// directory if the shell ran it as code.
const (
	hostileDouble   = `";touch dq;echo "`
	hostileSubst    = `$(touch subst)`
	hostileBacktick = "`touch backtick`"
	hostileSingle   = `';touch sq;'`
	hostileNewline  = "line\ntouch newline\n"
)

// hostileAll joins every hostile string, for values that may hold any.
var hostileAll = hostileDouble + hostileSubst + hostileBacktick + hostileSingle + hostileNewline

// hostileHistory is a session whose every value is hostile: the intent
// name, params and facts, the macro_ids (which come from the server) and
// the arguments, confirmed and not.
func hostileHistory() []*entry {
	return []*entry{
		{ID: 1, Kind: "evaluate", OK: true, Summary: hostileAll,
			Intent: &protocol.IntentRequest{
				Intent: protocol.Intent{Name: hostileAll, Params: map[string]any{hostileSubst: hostileAll}},
				Facts:  []protocol.Fact{protocol.NewFact("current_url", hostileAll)},
			}},
		{ID: 2, Kind: "invoke", OK: false, Code: protocol.Code(hostileAll), Summary: hostileAll,
			Invoke: &protocol.InvokeRequest{MacroID: hostileAll, Args: map[string]any{"a": hostileAll}}},
		{ID: 3, Kind: "invoke", OK: true, Confirmed: true, Summary: hostileAll,
			Invoke: &protocol.InvokeRequest{MacroID: hostileAll + tokenMarker, Args: map[string]any{"b": hostileAll + tokenMarker}}},
		{ID: 4, Kind: "manifest", OK: true, Summary: hostileAll},
	}
}

// hostileManifest names its endpoints with the hostile strings, in the
// path and the query, raw as a server would write them.
func hostileManifest(eval, invoke string) *protocol.Manifest {
	return &protocol.Manifest{
		ServerName: hostileAll, ServerVersion: hostileAll,
		Protocol:  protocol.ProtocolInfo{Manglecp: hostileAll},
		Domain:    protocol.DomainInfo{ID: hostileAll},
		Endpoints: &protocol.Endpoints{IntentEval: eval, MacroInvoke: invoke},
	}
}

// recorded is one request the test server received.
type recorded struct {
	method, path, query string
	auth                string
	body                []byte
}

// recordingServer answers every request with an empty object and keeps
// what it received, decoded: the path and query as a server sees them.
func recordingServer(t *testing.T) (*httptest.Server, func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var got []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q, err := url.PathUnescape(r.URL.RawQuery)
		if err != nil {
			q = "undecodable: " + r.URL.RawQuery
		}
		mu.Lock()
		got = append(got, recorded{method: r.Method, path: r.URL.Path, query: q, auth: r.Header.Get("Authorization"), body: body})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	return srv, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), got...)
	}
}

// runSandboxed runs script with shell in an empty working directory (also
// HOME and TMPDIR) and fails the test if anything is left in it.
func runSandboxed(t *testing.T, shell, script string, env ...string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(shell, "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "TMPDIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s failed: %v\n%s", shell, err, out)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Fatalf("the script ran code: it created %q in its working directory\noutput:\n%s\nscript:\n%s", names, out, script)
	}
}

// TestCurlScriptHostileManifest exports a session with a server whose
// manifest and answers are hostile, runs the script with bash and sh and
// real curl against a local server, and checks that exactly the recorded
// requests arrive, every hostile string intact as data, and that nothing
// else happened (no file in the working directory).
func TestCurlScriptHostileManifest(t *testing.T) {
	testenv.LookPath(t, "curl")
	hostilePath := "/e" + hostileDouble + "/" + hostileSubst + "/" + hostileBacktick + "/" + hostileSingle
	hostileQuery := "q=" + hostileDouble + "&r=" + hostileSubst + "&s=" + hostileBacktick + "&t=" + hostileSingle + "&u=%0A"
	srv, requests := recordingServer(t)
	u, _ := url.Parse(srv.URL)
	// The invocation endpoint is on another host name of the same
	// server, so the script writes it as an absolute URL.
	otherHost := "http://localhost:" + u.Port()

	tests := []struct {
		name                    string
		eval, invoke            string
		wantEvalPath, wantEvalQ string
		wantInvPath, wantInvQ   string
	}{
		{name: "relative", eval: hostilePath + "?" + hostileQuery, invoke: hostilePath + "/inv?" + hostileQuery,
			wantEvalPath: hostilePath, wantEvalQ: "q=" + hostileDouble + "&r=" + hostileSubst + "&s=" + hostileBacktick + "&t=" + hostileSingle + "&u=\n",
			wantInvPath: hostilePath + "/inv", wantInvQ: "q=" + hostileDouble + "&r=" + hostileSubst + "&s=" + hostileBacktick + "&t=" + hostileSingle + "&u=\n"},
		{name: "absolute", eval: srv.URL + hostilePath, invoke: otherHost + hostilePath + "?" + hostileQuery,
			wantEvalPath: hostilePath, wantInvPath: hostilePath,
			wantInvQ: "q=" + hostileDouble + "&r=" + hostileSubst + "&s=" + hostileBacktick + "&t=" + hostileSingle + "&u=\n"},
		// A raw newline is no URL: the script uses the default path and
		// says so in a comment that stays one line.
		{name: "newline", eval: "/x\n" + hostileSubst + "\ntouch nl", invoke: "/y\r\n" + hostileBacktick,
			wantEvalPath: defaultEval, wantInvPath: defaultInvoke},
	}
	shells := []string{"bash", "sh"}
	for _, tc := range tests {
		for _, shName := range shells {
			t.Run(tc.name+"/"+shName, func(t *testing.T) {
				shell := testenv.LookPath(t, shName)
				before := len(requests())
				hist := hostileHistory()
				sc := scriptContext{Target: srv.URL, Manifest: hostileManifest(tc.eval, tc.invoke), Now: scriptNow}
				script := curlScript(sc, hist)
				runSandboxed(t, shell, script, "BASE=", "MANGLECP_AUTH_TOKEN="+hostileSingle, "CONFIRMATION_TOKEN=tok"+hostileSubst)
				got := requests()[before:]
				if len(got) != 4 {
					t.Fatalf("the server got %d requests, want 4: %+v", len(got), got)
				}
				want := []recorded{
					{method: "POST", path: tc.wantEvalPath, query: tc.wantEvalQ},
					{method: "POST", path: tc.wantInvPath, query: tc.wantInvQ},
					{method: "POST", path: tc.wantInvPath, query: tc.wantInvQ},
					{method: "GET", path: manifestPath},
				}
				for i, w := range want {
					g := got[i]
					if g.method != w.method || g.path != w.path || g.query != w.query {
						t.Errorf("request %d: %s %q ? %q\nwant %s %q ? %q", i+1, g.method, g.path, g.query, w.method, w.path, w.query)
					}
					if g.auth != "Bearer "+hostileSingle {
						t.Errorf("request %d: Authorization %q", i+1, g.auth)
					}
				}
				var eval struct {
					Payload protocol.IntentRequest `json:"payload"`
				}
				if err := json.Unmarshal(got[0].body, &eval); err != nil {
					t.Fatalf("evaluate body %q: %v", got[0].body, err)
				}
				if eval.Payload.Intent.Name != hostileAll || eval.Payload.Facts[0].Args[0] != hostileAll || eval.Payload.Intent.Params[hostileSubst] != hostileAll {
					t.Errorf("the evaluation arrived altered: %+v", eval.Payload)
				}
				for i, want := range []struct{ macro, arg, token string }{
					{hostileAll, hostileAll, ""},
					{hostileAll + tokenMarker, hostileAll + tokenMarker, "tok" + hostileSubst},
				} {
					var inv struct {
						Payload protocol.InvokeRequest `json:"payload"`
					}
					if err := json.Unmarshal(got[i+1].body, &inv); err != nil {
						t.Fatalf("invoke body %q: %v", got[i+1].body, err)
					}
					arg := inv.Payload.Args["a"]
					if i == 1 {
						arg = inv.Payload.Args["b"]
					}
					if inv.Payload.MacroID != want.macro || arg != want.arg || inv.Payload.ConfirmationToken != want.token {
						t.Errorf("invocation %d arrived altered: %+v", i+1, inv.Payload)
					}
				}
			})
		}
	}
}

// TestCLIScriptHostileValues runs the manglecp-command export of a
// hostile session with bash and sh, a recording manglecp standing in for
// the real one, and checks that each command gets exactly the recorded
// values as its arguments and standard input, and nothing else happens.
func TestCLIScriptHostileValues(t *testing.T) {
	target := "http://127.0.0.1:1/" + hostileAll
	for _, shName := range []string{"bash", "sh"} {
		t.Run(shName, func(t *testing.T) {
			shell := testenv.LookPath(t, shName)
			bin, rec := t.TempDir(), t.TempDir()
			// The recorder keeps arguments NUL-separated: they hold
			// newlines.
			fake := "#!/bin/sh\nn=$(ls \"" + rec + "\" | grep -c args)\nprintf '%s\\000' \"$@\" > \"" + rec + "/call$n.args\"\ncat > \"" + rec + "/call$n.body\"\n"
			if err := os.WriteFile(filepath.Join(bin, "manglecp"), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			hist := hostileHistory()
			script := cliScript(scriptContext{Target: target, Manifest: hostileManifest(hostilePathOnly, hostilePathOnly), Now: scriptNow}, hist)
			runSandboxed(t, shell, script, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			want := [][]string{
				{"eval", target, "--intent", hostileAll, "--params", compactJSON(map[string]any{hostileSubst: hostileAll}), "--json", "--facts", "-"},
				{"invoke", target, "--macro", hostileAll, "--args", compactJSON(map[string]any{"a": hostileAll}), "--json"},
				{"invoke", target, "--macro", hostileAll + tokenMarker, "--args", compactJSON(map[string]any{"b": hostileAll + tokenMarker}), "--confirm", "--json"},
				{"manifest", target, "--json"},
			}
			for i, w := range want {
				raw, err := os.ReadFile(filepath.Join(rec, "call"+string(rune('0'+i))+".args"))
				if err != nil {
					t.Fatalf("command %d did not run: %v", i+1, err)
				}
				got := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
				if strings.Join(got, "\x00") != strings.Join(w, "\x00") {
					t.Errorf("command %d: %q\nwant %q", i+1, got, w)
				}
			}
			if _, err := os.Stat(filepath.Join(rec, "call4.args")); err == nil {
				t.Errorf("more than 4 commands ran")
			}
			body, _ := os.ReadFile(filepath.Join(rec, "call0.body"))
			var facts []protocol.Fact
			if err := json.Unmarshal(bytes.TrimSpace(body), &facts); err != nil || len(facts) != 1 || facts[0].Args[0] != hostileAll {
				t.Errorf("facts on standard input: %q (%v)", body, err)
			}
		})
	}
}

// hostilePathOnly is an endpoint the CLI script never uses: it must not
// appear in it as code either.
const hostilePathOnly = "/p" + hostileSubst
