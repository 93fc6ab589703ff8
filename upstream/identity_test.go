package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/upstream"
	"github.com/manglecp/manglecp/upstream/upstreamtest"
)

func testLogger(b *testenv.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// textOf returns a reader of a call's text: textOf(t)(u.Call(...)).
func textOf(t *testing.T) func(*mcp.CallToolResult, error) string {
	return func(res *mcp.CallToolResult, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
}

// TestIdentitiesHaveTheirOwnSessions (issue 35 item 1): a stateful notes
// server run as a command: what identity A keeps is never in B's answers,
// each identity has its own process; with Shared (the documented opt-in
// for stateless upstreams) one process serves both.
func TestIdentitiesHaveTheirOwnSessions(t *testing.T) {
	ctx := context.Background()
	u := start(t, fake(t, "notes", nil))
	if _, err := u.Call(ctx, "id:alice", "note_add", map[string]any{"text": "alice-api-key-123"}); err != nil {
		t.Fatal(err)
	}
	bob := textOf(t)(u.Call(ctx, "id:bob", "note_list", nil))
	if strings.Contains(bob, "alice-api-key") {
		t.Fatalf("bob sees alice's note: %q", bob)
	}
	alice := textOf(t)(u.Call(ctx, "id:alice", "note_list", nil))
	if !strings.Contains(alice, "alice-api-key-123") {
		t.Fatalf("alice lost her note: %q", alice)
	}
	pid := func(s string) string { _, p, _ := strings.Cut(s, "pid "); return p }
	if pid(alice) == pid(bob) {
		t.Errorf("alice and bob share process %s", pid(alice))
	}
	if st := u.Status(); st.Sessions != 2 || st.State != "up" {
		t.Errorf("status = %+v, want 2 sessions, up", st)
	}

	c := fake(t, "notes", nil)
	c.Shared = true
	shared := start(t, c)
	if _, err := shared.Call(ctx, "id:alice", "note_add", map[string]any{"text": "shared-note"}); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t)(shared.Call(ctx, "id:bob", "note_list", nil)); !strings.Contains(got, "shared-note") {
		t.Errorf("a shared upstream is one session: bob got %q", got)
	}
}

// TestIdentitySessionsBoundedAndReaped: at MaxSessions another identity
// is told to retry (Busy, with a time); a session unused for IdleTimeout
// ends, and the identity's next call starts a fresh one.
func TestIdentitySessionsBoundedAndReaped(t *testing.T) {
	ctx := context.Background()
	c := fake(t, "notes", nil)
	c.MaxSessions = 2
	c.IdleTimeout = 300 * time.Millisecond
	u := start(t, c)
	for _, who := range []string{"a", "b"} {
		if _, err := u.Call(ctx, who, "note_add", map[string]any{"text": "of " + who}); err != nil {
			t.Fatal(err)
		}
	}
	// a and b keep their sessions busy while c asks (an idle one could
	// be reaped first on a slow machine).
	var wg sync.WaitGroup
	for _, who := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := u.Call(ctx, who, "slow", map[string]any{"ms": 2000}); err != nil {
				t.Errorf("%s: %v", who, err)
			}
		}()
	}
	testenv.Eventually(t, 10*time.Second, "a and b have their sessions", func() bool { return u.Status().Sessions >= 2 })
	_, err := u.Call(ctx, "c", "note_list", nil)
	wg.Wait()
	var e *upstream.Error
	if !errors.As(err, &e) || e.Kind != upstream.Busy || e.RetryAfter <= 0 {
		t.Fatalf("a third identity over MaxSessions 2: %v, want busy with a retry time", err)
	}
	testenv.Eventually(t, 20*time.Second, "the idle sessions reaped", func() bool { return u.Status().Sessions == 0 })
	if got := textOf(t)(u.Call(ctx, "a", "note_list", nil)); strings.Contains(got, "of a") {
		t.Errorf("after being reaped, a's session still holds %q", got)
	}
	if _, err := u.Call(ctx, "c", "note_list", nil); err != nil {
		t.Errorf("c after the others were reaped: %v", err)
	}
}

// TestStreamableHTTPIdentities: an HTTP upstream keeping state per MCP
// session gives each identity its own session.
func TestStreamableHTTPIdentities(t *testing.T) {
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return upstreamtest.Server("notes") }, nil))
	defer hs.Close()
	ctx := context.Background()
	u := start(t, upstream.Config{Name: "web", URL: hs.URL})
	if _, err := u.Call(ctx, "id:alice", "note_add", map[string]any{"text": "alice-only"}); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t)(u.Call(ctx, "id:bob", "note_list", nil)); strings.Contains(got, "alice-only") {
		t.Fatalf("bob sees alice's note over HTTP: %q", got)
	}
}

// TestCleanEnvironment (issue 35 item 5): an upstream command gets PATH,
// HOME and the like, what PassEnv names and what Env sets; never the
// server's secrets or anything else of its environment.
func TestCleanEnvironment(t *testing.T) {
	t.Setenv("MANGLECP_AUTH_TOKEN", "auth-secret-1")
	t.Setenv("MANGLECP_CONFIRMATION_KEY", "confirm-secret-2")
	t.Setenv("MANGLECP_STORE_KEY", "store-secret-3")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-4")
	t.Setenv("PASS_ME", "passed")
	c := fake(t, "notes", nil)
	c.PassEnv = []string{"PASS_ME"}
	c.Env = append(c.Env, "GIVEN=value")
	u := start(t, c)
	env := textOf(t)(u.Call(context.Background(), "", "env", nil))
	for _, secret := range []string{"auth-secret-1", "confirm-secret-2", "store-secret-3", "aws-secret-4", "MANGLECP_AUTH_TOKEN"} {
		if strings.Contains(env, secret) {
			t.Errorf("the upstream's environment holds %s", secret)
		}
	}
	for _, want := range []string{"PATH=", "HOME=", "PASS_ME=passed", "GIVEN=value"} {
		if !strings.Contains(env, want) {
			t.Errorf("the upstream's environment lacks %s:\n%s", want, env)
		}
	}
	bad := fake(t, "notes", nil)
	bad.PassEnv = []string{"MANGLECP_AUTH_TOKEN"}
	if err := bad.Check(); err == nil {
		t.Error("PassEnv may name MANGLECP_AUTH_TOKEN")
	}
}

// TestURLCredentialsRedacted (issue 35 item 3): an upstream URL's query
// values and user information reach neither the status reason (the
// manifest's x-upstreams) nor the log.
func TestURLCredentialsRedacted(t *testing.T) {
	var log testenv.Buffer
	c := upstream.Config{Name: "web", URL: "http://user:hunter2@127.0.0.1:1/mcp?access_token=tok-SECRET&x=other-SECRET",
		MinBackoff: time.Hour, MaxBackoff: time.Hour, ConnectTimeout: 5 * time.Second}
	c.Logger = testLogger(&log)
	u, err := tryStart(t, c)
	if err == nil {
		t.Fatal("an upstream at port 1 started")
	}
	st := u.Status()
	out := fmt.Sprint(st) + err.Error() + log.String()
	if strings.Contains(out, "SECRET") || strings.Contains(out, "hunter2") {
		t.Fatalf("a credential of the URL leaked: status %+v, error %v, log %s", st, err, log.String())
	}
	if !strings.Contains(st.Reason, "access_token=REDACTED") {
		t.Errorf("reason %q: want the URL with its query redacted", st.Reason)
	}
	if got := upstream.RedactURLs(`Post "https://tok@h.example/p?k=v&flag": x`); got != `Post "https://REDACTED@h.example/p?k=REDACTED&REDACTED": x` {
		t.Errorf("RedactURLs = %s", got)
	}
}

// TestRedirectToAnotherHostNotFollowed (issue 35 item 18): an HTTP
// upstream answering 307 to another server: the JSON-RPC body is never
// posted there.
func TestRedirectToAnotherHostNotFollowed(t *testing.T) {
	var posted atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posted.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer other.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/steal", http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	u, err := tryStart(t, upstream.Config{Name: "web", URL: redirect.URL, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	if err == nil {
		t.Fatal("started through a redirect to another host")
	}
	if n := posted.Load(); n != 0 {
		t.Fatalf("the other host got %d requests", n)
	}
	if !strings.Contains(u.Status().Reason, "redirect") {
		t.Errorf("reason %q does not say redirect", u.Status().Reason)
	}
}

// TestOversizedAnswerLeavesTheSessionUp (issue 35 items 10 and 16): on a
// shared command upstream, one call's 6 MB answer fails that call alone
// (AnswerTooLarge); six calls of other identities under way at the same
// time succeed, and the process is the same afterwards.
func TestOversizedAnswerLeavesTheSessionUp(t *testing.T) {
	var log testenv.Buffer
	c := fake(t, "notes", &log)
	c.Shared = true
	u := start(t, c)
	ctx := context.Background()
	before := textOf(t)(u.Call(ctx, "", "note_list", nil))
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := u.Call(ctx, fmt.Sprintf("id:other%d", i), "slow", map[string]any{"ms": 1500})
			errs <- err
		}()
	}
	// The slow calls are under way (they last 1.5 s): the fake says so on
	// its stderr, which the upstream logs.
	testenv.Eventually(t, 10*time.Second, "six slow calls under way", func() bool {
		return strings.Count(log.String(), upstreamtest.SlowStarted) >= 6
	})
	_, err := u.Call(ctx, "id:big", "huge", map[string]any{"n": 6 << 20})
	if k := kindOf(err); k != upstream.AnswerTooLarge {
		t.Fatalf("a 6 MB answer: %v (kind %v), want answer too large", err, k)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("another identity's call failed: %v", err)
		}
	}
	after := textOf(t)(u.Call(ctx, "", "note_list", nil))
	if before != after || u.Status().Restarts != 0 {
		t.Errorf("the session did not survive: %q -> %q, status %+v", before, after, u.Status())
	}
}

// TestOversizedAnswerOverHTTP: the same over streamable HTTP, JSON and
// SSE answers.
func TestOversizedAnswerOverHTTP(t *testing.T) {
	for _, jsonResponse := range []bool{true, false} {
		t.Run(fmt.Sprintf("json=%v", jsonResponse), func(t *testing.T) {
			srv := upstreamtest.Server("normal")
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse}))
			defer hs.Close()
			u := start(t, upstream.Config{Name: "web", URL: hs.URL, MaxMessageBytes: 64 << 10, Shared: true})
			_, err := u.Call(context.Background(), "", "huge", map[string]any{"n": 1 << 20})
			if k := kindOf(err); k != upstream.AnswerTooLarge {
				t.Fatalf("a 1 MiB answer over a 64 KiB bound: %v, want answer too large", err)
			}
			if got := textOf(t)(u.Call(context.Background(), "", "echo", map[string]any{"text": "still"})); got != "still" {
				t.Errorf("after: %q", got)
			}
		})
	}
}

// TestListChangedFloodLogsOnce (issue 35 item 17): thousands of
// notifications/tools/list_changed write one WARN line.
func TestListChangedFloodLogsOnce(t *testing.T) {
	var log testenv.Buffer
	c := fake(t, "listflood", &log)
	u := start(t, c)
	for i := 0; i < 2; i++ {
		if got := textOf(t)(u.Call(context.Background(), "", "echo", nil)); got != "echoed" {
			t.Fatalf("echo = %q", got)
		}
	}
	testenv.Poll(10*time.Second, func() bool { return strings.Contains(log.String(), "tool list changed") })
	if n := strings.Count(log.String(), "tool list changed"); n != 1 {
		t.Errorf("%d log lines for %d notifications, want 1", n, 2*upstreamtest.FloodNotifications)
	}
}

// TestHugeDescriptionsClipped (issue 35 item 15): 256 tools with huge
// descriptions (256 KiB each here, 64 MiB in all; the 1.5 MB with
// MANGLECP_TEST_DESC_KIB=1536): each description is clipped as the list is
// read, so the listed tools hold kilobytes, not what was sent.
func TestHugeDescriptionsClipped(t *testing.T) {
	kib := 256
	if v, err := strconv.Atoi(os.Getenv("MANGLECP_TEST_DESC_KIB")); err == nil && v > 0 {
		kib = v
	}
	desc := strings.Repeat("d", kib<<10)
	c := upstream.Config{Name: "big", Dial: func(ctx context.Context) (mcp.Transport, func(), error) {
		s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
		for i := 0; i < 256; i++ {
			s.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%03d", i), Description: desc, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			return nil, nil, err
		}
		return ct, func() { _ = ss.Close() }, nil
	}, ConnectTimeout: 5 * time.Minute}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	u := start(t, c)
	tools := u.Tools()
	after := heap()
	if len(tools) != 256 {
		t.Fatalf("%d tools listed", len(tools))
	}
	if n := len(tools[0].Description); n > upstream.MaxToolDescription {
		t.Errorf("a description of %d bytes kept", n)
	}
	grew := int64(after) - int64(before)
	t.Logf("heap after listing 256 tools of %d KiB descriptions: %+d KiB", kib, grew>>10)
	if grew > 16<<20 {
		t.Errorf("the listed tools hold %d MiB of heap", grew>>20)
	}
	runtime.KeepAlive(u)
}

// TestIdentityDialShared: the calls of one identity that come while its
// session is dialled share that one dial (internal/ondemand), and a caller
// who gives up leaves the dial to the others: it is neither cancelled nor
// counted as a failure. In a synctest bubble: synctest.Wait returns once
// every caller waits.
func TestIdentityDialShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int32
		release := make(chan struct{})
		c := upstream.Config{Name: "mem", Dial: func(ctx context.Context) (mcp.Transport, func(), error) {
			if dials.Add(1) > 1 { // the first is Start's (the spare, which alice takes)
				select {
				case <-release:
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				}
			}
			return inMemory(ctx)
		}}
		u := start(t, c)
		echo := func(ctx context.Context, who string) string {
			res, err := u.Call(ctx, who, "echo", map[string]any{"text": who})
			if err != nil {
				return err.Error()
			}
			return res.Content[0].(*mcp.TextContent).Text
		}
		if got := echo(t.Context(), "alice"); got != "alice" {
			t.Fatalf("alice = %q", got)
		}
		// bob's first caller starts the dial, two more wait for it, then
		// the first gives up.
		quit, cancel := context.WithCancel(t.Context())
		results := make(chan string, 3)
		go func() { results <- "first: " + echo(quit, "bob") }()
		synctest.Wait()
		for range 2 {
			go func() { results <- echo(t.Context(), "bob") }()
		}
		synctest.Wait()
		cancel()
		if got := <-results; got != "first: "+context.Canceled.Error() {
			t.Fatalf("the caller who gave up got %q", got)
		}
		close(release)
		for range 2 {
			if got := <-results; got != "bob" {
				t.Errorf("a waiting caller got %q", got)
			}
		}
		if n := dials.Load(); n != 2 {
			t.Errorf("%d dials, want 2 (Start's, then bob's)", n)
		}
		if st := u.Status(); st.State != "up" || st.Sessions != 2 || st.Restarts != 0 {
			t.Errorf("status %+v, want up with 2 sessions", st)
		}
	})
}

// TestIdentityDialAbandoned: when every caller of an identity gives up
// while its session is dialled, the dial is cancelled, the identity holds
// no slot of MaxSessions, nothing counts as a failure, and its next call
// dials again.
func TestIdentityDialAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dials atomic.Int32
		hold := true
		cancelled := make(chan struct{}, 1)
		c := upstream.Config{Name: "mem", MaxSessions: 2, Dial: func(ctx context.Context) (mcp.Transport, func(), error) {
			if dials.Add(1) == 2 && hold { // bob's first dial waits until abandoned
				<-ctx.Done()
				cancelled <- struct{}{}
				return nil, nil, ctx.Err()
			}
			return inMemory(ctx)
		}}
		u := start(t, c)
		call := func(ctx context.Context, who string) error {
			_, err := u.Call(ctx, who, "echo", map[string]any{"text": who})
			return err
		}
		if err := call(t.Context(), "alice"); err != nil {
			t.Fatal(err)
		}
		quit, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- call(quit, "bob") }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("bob's call that gave up = %v", err)
		}
		<-cancelled
		synctest.Wait()
		if st := u.Status(); st.Sessions != 1 || st.State != "up" || st.Restarts != 0 {
			t.Fatalf("status after the abandoned dial %+v, want alice's session only, up", st)
		}
		hold = false
		if err := call(t.Context(), "bob"); err != nil {
			t.Fatalf("bob's next call: %v", err)
		}
		if n := dials.Load(); n != 3 {
			t.Errorf("%d dials, want 3 (Start's, bob's abandoned one, bob's again)", n)
		}
	})
}
