package manglecp_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestErrorsEchoClientTextBoundedServer: errors and warnings that name a
// client's intent, macro_id or disclosure preference repeat at most a
// short escaped prefix of it (issue 9 item 1).
func TestErrorsEchoClientTextBoundedServer(t *testing.T) {
	big := strings.Repeat("x", 1<<20) + "\n"
	h := newHarness(t, nil, func(o *manglecp.Options) {})
	for name, r := range map[string]*reply{
		"macro_id": h.invoke("m", map[string]any{"macro_id": big, "args": map[string]any{}}),
		"intent": h.evaluate("i", map[string]any{"intent": map[string]any{"name": big},
			"facts": []any{map[string]any{"pred": "current_url", "args": []any{"https://x"}}}}),
		"disclosure": h.evaluate("d", map[string]any{"intent": map[string]any{"name": "observe"},
			"options": map[string]any{"disclosure_preference": big}}),
	} {
		if len(r.raw) > 8<<10 {
			t.Errorf("%s: answer of %d bytes echoes the client's 1 MiB string: %.200s", name, len(r.raw), r.raw)
		}
		if strings.Contains(string(r.raw), "xxxxxxxxxx\n") {
			t.Errorf("%s: a raw newline of client text reached the answer", name)
		}
	}
}

// TestDrainWaitsOnlyForAdmittedWork: requests refused while draining do
// not count as in flight, so Wait returns as soon as the admitted work is
// done even while refused requests keep arriving (issue 9 item 5).
func TestDrainWaitsOnlyForAdmittedWork(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.srv.Drain()
	// Large messages take a while to decode before they are refused.
	big := envelope(t, protocol.TypeIntentRequest, "big", map[string]any{
		"intent": map[string]any{"name": "observe"},
		"facts":  []any{map[string]any{"pred": "current_url", "args": []any{strings.Repeat("u", 4<<20)}}},
	})
	var refused atomic.Int64
	stop := testenv.Repeat(6, func(int, int) {
		h.srv.Handle(context.Background(), &protocol.Inbound{Data: big, Peer: "192.0.2.1"})
		refused.Add(1)
	})
	defer stop()
	// Refused requests keep arriving: each sender had one answered.
	testenv.Eventually(t, 10*time.Second, "refused requests", func() bool { return refused.Load() >= 6 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := h.srv.Wait(ctx); err != nil {
		t.Fatalf("Wait did not return while only refused requests arrived: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Wait took %v with nothing admitted", d)
	}
}

// TestAuthFailuresAreRateLimitedPerPeer: after a burst of failed
// authentications a peer's failures are answered rate_limited
// (retry_after_ms set); its correct credentials still pass (issue 26 item
// 4: a proxy's address is every caller's); other peers are not affected
// (issue 9 item 4).
func TestAuthFailuresAreRateLimitedPerPeer(t *testing.T) {
	const token = "correct-token-0123456789"
	h := newHarness(t, nil, func(o *manglecp.Options) { o.AuthTokens = []string{token} })
	var _ transport.Handler = h.srv // HTTP authenticates (Handler.Authenticate) before reading a body
	ask := func(peer, tok string) *protocol.Error {
		t.Helper()
		env := h.srv.Handle(context.Background(), &protocol.Inbound{
			Data:        envelope(t, protocol.TypeIntentRequest, "a", map[string]any{"intent": map[string]any{"name": "observe"}}),
			Credentials: &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: tok},
			Peer:        peer,
		})
		if env.Type != protocol.TypeError {
			return nil
		}
		var e protocol.Error
		_ = json.Unmarshal(env.Payload, &e)
		return &e
	}
	limited := 0
	for i := 0; i < 40; i++ {
		e := ask("203.0.113.9", "wrong-token-0123456789")
		if e.Code == protocol.CodeRateLimited {
			if e.RetryAfterMS == nil || *e.RetryAfterMS <= 0 {
				t.Errorf("rate_limited without retry_after_ms")
			}
			limited++
		} else if e.Code != protocol.CodeAuthInvalid {
			t.Fatalf("attempt %d: %s", i, e.Code)
		}
	}
	if limited < 20 {
		t.Fatalf("%d of 40 failed attempts were rate limited", limited)
	}
	if e := ask("203.0.113.9", token); e != nil && (e.Code == protocol.CodeRateLimited || e.Code == protocol.CodeAuthInvalid) {
		t.Errorf("a limited peer with the right token: %s", e.Code) // past authentication, anything else is fine
	}
	if e := ask("198.51.100.7", token); e != nil && (e.Code == protocol.CodeRateLimited || e.Code == protocol.CodeAuthInvalid) {
		t.Errorf("another peer with the right token: %s", e.Code) // past authentication, anything else is fine
	}
	// Over HTTP the same limit answers before the body is read.
	creds := &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: "wrong"}
	if perr := h.srv.CheckCredentials(context.Background(), creds, "203.0.113.9"); perr == nil || perr.Code != protocol.CodeRateLimited {
		t.Errorf("CheckCredentials for a locked-out peer: %v", perr)
	}
}
