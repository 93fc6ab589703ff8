package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/upstream"
	"github.com/manglecp/manglecp/upstream/upstreamtest"
)

func TestMain(m *testing.M) {
	upstreamtest.MainIfFake()
	os.Exit(m.Run())
}

// fake returns the config of the test binary run as a fake upstream in
// mode, over stdio.
func fake(t *testing.T, mode string, log *testenv.Buffer) upstream.Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := upstream.Config{Name: "fake", Command: []string{exe}, Env: []string{upstreamtest.EnvMode + "=" + mode},
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, ConnectTimeout: 20 * time.Second}
	if log != nil {
		c.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	return c
}

// start is the upstream c describes, started (closed when the test ends).
func start(t *testing.T, c upstream.Config) *upstream.Upstream {
	t.Helper()
	u, err := tryStart(t, c)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return u
}

// tryStart is the upstream c describes (closed when the test ends) and
// what its Start returned.
func tryStart(t *testing.T, c upstream.Config) (*upstream.Upstream, error) {
	t.Helper()
	u, err := upstream.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = u.Close() })
	return u, u.Start(context.Background())
}

func kindOf(err error) upstream.Kind {
	var e *upstream.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    upstream.Config
		want string
	}{
		{"bad name", upstream.Config{Name: "Bad-Name", Command: []string{"x"}}, "lower-case"},
		{"neither", upstream.Config{Name: "a"}, "command or a URL"},
		{"both", upstream.Config{Name: "a", Command: []string{"x"}, URL: "http://h"}, "command or a URL"},
		{"url scheme", upstream.Config{Name: "a", URL: "ftp://h"}, "http"},
		{"env", upstream.Config{Name: "a", Command: []string{"x"}, Env: []string{"NOEQUALS"}}, "KEY=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want %q", err, tc.want)
			}
		})
	}
}

// inMemory dials the fake upstream in its "normal" mode in this process,
// over the SDK's in-memory transports.
func inMemory(ctx context.Context) (mcp.Transport, func(), error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := upstreamtest.Server("normal").Connect(ctx, st, nil)
	if err != nil {
		return nil, nil, err
	}
	return ct, func() { _ = ss.Close() }, nil
}

// TestInMemory: an in-process server over the SDK's in-memory transports,
// its tools listed with the annotations' defaults applied.
func TestInMemory(t *testing.T) {
	c := upstream.Config{Name: "mem", Dial: inMemory}
	u := start(t, c)
	tools := map[string]upstream.Tool{}
	for _, tl := range u.Tools() {
		tools[tl.Name] = tl
	}
	if tl := tools["echo"]; !tl.ReadOnly || tl.Destructive || tl.OpenWorld {
		t.Errorf("echo = %+v, want read-only, closed world", tl)
	}
	if tl := tools["fetch_url"]; !tl.OpenWorld {
		t.Errorf("fetch_url = %+v: openWorldHint defaults to true", tl)
	}
	if tl := tools["delete-everything"]; !tl.Destructive || tl.ReadOnly {
		t.Errorf("delete-everything = %+v, want destructive", tl)
	}
	res, err := u.Call(context.Background(), "", "echo", map[string]any{"text": "hi"})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("echo = %v, %v", res, err)
	}
	if st := u.Status(); st.State != "up" || st.Tools != len(tools) {
		t.Errorf("status = %+v", st)
	}
}

// TestKilledMidCall: the upstream process dies during a call; the call
// fails as unreachable, the server is restarting, and after the backoff
// the next call works on a new process.
func TestKilledMidCall(t *testing.T) {
	var mu sync.Mutex
	var states []string
	c := fake(t, "normal", nil)
	c.OnStatus = func(s upstream.Status) {
		mu.Lock()
		states = append(states, s.State)
		mu.Unlock()
	}
	u := start(t, c)
	_, err := u.Call(context.Background(), "", "crash", nil)
	if kindOf(err) != upstream.Unreachable {
		t.Fatalf("crash: %v, want unreachable", err)
	}
	if !strings.Contains(err.Error(), "stopped during the call") {
		t.Errorf("crash: %v", err)
	}
	w := testenv.NewWait(15 * time.Second)
	for {
		res, err := u.Call(context.Background(), "", "echo", map[string]any{"text": "back"})
		if err == nil {
			if res.Content[0].(*mcp.TextContent).Text != "back" {
				t.Fatalf("echo after restart: %v", res)
			}
			break
		}
		if !w.Next() {
			t.Fatalf("no restart: %v", err)
		}
	}
	if st := u.Status(); st.State != "up" || st.Restarts < 1 {
		t.Errorf("status = %+v, want up after a restart", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(states, ","), "restarting") {
		t.Errorf("states %v: no restarting", states)
	}
}

// TestTimeoutAndCancel: a slow answer ends at the call timeout (timeout),
// a cancelled context ends the call at once, and the upstream keeps
// serving.
func TestTimeoutAndCancel(t *testing.T) {
	var log testenv.Buffer
	c := fake(t, "normal", &log)
	c.CallTimeout = 200 * time.Millisecond
	u := start(t, c)
	begin := time.Now()
	_, err := u.Call(context.Background(), "", "slow", map[string]any{"ms": 10000})
	if kindOf(err) != upstream.Timeout || time.Since(begin) > 3*time.Second {
		t.Fatalf("slow: %v after %s, want timeout at once", err, time.Since(begin))
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the call is under way (the fake says so on stderr).
		testenv.Poll(10*time.Second, func() bool { return strings.Contains(log.String(), upstreamtest.SlowStarted) })
		cancel()
	}()
	if _, err := u.Call(ctx, "", "slow", map[string]any{"ms": 10000}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := u.Call(context.Background(), "", "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatalf("echo after timeouts: %v", err)
	}
}

// TestHostile: huge tool lists are cut at MaxTools, a message over
// MaxMessageBytes is a protocol mismatch, stderr floods are bounded in the
// log, and upstream stderr reaches the log.
func TestHostile(t *testing.T) {
	t.Run("huge list", func(t *testing.T) {
		c := fake(t, "hugelist", nil)
		c.MaxTools = 50
		u := start(t, c)
		if n := len(u.Tools()); n != 50 {
			t.Fatalf("%d tools, want 50", n)
		}
	})
	t.Run("message over the bound", func(t *testing.T) {
		c := fake(t, "hugeline", nil)
		c.MaxMessageBytes = 1 << 20
		u, err := tryStart(t, c)
		if kindOf(err) != upstream.ProtocolMismatch && kindOf(err) != upstream.Unreachable {
			t.Fatalf("Start = %v, want a protocol mismatch", err)
		}
		if st := u.Status(); st.State != "down" || st.Reason == "" {
			t.Errorf("status = %+v", st)
		}
	})
	t.Run("huge answer", func(t *testing.T) {
		c := fake(t, "normal", nil)
		c.MaxMessageBytes = 64 << 10
		u := start(t, c)
		_, err := u.Call(context.Background(), "", "huge", map[string]any{"n": 1 << 20})
		if err == nil {
			t.Fatal("a 1 MiB answer over a 64 KiB bound succeeded")
		}
		if k := kindOf(err); k != upstream.AnswerTooLarge {
			t.Fatalf("huge: %v, want answer too large", err)
		}
	})
	t.Run("stderr", func(t *testing.T) {
		var log testenv.Buffer
		c := fake(t, "stderrflood", &log)
		u := start(t, c)
		begin := time.Now()
		// A second's window passes with lines dropped (the process floods
		// far more than the bound), as the log says.
		testenv.Eventually(t, 10*time.Second, "stderr lines dropped", func() bool { return strings.Contains(log.String(), "upstream stderr lines dropped") })
		_ = u.Close()
		took := time.Since(begin)
		out := log.String()
		if !strings.Contains(out, "upstream stderr") || !strings.Contains(out, "flood line") {
			t.Fatalf("no stderr in the log: %.300s", out)
		}
		if strings.Contains(out, "/secret/dir") {
			t.Errorf("stderr path in the log unshortened")
		}
		if n, most := strings.Count(out, "flood line"), 50*(int(took/time.Second)+2); n > most {
			t.Errorf("%d stderr lines logged in %v; the bound is 50 a second (%d in its windows)", n, took, most)
		}
		for _, line := range strings.Split(out, "\n") {
			if len(line) > 2000 {
				t.Fatalf("a logged line of %d bytes", len(line))
			}
		}
	})
}

// TestToolFailedIsSanitized: an upstream's error message reaches the
// caller bounded, without its stack or paths.
func TestToolFailedIsSanitized(t *testing.T) {
	u := start(t, fake(t, "normal", nil))
	res, err := u.Call(context.Background(), "", "fail", nil)
	if err != nil || !res.IsError {
		t.Fatalf("fail = %v, %v", res, err)
	}
	_, err = u.Call(context.Background(), "", "no_such_tool", nil)
	if kindOf(err) != upstream.ToolFailed {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ENOENT: /home/alice/secret/notes.txt\n    at Object.openSync (node:fs:573:3)", "ENOENT: .../notes.txt"},
		{"bell\u0007 and \u202e", `bell\u0007 and \u202e`},
		{strings.Repeat("é", 300), strings.Repeat("é", 148) + "..."},
		{"Traceback (most recent call last):\nValueError: bad", "ValueError: bad"},
	} {
		if got := upstream.Sanitize(tc.in, 299); got != tc.want {
			t.Errorf("Sanitize(%.40q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestLazy: a lazy upstream lists its tools at Start, then runs only from
// the first call.
func TestLazy(t *testing.T) {
	c := fake(t, "normal", nil)
	c.Lazy = true
	u := start(t, c)
	if st := u.Status(); st.State != "idle" || st.Tools == 0 {
		t.Fatalf("after Start: %+v, want idle with tools", st)
	}
	if _, err := u.Call(context.Background(), "", "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	if st := u.Status(); st.State != "up" {
		t.Fatalf("after a call: %+v", st)
	}
}

// TestUnreachable: a command that does not exist is down with a reason.
func TestUnreachable(t *testing.T) {
	u, err := tryStart(t, upstream.Config{Name: "gone", Command: []string{"/nonexistent/upstream"}})
	if kindOf(err) != upstream.Unreachable || strings.Contains(err.Error(), "/nonexistent") {
		t.Fatalf("Start = %v, want unreachable without the path", err)
	}
	_, err = u.Call(context.Background(), "", "x", nil)
	var e *upstream.Error
	if !errors.As(err, &e) || e.RetryAfter <= 0 {
		t.Fatalf("Call during backoff = %v, want unreachable with a retry time", err)
	}
}

// TestStreamableHTTP: an upstream at a streamable-HTTP URL lists and
// calls its tools; an answer over MaxMessageBytes is refused, bounded; a
// server that went away is unreachable.
func TestStreamableHTTP(t *testing.T) {
	for _, jsonResponse := range []bool{true, false} {
		t.Run(fmt.Sprintf("json=%v", jsonResponse), func(t *testing.T) { testStreamableHTTP(t, jsonResponse) })
	}
}

func testStreamableHTTP(t *testing.T, jsonResponse bool) {
	srv := upstreamtest.Server("normal")
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse}))
	defer hs.Close()
	c := upstream.Config{Name: "web", URL: hs.URL, MaxMessageBytes: 64 << 10, MinBackoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	u := start(t, c)
	if len(u.Tools()) == 0 {
		t.Fatal("no tools listed over HTTP")
	}
	res, err := u.Call(context.Background(), "", "echo", map[string]any{"text": "over http"})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "over http" {
		t.Fatalf("echo = %v, %v", res, err)
	}
	_, err = u.Call(context.Background(), "", "huge", map[string]any{"n": 1 << 20})
	if k := kindOf(err); k != upstream.AnswerTooLarge {
		t.Fatalf("a 1 MiB answer over a 64 KiB bound: %v, want answer too large", err)
	}
	hs.Close()
	w := testenv.NewWait(5 * time.Second)
	for {
		_, err = u.Call(context.Background(), "", "echo", map[string]any{"text": "x"})
		if kindOf(err) == upstream.Unreachable {
			break
		}
		if !w.Next() {
			t.Fatalf("after the server went away: %v", err)
		}
	}
}
