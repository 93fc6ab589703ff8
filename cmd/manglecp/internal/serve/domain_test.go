package serve

import (
	"bytes"
	"context"
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

// TestServeWorkspace runs `manglecp serve --domain workspace --root DIR
// --root DIR` (a stable contract) and lists a root through it.
func TestServeWorkspace(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	a, b := filepath.Join(base, "api"), filepath.Join(base, "web")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(a, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := clitest.FreeAddr(t)
	srv := commands.Start(t, clitest.Env(t), nil, "serve", "--addr", addr, "--domain", "workspace", "--root", a, "--root", b)
	ctx, stderr := srv.Ctx, srv.Stderr
	defer func() {
		if code := srv.Stop(t); code != 0 {
			t.Errorf("exit code %d\n%s", code, stderr.String())
		}
	}()
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
	defer sess.Close()
	if id := sess.Manifest().Domain.ID; id != "workspace" {
		t.Fatalf("domain %s", id)
	}
	resp, err := sess.Evaluate(ctx, &protocol.IntentRequest{Intent: protocol.Intent{Name: "explore"}, Facts: []protocol.Fact{}})
	if err != nil {
		t.Fatal(err)
	}
	var listDir string
	for _, m := range resp.MacroTools {
		if m.Name == "list_dir" {
			listDir = m.MacroID
		}
	}
	out, err := sess.Invoke(ctx, &protocol.InvokeRequest{MacroID: listDir, Args: map[string]any{"path": "api"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Result["entries"]; len(got.([]any)) != 1 || got.([]any)[0] != "main.go" {
		t.Errorf("entries %v", got)
	}
	_, err = sess.Invoke(ctx, &protocol.InvokeRequest{MacroID: listDir, Args: map[string]any{"path": "../"}})
	if ce, ok := err.(*client.Error); !ok || ce.Code() != "x-path_outside_roots" || ce.Status != 403 {
		t.Errorf("escape: %v", err)
	}
	if strings.Contains(stderr.String(), "ERROR") {
		t.Errorf("errors logged:\n%s", stderr.String())
	}
}

func TestServeDomainFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	_ = os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"workspace without root", []string{"--domain", "workspace"}, 2, "needs at least one --root"},
		{"root without workspace", []string{"--root", dir}, 2, "--root needs --domain workspace"},
		{"unknown domain", []string{"--domain", "mail"}, 2, "unknown --domain"},
		{"missing root", []string{"--domain", "workspace", "--root", filepath.Join(dir, "nope")}, 1, "nope"},
		{"root is a file", []string{"--domain", "workspace", "--root", file}, 1, "not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)
			if code := commands.Main(context.Background(), clitest.Env(t), args, nil, &bytes.Buffer{}, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tc.code, stderr.String(), tc.want)
			}
		})
	}
}
