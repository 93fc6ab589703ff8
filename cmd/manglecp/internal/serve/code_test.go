package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
)

// TestServeCode runs `manglecp serve --domain code --root DIR` with gopls
// on PATH (scripts/deps/lsp.sh installs it into .cache/lsp/bin), finds a
// symbol through the language server, and checks that the server's exit
// ends gopls too.
//
// Not parallel: the code domain finds gopls on the process's PATH.
func TestServeCode(t *testing.T) {
	bin, _ := filepath.Abs("../../../../.cache/lsp/bin")
	if _, err := os.Stat(filepath.Join(bin, "gopls")); err == nil {
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	testenv.LookPath(t, "gopls")
	dir := filepath.Join(t.TempDir(), "proj")
	for name, content := range map[string]string{
		"go.mod":  "module example.com/p\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc helper() int { return 1 }\n\nfunc main() { println(helper()) }\n",
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := testenv.ChildPIDs(t)
	addr := clitest.FreeAddr(t)
	srv := commands.Start(t, clitest.Env(t), nil, "serve", "--addr", addr, "--domain", "code", "--root", dir)
	ctx, stderr := srv.Ctx, srv.Stderr
	var sess *client.Session
	wait := testenv.NewWait(10 * time.Second)
	for {
		var err error
		sess, err = client.Dial(ctx, "http://"+addr, &client.Options{MaxAttempts: 1})
		if err == nil && sess.Manifest().Status == protocol.StatusReady {
			break
		}
		if !wait.Next() {
			t.Fatalf("server did not come up: %v\n%s", err, stderr.String())
		}
	}
	m := sess.Manifest()
	if m.Domain.ID != "code" {
		t.Fatalf("domain %s", m.Domain.ID)
	}
	ext, _ := m.Extensions["x-code"].(map[string]any)
	if langs, _ := ext["languages"].(map[string]any); langs["go"] == nil {
		t.Errorf("x-code %v", ext)
	}
	resp, err := sess.Evaluate(ctx, &protocol.IntentRequest{Intent: protocol.Intent{Name: "symbols"}, Facts: []protocol.Fact{}})
	if err != nil {
		t.Fatal(err)
	}
	var find string
	for _, mt := range resp.MacroTools {
		if mt.Name == "find_symbol" {
			find = mt.MacroID
		}
	}
	if find == "" {
		t.Fatalf("symbols offers %v", resp.MacroTools)
	}
	out, err := sess.Invoke(ctx, &protocol.InvokeRequest{MacroID: find, Args: map[string]any{"name": "helper"}})
	if err != nil {
		t.Fatalf("find_symbol: %v\n%s", err, stderr.String())
	}
	if defs, _ := out.Result["definitions"].([]any); len(defs) != 1 || !strings.HasPrefix(defs[0].(string), "main.go:3 function helper") {
		t.Errorf("definitions %v", out.Result)
	}
	sess.Close()
	if code := srv.Stop(t); code != 0 {
		t.Errorf("exit code %d\n%s", code, stderr.String())
	}
	var started []string
	for _, p := range testenv.ChildPIDs(t) {
		if !strings.Contains(" "+strings.Join(before, " ")+" ", " "+p+" ") {
			started = append(started, p)
		}
	}
	testenv.WaitGone(t, started)
}
