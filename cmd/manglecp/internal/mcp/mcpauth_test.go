package mcp

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/manglecp/manglecp/cmd/manglecp/internal/clitest"
	"github.com/manglecp/manglecp/cmd/manglecp/internal/cmdline"
	"github.com/manglecp/manglecp/internal/testenv"
)

// TestMCPHTTPNeedsItsOwnToken: `manglecp mcp --http` in front of a server
// that requires credentials, or listening beyond loopback, refuses to
// start without a bearer token of its own (--http-token or
// MANGLECP_MCP_HTTP_TOKEN); with one, a request without it is 401 and the
// bridge's credential is never usable by a host that lacks the token.
// Before, a host with no credential read and searched through the bridge
// what the server protects.
func TestMCPHTTPNeedsItsOwnToken(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"beyond loopback", []string{"mcp", "--http", "0.0.0.0:0"}, "listens beyond loopback"},
		{"server requires a token", []string{"mcp", "--http", "127.0.0.1:0", "--auth-token", "server-secret-0123456789"}, "server requires credentials"},
		{"short token", []string{"mcp", "--http", "127.0.0.1:0", "--http-token", "short"}, "at least 16"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if code := commands.Main(ctx, clitest.Env(t), tt.args, strings.NewReader(""), io.Discard, &stderr); code != cmdline.ExitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d saying %q", code, stderr.String(), cmdline.ExitUsage, tt.want)
			}
		})
	}

	const token = "bridge-token-0123456789abcdef"
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testenv.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- commands.Main(ctx, clitest.Env(t), []string{"mcp", "--http", "127.0.0.1:0", "--auth-token", "server-secret-0123456789", "--http-token", token}, strings.NewReader(""), io.Discard, stderr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	urlRE := regexp.MustCompile(`url=(http://\S+/mcp)`)
	var url string
	for wait := testenv.NewWait(60 * time.Second); url == ""; {
		if m := urlRE.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		} else if !wait.Next() {
			t.Fatalf("no URL logged\n%s", stderr.String())
		}
	}
	post := func(auth string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(""); code != http.StatusUnauthorized {
		t.Errorf("no token: HTTP %d, want 401", code)
	}
	if code := post("Bearer server-secret-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("the server's token: HTTP %d, want 401 (the bridge's token is its own)", code)
	}
	if code := post("Bearer " + token); code != http.StatusOK {
		t.Errorf("the bridge's token: HTTP %d, want 200", code)
	}
}
