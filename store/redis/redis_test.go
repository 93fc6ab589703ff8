package redis_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/manglecp/manglecp"
	"github.com/manglecp/manglecp/domains/browser"
	"github.com/manglecp/manglecp/internal/testenv"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/store"
	redisstore "github.com/manglecp/manglecp/store/redis"
)

// redisServer is a redis-server process the test started on a free port.
type redisServer struct {
	t    *testing.T
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin := testenv.LookPath(t, "redis-server", "valkey-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &redisServer{t: t, bin: bin, port: port, dir: t.TempDir()}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// start runs redis-server (again, after kill) and waits until it answers.
func (r *redisServer) start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin, "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	for wait := testenv.NewWait(10 * time.Second); wait.Next(); {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), time.Second)
		if err != nil {
			continue
		}
		_, _ = c.Write([]byte("PING\r\n"))
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.HasPrefix(line, "+PONG") {
			return
		}
	}
	r.t.Fatal("redis-server did not start")
}

func (r *redisServer) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

// clock is a settable clock shared by the replicas.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

var start = time.Date(2026, 2, 19, 14, 30, 10, 0, time.UTC)

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789ab"
	olgaToken  = "olga-token-0123456789a"
)

// storeKey is the key the replicas of the tests share to authenticate
// stored macro-tools.
var storeKey = []byte("shared store key of the deployment")

// replicas starts n servers of the browser domain that share one Redis,
// the confirmation key, the store key and two identities, as a deployment
// behind a load balancer would. Each has its own Redis client.
func replicas(t *testing.T, r *redisServer, n int, clk *clock) []*manglecp.Server {
	t.Helper()
	return replicasWith(t, r, n, clk, t.TempDir(), nil)
}

// replicasWith is replicas writing reports to reports and logging to log
// (nil: discarded), with a third identity, olga, allowed only to diagnose.
func replicasWith(t *testing.T, r *redisServer, n int, clk *clock, reports string, log io.Writer) []*manglecp.Server {
	t.Helper()
	var out []*manglecp.Server
	for range n {
		st, err := redisstore.New(context.Background(), redisstore.Options{URL: r.url(), Timeout: 300 * time.Millisecond, Key: storeKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: reports}), &manglecp.Options{
			Store:           st,
			Now:             clk.now,
			ConfirmationKey: []byte("shared confirmation key of the deployment"),
			Identities: []manglecp.Identity{
				{Name: "alice", Token: aliceToken, Permissions: []string{"*"}},
				{Name: "bob", Token: bobToken, Permissions: []string{"*"}},
				{Name: "olga", Token: olgaToken, Permissions: []string{"intent:diagnose_error"}},
			},
			Logger: slog.New(slog.NewTextHandler(cmp.Or(log, io.Discard), nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, srv)
	}
	return out
}

func send(t *testing.T, srv *manglecp.Server, token string, typ protocol.MessageType, payload any) *protocol.Envelope {
	t.Helper()
	env, err := protocol.NewEnvelope(typ, "x", payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := env.Encode()
	return srv.Handle(context.Background(), &protocol.Inbound{Data: raw, Peer: "test",
		Credentials: &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: token}})
}

func diagnose() map[string]any {
	return map[string]any{
		"intent": map[string]any{"name": "diagnose_error"},
		"facts": []any{
			map[string]any{"pred": "current_url", "args": []any{"https://app.example.com/dashboard"}},
			map[string]any{"pred": "console_event", "args": []any{"s1", "error", "TypeError: x is null", 1771511400000}, "t": map[string]any{"at": "2026-02-19T14:30:00Z"}},
			map[string]any{"pred": "net_request", "args": []any{"s1", "r42", "GET", "https://api.example.com/users", 1771511399000}, "t": map[string]any{"start": "2026-02-19T14:29:59Z", "end": "2026-02-19T14:30:01Z"}},
			map[string]any{"pred": "net_response", "args": []any{"s1", "r42", 404, 1771511399500}, "t": map[string]any{"at": 1771511399500}},
		},
		"eval_time": "2026-02-19T14:30:05Z",
		"options":   map[string]any{"disclosure_preference": "full"},
	}
}

// macros evaluates on srv and returns the macro-tools by name.
func macros(t *testing.T, srv *manglecp.Server, token string) map[string]protocol.MacroTool {
	t.Helper()
	env := send(t, srv, token, protocol.TypeIntentRequest, diagnose())
	if env.Type != protocol.TypeIntentResponse {
		t.Fatalf("evaluate: %s", env.Payload)
	}
	var resp protocol.IntentResponse
	if err := json.Unmarshal(env.Payload, &resp); err != nil {
		t.Fatal(err)
	}
	out := map[string]protocol.MacroTool{}
	for _, m := range resp.MacroTools {
		out[m.Name] = m
	}
	if _, ok := out["diagnose_causal_chain"]; !ok {
		t.Fatalf("no diagnose_causal_chain in %s", env.Payload)
	}
	return out
}

func code(env *protocol.Envelope) string {
	if env.Type != protocol.TypeError {
		return "ok"
	}
	var p protocol.Error
	_ = json.Unmarshal(env.Payload, &p)
	return string(p.Code)
}

func message(env *protocol.Envelope) string {
	var p protocol.Error
	_ = json.Unmarshal(env.Payload, &p)
	return p.Message
}

// TestReplicasShareMacroTools: evaluate on one replica, invoke on another,
// replay the confirmation token on the third; ownership holds on every
// replica.
func TestReplicasShareMacroTools(t *testing.T) {
	r := startRedis(t)
	clk := &clock{t: start}
	a, b, c := func(s []*manglecp.Server) (*manglecp.Server, *manglecp.Server, *manglecp.Server) {
		return s[0], s[1], s[2]
	}(replicas(t, r, 3, clk))
	tools := macros(t, a, aliceToken)

	chain := tools["diagnose_causal_chain"].MacroID
	invoke := map[string]any{"macro_id": chain, "args": map[string]any{"request_id": "r42"}}
	if env := send(t, b, aliceToken, protocol.TypeInvokeRequest, invoke); env.Type != protocol.TypeInvokeResponse {
		t.Fatalf("invoke on another replica: %s", env.Payload)
	}
	if env := send(t, c, bobToken, protocol.TypeInvokeRequest, invoke); code(env) != string(protocol.CodeAuthInsufficient) {
		t.Errorf("another identity on a third replica: %s", env.Payload)
	}

	report := tools["write_diagnosis_report"]
	if !report.Safety.RequiresUserConfirmation {
		t.Fatal("write_diagnosis_report needs no confirmation")
	}
	confirmed := map[string]any{"macro_id": report.MacroID, "args": map[string]any{"request_id": "r42"}}
	if env := send(t, c, aliceToken, protocol.TypeInvokeRequest, confirmed); code(env) != string(protocol.CodeConfirmationRequired) {
		t.Errorf("without a token on a third replica: %s", env.Payload)
	}
	confirmed["confirmation_token"] = a.ConfirmationToken(report.MacroID) // issued by the host, with the shared key
	if env := send(t, b, aliceToken, protocol.TypeInvokeRequest, confirmed); env.Type != protocol.TypeInvokeResponse {
		t.Fatalf("confirmed invoke on B: %s", env.Payload)
	}
	env := send(t, c, aliceToken, protocol.TypeInvokeRequest, confirmed)
	if code(env) != string(protocol.CodeConfirmationInvalid) || !strings.Contains(message(env), "already used") {
		t.Errorf("replayed token on C: %s", env.Payload)
	}
	if env := send(t, a, aliceToken, protocol.TypeInvokeRequest, confirmed); code(env) != string(protocol.CodeConfirmationInvalid) {
		t.Errorf("replayed token on A: %s", env.Payload)
	}
}

// TestMacroToolExpiresEverywhere: past its validity window a macro-tool is
// expired on every replica; past its retention it is gone on every
// replica, and Redis holds it only for that retention.
func TestMacroToolExpiresEverywhere(t *testing.T) {
	r := startRedis(t)
	clk := &clock{t: start}
	rs := replicas(t, r, 3, clk)
	m := macros(t, rs[0], aliceToken)["diagnose_causal_chain"]
	if m.Validity == nil || m.Validity.ExpiresAt == nil {
		t.Fatalf("no validity window: %+v", m)
	}
	until := m.Validity.ExpiresAt.Time
	invoke := map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}}

	rc := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port)})
	defer rc.Close()
	ttl, err := rc.PTTL(context.Background(), "manglecp:m:"+m.MacroID).Result()
	if err != nil {
		t.Fatal(err)
	}
	retention := max(until.Sub(start), 5*time.Minute) // Options.MacroTTL default
	if ttl <= retention-time.Minute || ttl > retention {
		t.Errorf("Redis TTL %s, want about %s (validity.expires_at %s, at least MacroTTL)", ttl, retention, until)
	}

	clk.set(until.Add(time.Second))
	for i, s := range rs {
		if env := send(t, s, aliceToken, protocol.TypeInvokeRequest, invoke); code(env) != string(protocol.CodeMacroExpired) {
			t.Errorf("replica %d after validity.expires_at: %s", i, env.Payload)
		}
	}
	clk.set(start.Add(retention + time.Second))
	for i, s := range rs {
		if env := send(t, s, aliceToken, protocol.TypeInvokeRequest, invoke); code(env) != string(protocol.CodeMacroNotFound) {
			t.Errorf("replica %d after retention: %s", i, env.Payload)
		}
	}
}

// TestStoreTTLAndBound: Redis drops a definition at its TTL for every
// client, and evicts the least recently used beyond MaxBytes.
func TestStoreTTLAndBound(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	var stores []*redisstore.Store
	for range 3 {
		st, err := redisstore.New(ctx, redisstore.Options{URL: r.url(), MaxBytes: 10_000, Key: storeKey})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores = append(stores, st)
	}
	if err := stores[0].PutMacros(ctx, []store.Macro{{ID: "short", Data: []byte("x"), TTL: 300 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if v, err := stores[1].GetMacro(ctx, "short"); err != nil || string(v) != "x" {
		t.Fatalf("get on another client: %q %v", v, err)
	}
	// Redis expires the key on its own clock: poll it.
	testenv.Eventually(t, 10*time.Second, "the definition dropped at its TTL", func() bool {
		v, err := stores[0].GetMacro(ctx, "short")
		return err == nil && v == nil
	})
	for i, st := range stores {
		if v, err := st.GetMacro(ctx, "short"); err != nil || v != nil {
			t.Errorf("client %d after the TTL: %q %v", i, v, err)
		}
	}
	blob := make([]byte, 3000)
	for i := range 10 {
		if err := stores[i%3].PutMacros(ctx, []store.Macro{{ID: fmt.Sprint("m", i), Data: blob, TTL: time.Minute}}); err != nil {
			t.Fatal(err)
		}
		if i == 7 { // holds m5 m6 m7; touch m5: it becomes recently used and survives
			if v, _ := stores[2].GetMacro(ctx, "m5"); v == nil {
				t.Fatal("m5 evicted too early")
			}
		}
		if n, err := stores[0].MacroBytes(ctx); err != nil || n > 10_000 {
			t.Fatalf("after %d puts the store counts %d bytes (> 10000) %v", i+1, n, err)
		}
	}
	for id, want := range map[string]bool{"m0": false, "m5": true, "m6": false, "m7": false, "m8": true, "m9": true} {
		v, _ := stores[1].GetMacro(ctx, id)
		if (v != nil) != want {
			t.Errorf("%s present=%v, want %v", id, v != nil, want)
		}
	}
	// Nonces: once across clients.
	if fresh, err := stores[0].UseNonce(ctx, "n1", time.Minute); !fresh || err != nil {
		t.Fatalf("first use: %v %v", fresh, err)
	}
	if fresh, err := stores[2].UseNonce(ctx, "n1", time.Minute); fresh || err != nil {
		t.Errorf("replay on another client: %v %v", fresh, err)
	}
	// Rate limit: a burst of 2 at 1/s is shared by all clients.
	lim := store.RateLimit{PerSecond: 1, Burst: 2}
	now := time.Now()
	var waits []time.Duration
	for i := range 3 {
		w, err := stores[i].Take(ctx, "identity:alice", lim, now)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	if waits[0] != 0 || waits[1] != 0 || waits[2] <= 0 || waits[2] > time.Second {
		t.Errorf("waits %v, want 0, 0, then up to 1s", waits)
	}
}

// TestRedisOutage: Redis dies mid-run; requests that need it get a clear
// registry error (server_not_ready, retry later) and the server stays up;
// when Redis returns, everything works again.
func TestRedisOutage(t *testing.T) {
	r := startRedis(t)
	clk := &clock{t: start}
	rs := replicas(t, r, 2, clk)
	m := macros(t, rs[0], aliceToken)["diagnose_causal_chain"]
	invoke := map[string]any{"macro_id": m.MacroID, "args": map[string]any{"request_id": "r42"}}

	r.kill()
	for _, typ := range []protocol.MessageType{protocol.TypeIntentRequest, protocol.TypeInvokeRequest} {
		payload := any(invoke)
		if typ == protocol.TypeIntentRequest {
			payload = diagnose()
		}
		env := send(t, rs[1], aliceToken, typ, payload)
		if code(env) != string(protocol.CodeServerNotReady) || !strings.Contains(message(env), "store is unavailable") {
			t.Errorf("%s while Redis is down: %s", typ, env.Payload)
		}
		if strings.Contains(string(env.Payload), "127.0.0.1") || strings.Contains(string(env.Payload), "redis") {
			t.Errorf("internals leak: %s", env.Payload)
		}
	}
	if st := rs[1].Status(); st != protocol.StatusReady {
		t.Errorf("status %s", st)
	}

	r.start() // an empty Redis: what was stored is gone, the servers recover
	wait := testenv.NewWait(10 * time.Second)
	for {
		env := send(t, rs[1], aliceToken, protocol.TypeIntentRequest, diagnose())
		if env.Type == protocol.TypeIntentResponse {
			break
		}
		if !wait.Next() {
			t.Fatalf("no recovery: %s", env.Payload)
		}
	}
	m = macros(t, rs[1], aliceToken)["diagnose_causal_chain"]
	invoke["macro_id"] = m.MacroID
	if env := send(t, rs[0], aliceToken, protocol.TypeInvokeRequest, invoke); env.Type != protocol.TypeInvokeResponse {
		t.Errorf("invoke after recovery: %s", env.Payload)
	}
}

// TestRateLimitAcrossReplicas: an identity's rate limit holds across
// replicas: the burst spent on one is spent on all.
func TestRateLimitAcrossReplicas(t *testing.T) {
	r := startRedis(t)
	var rs []*manglecp.Server
	for range 2 {
		st, err := redisstore.New(context.Background(), redisstore.Options{URL: r.url(), Key: storeKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		srv, err := manglecp.NewServer(browser.Domain(browser.Config{ReportDir: t.TempDir()}), &manglecp.Options{
			Store: st, RateLimit: 0.5, RateBurst: 2,
			Identities: []manglecp.Identity{{Name: "alice", Token: aliceToken, Permissions: []string{"*"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, srv)
	}
	var got []string
	for i := range 3 {
		got = append(got, code(send(t, rs[i%2], aliceToken, protocol.TypeIntentRequest, diagnose())))
	}
	if got[0] != "ok" || got[1] != "ok" || got[2] != string(protocol.CodeRateLimited) {
		t.Errorf("outcomes %v, want ok ok rate_limited", got)
	}
}
